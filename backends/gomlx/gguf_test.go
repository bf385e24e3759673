package gomlx

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ollama/ollama/fs/ggml"

	"tally/backends/tokenizer"
)

// ggufNameOf is the GGUF name of a Hugging Face tensor name (hfName's
// inverse, for writing test files).
func ggufNameOf(t *testing.T, hf string) string {
	t.Helper()
	for g, h := range ggufTopNames {
		if h == hf {
			return g
		}
	}
	var layer int
	var rest string
	if _, err := fmt.Sscanf(hf, "model.layers.%d.%s", &layer, &rest); err == nil {
		for g, h := range ggufLayerNames {
			if h == rest {
				return fmt.Sprintf("blk.%d.%s", layer, g)
			}
		}
	}
	t.Fatalf("no GGUF name for %s", hf)
	return ""
}

// permuteRope is llama.cpp's converter's permutation of query and key rows
// (convert_hf_to_gguf.py LlamaModel.permute: reshape to
// [heads, 2, d/2, cols], swap the two middle axes), written here from its
// definition to check unpermuteRope against.
func permuteRope(x []float32, heads, cols int) []float32 {
	rows := len(x) / cols
	d := rows / heads
	out := make([]float32, len(x))
	for h := range heads {
		for s := range 2 {
			for i := range d / 2 {
				src := ((h*2+s)*(d/2) + i) * cols // [h][s][i]
				dst := ((h*(d/2)+i)*2 + s) * cols // [h][i][s]
				copy(out[dst:dst+cols], x[src:src+cols])
			}
		}
	}
	return out
}

// tensorBytes is a ggml.Tensor's data.
type tensorBytes []byte

func (b tensorBytes) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(b)
	return int64(n), err
}

// writeGGUF converts a safetensors fixture model into a GGUF file as
// llama.cpp's converter would (F32 or F16 tensors, query and key rows
// permuted for llama), with kv added to the metadata.
func writeGGUF(t *testing.T, dir, path string, f16 bool, extra ggml.KV) {
	t.Helper()
	cfg, err := LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	w, err := OpenWeights(dir)
	if err != nil {
		t.Fatal(err)
	}
	arch := cfg.ModelType
	kv := ggml.KV{
		"general.architecture":                     arch,
		arch + ".block_count":                      uint32(cfg.NumLayers),
		arch + ".embedding_length":                 uint32(cfg.HiddenSize),
		arch + ".feed_forward_length":              uint32(cfg.IntermediateSize),
		arch + ".attention.head_count":             uint32(cfg.NumHeads),
		arch + ".attention.head_count_kv":          uint32(cfg.NumKVHeads),
		arch + ".attention.key_length":             uint32(cfg.HeadDim),
		arch + ".context_length":                   uint32(cfg.MaxPositionEmbeddings),
		arch + ".attention.layer_norm_rms_epsilon": float32(cfg.RMSNormEps),
		arch + ".rope.freq_base":                   float32(cfg.RopeTheta),
	}
	for k, v := range extra {
		kv[k] = v
	}
	var ts []ggml.Tensor
	for name, info := range w.Tensors {
		x, err := w.Read(name, info.Shape...)
		if err != nil {
			t.Fatal(err)
		}
		cols := 1
		if len(info.Shape) == 2 {
			cols = info.Shape[1]
		}
		if arch == "llama" && strings.Contains(name, "q_proj") {
			x = permuteRope(x, cfg.NumHeads, cols)
		}
		if arch == "llama" && strings.Contains(name, "k_proj") {
			x = permuteRope(x, cfg.NumKVHeads, cols)
		}
		var buf bytes.Buffer
		kind := uint32(0)
		if f16 && len(info.Shape) == 2 {
			kind = 1
			for _, v := range x {
				binary.Write(&buf, binary.LittleEndian, float32ToHalf(v))
			}
		} else {
			binary.Write(&buf, binary.LittleEndian, x)
		}
		shape := make([]uint64, len(info.Shape))
		for i, d := range info.Shape {
			shape[i] = uint64(d) // WriteGGUF writes them innermost first
		}
		ts = append(ts, ggml.Tensor{Name: ggufNameOf(t, name), Kind: kind, Shape: shape, WriterTo: tensorBytes(buf.Bytes())})
	}
	if cfg.Rope.Type == "llama3" {
		// llama.cpp's converter writes llama3 scaling as per-dimension
		// divisors of the inverse frequencies (convert_hf_to_gguf.py
		// LlamaModel.generate_extra_tensors), computed here from that
		// definition.
		r := cfg.Rope
		lowWave, highWave := r.OriginalMaxPositionEmbeddings/r.LowFreqFactor, r.OriginalMaxPositionEmbeddings/r.HighFreqFactor
		var buf bytes.Buffer
		for i := range cfg.HeadDim / 2 {
			wave := 2 * math.Pi * math.Pow(cfg.RopeTheta, float64(2*i)/float64(cfg.HeadDim))
			f := 1.0
			switch {
			case wave < highWave:
			case wave > lowWave:
				f = r.Factor
			default:
				smooth := (r.OriginalMaxPositionEmbeddings/wave - r.LowFreqFactor) / (r.HighFreqFactor - r.LowFreqFactor)
				f = 1 / ((1-smooth)/r.Factor + smooth)
			}
			binary.Write(&buf, binary.LittleEndian, float32(f))
		}
		ts = append(ts, ggml.Tensor{Name: "rope_freqs.weight", Kind: 0, Shape: []uint64{uint64(cfg.HeadDim / 2)}, WriterTo: tensorBytes(buf.Bytes())})
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := ggml.WriteGGUF(f, kv, ts); err != nil {
		t.Fatal(err)
	}
}

// float32ToHalf rounds to binary16 (normal range; the fixtures' weights
// are small).
func float32ToHalf(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int((b>>23)&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case exp <= 0:
		return sign
	case exp >= 31:
		return sign | 0x7c00
	}
	h := uint32(exp)<<10 | mant>>13
	if rem := mant & 0x1fff; rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++
	}
	return sign | uint16(h)
}

// TestGGUFFixtures converts the Llama and Qwen2 fixtures to GGUF (F32, and
// F16 for the Llama) and checks that the GGUF models give the logits of the
// safetensors ones: exactly in F32 (so the tensor names, the shapes and the
// query/key row order are right), to F16's precision in F16.
func TestGGUFFixtures(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		model string
		f16   bool
		tol   float64
	}{{"llama-tiny", false, 1e-5}, {"qwen2-tiny", false, 1e-5}, {"llama-tiny", true, 5e-3}, {"llama3-scaled", false, 1e-5}} {
		t.Run(fmt.Sprintf("%s/f16=%v", tc.model, tc.f16), func(t *testing.T) {
			dir := filepath.Join(sharedDir(t), "fixtures", "models", tc.model)
			if tc.model == "llama3-scaled" {
				dir = llama3Scaled(t)
			}
			path := filepath.Join(t.TempDir(), "model.gguf")
			writeGGUF(t, dir, path, tc.f16, nil)
			if !IsGGUF(path) || IsGGUF(dir) {
				t.Fatal("IsGGUF wrong")
			}
			ref, err := Open(ctx, dir, Options{FingerprintCache: "-"})
			if err != nil {
				t.Fatal(err)
			}
			defer ref.Close()
			g, err := Open(ctx, path, Options{FingerprintCache: "-"})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if g.Config().TieWordEmbeddings != ref.Config().TieWordEmbeddings || g.Config().HeadDim != ref.Config().HeadDim {
				t.Errorf("config %+v, want %+v", g.Config(), ref.Config())
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for n := range 3 {
				ids := make([]int, 5+7*n)
				for i := range ids {
					ids[i] = rng.IntN(ref.Config().VocabSize)
				}
				a, err := ref.Logits(ctx, ids)
				if err != nil {
					t.Fatal(err)
				}
				b, err := g.Logits(ctx, ids)
				if err != nil {
					t.Fatal(err)
				}
				var scale, diff float64
				for i := range a {
					scale, diff = max(scale, math.Abs(float64(a[i]))), max(diff, math.Abs(float64(a[i]-b[i])))
				}
				if diff > tc.tol*scale {
					t.Errorf("%d tokens: logits differ by %.3g (largest %.3g)", len(ids), diff, scale)
				}
			}
			fp1, _ := g.Fingerprint(ctx)
			fp2, _ := ref.Fingerprint(ctx)
			if fp1 == fp2 || !strings.HasPrefix(fp1, cpuArith("float32")+":sha256:") {
				t.Errorf("fingerprints %q, %q", fp1, fp2)
			}
		})
	}
}

// llama3Scaled is the Llama fixture with Llama 3.1's RoPE scaling, its
// bands placed inside the tiny model's frequencies.
func llama3Scaled(t *testing.T) string {
	t.Helper()
	src := filepath.Join(sharedDir(t), "fixtures", "models", "llama-tiny")
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["rope_parameters"] = map[string]any{"rope_theta": 10000.0, "rope_type": "llama3", "factor": 8.0,
		"low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 256}
	data, _ = json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := os.ReadFile(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), st, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig(dir)
	if err != nil || c.Rope.Type != "llama3" {
		t.Fatalf("scaled config %+v, %v", c.Rope, err)
	}
	return dir
}

// TestGGUFTokenizer: a byte-level BPE written into GGUF metadata (as
// llama.cpp's and Ollama's converters write it) encodes and decodes as the
// tokenizer.json it came from; a tokenizer.json beside the file wins.
func TestGGUFTokenizer(t *testing.T) {
	corpus := strings.Repeat("The river rose 17 feet on Monday; forty-two boats were moored. Ünïcode too!\n", 20)
	for _, split := range []tokenizer.Split{tokenizer.SplitQwen2, tokenizer.SplitLlama3, tokenizer.SplitGPT2} {
		t.Run(string(split), func(t *testing.T) {
			tj, err := tokenizer.TrainByteLevelSplit(corpus, 300, split)
			if err != nil {
				t.Fatal(err)
			}
			var parsed struct {
				AddedTokens []struct {
					ID      int    `json:"id"`
					Content string `json:"content"`
				} `json:"added_tokens"`
				Model struct {
					Vocab  map[string]int `json:"vocab"`
					Merges [][2]string    `json:"merges"`
				} `json:"model"`
			}
			if err := json.Unmarshal(tj, &parsed); err != nil {
				t.Fatal(err)
			}
			n := len(parsed.Model.Vocab) + len(parsed.AddedTokens)
			tokens := make([]string, n)
			types := make([]int32, n)
			for s, id := range parsed.Model.Vocab {
				tokens[id], types[id] = s, 1
			}
			for _, a := range parsed.AddedTokens {
				tokens[a.ID], types[a.ID] = a.Content, tokenizer.TokenControl
			}
			var merges []string
			for _, m := range parsed.Model.Merges {
				merges = append(merges, m[0]+" "+m[1])
			}
			pre := map[tokenizer.Split]string{tokenizer.SplitQwen2: "qwen2", tokenizer.SplitLlama3: "llama-bpe", tokenizer.SplitGPT2: "default"}[split]
			kv := ggml.KV{"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": pre, "tokenizer.ggml.tokens": tokens,
				"tokenizer.ggml.token_type": types, "tokenizer.ggml.merges": merges,
				"tokenizer.ggml.bos_token_id": uint32(n - 1), "tokenizer.ggml.add_bos_token": false,
				"tokenizer.ggml.eos_token_id": uint32(n - 1), "tokenizer.chat_template": "{{ bos_token }}{{ messages[0].content }}"}
			path := filepath.Join(t.TempDir(), "m.gguf")
			// The tokenizer must fit the model's 512-token vocabulary.
			writeGGUF(t, filepath.Join(sharedDir(t), "fixtures", "models", "llama-tiny"), path, false, kv)
			g, err := Open(context.Background(), path, Options{FingerprintCache: "-"})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			if src, bos, eos := g.ChatTemplate(); src != "{{ bos_token }}{{ messages[0].content }}" || bos != "<|endoftext|>" || eos != bos {
				t.Errorf("chat template %q, bos %q, eos %q", src, bos, eos)
			}
			if eos := g.Config().EOSTokenIDs; fmt.Sprint(eos) != fmt.Sprint([]int{n - 1}) {
				t.Errorf("EOS ids %v, want [%d]", eos, n-1)
			}
			want, err := tokenizer.FromJSON(tj)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{"The river rose 1234 feet.", "forty-two  boats\n\nÜnïcode<|endoftext|>x", ""} {
				got, err := g.Tokenizer().Encode(s, true)
				if err != nil {
					t.Fatal(err)
				}
				w, err := want.Encode(s, true)
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(got) != fmt.Sprint(w) {
					t.Errorf("%q: GGUF tokenizer %v, tokenizer.json %v", s, got, w)
				}
				if txt, err := g.Tokenizer().Decode(got, false); err != nil || txt != s {
					t.Errorf("%q: decodes to %q, %v", s, txt, err)
				}
			}
		})
	}
}

// TestGGUFErrors: what tally cannot run is refused with a line naming it.
func TestGGUFErrors(t *testing.T) {
	dir := filepath.Join(sharedDir(t), "fixtures", "models", "llama-tiny")
	for _, tc := range []struct {
		extra ggml.KV
		want  string
	}{
		{ggml.KV{"general.architecture": "gemma3"}, `GGUF architecture "gemma3" is not supported`},
		{ggml.KV{"llama.rope.scaling.type": "yarn"}, `RoPE scaling "yarn" is not supported`},
		{ggml.KV{"tokenizer.ggml.model": "bert", "tokenizer.ggml.tokens": []string{"a"}}, "put the model's tokenizer.json beside the GGUF file"},
		{ggml.KV{"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": []string{"a", "b"}, "tokenizer.ggml.scores": []float32{0}}, "2 pieces with 1 scores"},
	} {
		path := filepath.Join(t.TempDir(), "m.gguf")
		writeGGUF(t, dir, path, false, tc.extra)
		_, err := Open(context.Background(), path, Options{FingerprintCache: "-"})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.extra, err, tc.want)
		}
	}
}

// TestUnpermuteRope: unpermuteRope undoes llama.cpp's permutation.
func TestUnpermuteRope(t *testing.T) {
	for _, tc := range []struct{ heads, d, cols int }{{1, 2, 1}, {4, 16, 64}, {2, 64, 3}, {8, 128, 1}} {
		x := make([]float32, tc.heads*tc.d*tc.cols)
		for i := range x {
			x[i] = float32(i)
		}
		got, err := unpermuteRope(permuteRope(x, tc.heads, tc.cols), tc.heads, tc.cols)
		if err != nil {
			t.Fatal(err)
		}
		for i := range x {
			if got[i] != x[i] {
				t.Fatalf("%+v: element %d is %v, want %v", tc, i, got[i], x[i])
			}
		}
	}
	if _, err := unpermuteRope(make([]float32, 12), 4, 1); err == nil {
		t.Error("odd head width accepted")
	}
}

// TestDequantizeGolden guards the block decoders, checked against
// llama.cpp's quantizer on real files by the parity package's TestGGUF
// (run where an Ollama server is), from changing: a checksum of each
// format's values over pseudo-random blocks.
func TestDequantizeGolden(t *testing.T) {
	want := map[string]string{"Q4_0": "b9ce1651a2fbe9af", "Q4_K": "dae45633abb2b4a0", "Q5_K": "d516f74f75f5d98b",
		"Q6_K": "17d6759e29b5452e", "Q8_0": "4e70f37a56807cdc"}
	got := map[string]string{}
	for kind, typ := range ggmlTypes {
		if typ.values == 1 {
			continue
		}
		rng := rand.New(rand.NewPCG(uint64(kind), 99))
		data := make([]byte, 4*typ.bytes)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		// Keep the binary16 scales finite and small.
		for b := range 4 {
			blk := data[b*typ.bytes : (b+1)*typ.bytes]
			scales := []int{0}
			switch typ.name {
			case "Q4_K", "Q5_K":
				scales = []int{0, 2}
			case "Q6_K":
				scales = []int{208}
			}
			for _, o := range scales {
				binary.LittleEndian.PutUint16(blk[o:], float32ToHalf(float32(rng.Float64()*0.01)))
			}
		}
		out, err := typ.dequantize(data, 4*typ.values)
		if err != nil {
			t.Fatal(err)
		}
		h := fnv.New64a()
		for _, v := range out {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("%s: non-finite value", typ.name)
			}
			binary.Write(h, binary.LittleEndian, v)
		}
		got[typ.name] = fmt.Sprintf("%016x", h.Sum64())
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("decoded block checksums %v, want %v", got, want)
	}
}

// FuzzReadGGUF: any file is read or refused with an error, never a panic;
// what is read has tensors inside the file.
func FuzzReadGGUF(f *testing.F) {
	dir := filepath.Join(sharedDir(f), "fixtures", "models", "llama-tiny")
	path := filepath.Join(f.TempDir(), "seed.gguf")
	writeGGUF(&testing.T{}, dir, path, true, nil)
	seed, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed[:min(len(seed), 4096)])
	f.Add([]byte("GGUF\x03\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f.gguf")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, w, err := ReadGGUF(p)
		if err != nil {
			return
		}
		for name, info := range w.Tensors {
			if info.Offset < 0 || info.Length < 0 {
				t.Fatalf("tensor %s at %d+%d", name, info.Offset, info.Length)
			}
		}
	})
}

// TestGGUFSentencePiece: a SentencePiece vocabulary in GGUF metadata
// (pieces, scores, types, BOS, add_space_prefix; the Mistral 7B pieces
// here) gives the tokenizer that backends/tokenizer renders from the same
// parts (checked against Hugging Face there).
func TestGGUFSentencePiece(t *testing.T) {
	f, err := os.Open(filepath.Join(sharedDir(t), "fixtures", "tokenizers", "mistral7b", "tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var tj struct {
		Model struct {
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
	}
	if err := json.NewDecoder(zr).Decode(&tj); err != nil {
		t.Fatal(err)
	}
	n := len(tj.Model.Vocab)
	v := tokenizer.SentencePieceVocab{Tokens: make([]string, n), Scores: make([]float32, n), Types: make([]int, n), AddSpacePrefix: true, BOS: 1, AddBOS: true}
	types := make([]int32, n)
	for s, id := range tj.Model.Vocab {
		v.Tokens[id], v.Scores[id], v.Types[id], types[id] = s, float32(-id), 1, 1
	}
	v.Types[0], types[0] = tokenizer.TokenUnknown, tokenizer.TokenUnknown
	for _, id := range []int{1, 2} {
		v.Types[id], types[id] = tokenizer.TokenControl, tokenizer.TokenControl
	}
	kv := ggml.KV{"tokenizer.ggml.model": "llama", "tokenizer.ggml.tokens": v.Tokens, "tokenizer.ggml.scores": v.Scores,
		"tokenizer.ggml.token_type": types, "tokenizer.ggml.bos_token_id": uint32(1), "tokenizer.ggml.eos_token_id": uint32(2)}
	path := filepath.Join(t.TempDir(), "m.gguf")
	writeGGUF(t, filepath.Join(sharedDir(t), "fixtures", "models", "llama-tiny"), path, false, kv)
	g, err := Open(context.Background(), path, Options{FingerprintCache: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	js, err := v.JSON()
	if err != nil {
		t.Fatal(err)
	}
	want, err := tokenizer.FromJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Hello world", "  two spaces\nand a line</s>", "ünïcode 😀 bytes"} {
		got, err := g.Tokenizer().Encode(s, true)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := want.Encode(s, true)
		if fmt.Sprint(got) != fmt.Sprint(w) || len(got) == 0 || got[0] != 1 {
			t.Errorf("%q: %v, want %v (BOS first)", s, got, w)
		}
	}
}

// TestOllamaModelBlob: an Ollama manifest names its GGUF blob; other files
// are not manifests.
func TestOllamaModelBlob(t *testing.T) {
	root := t.TempDir()
	man := filepath.Join(root, "manifests", "registry.ollama.ai", "library", "tiny", "latest")
	if err := os.MkdirAll(filepath.Dir(man), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(man, []byte(`{"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.params","digest":"sha256:aa"},`+
		`{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:0c91"}]}`), 0o644)
	blob, ok, err := OllamaModelBlob(man)
	if err != nil || !ok || blob != filepath.Join(root, "blobs", "sha256-0c91") {
		t.Errorf("OllamaModelBlob = %q, %v, %v", blob, ok, err)
	}
	other := filepath.Join(root, "config.json")
	os.WriteFile(other, []byte(`{"model_type":"llama"}`), 0o644)
	for _, p := range []string{other, root, filepath.Join(root, "missing")} {
		if _, ok, err := OllamaModelBlob(p); ok || err != nil {
			t.Errorf("%s taken for a manifest: %v", p, err)
		}
	}
	bad := filepath.Join(root, "manifests", "x")
	os.WriteFile(bad, []byte(`{"schemaVersion":2,"layers":[{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:../../etc"}]}`), 0o644)
	if _, ok, err := OllamaModelBlob(bad); !ok || err == nil {
		t.Errorf("a digest with a path in it: %v, %v", ok, err)
	}
}

// BenchmarkDequantize widens 1M values of each block format (values/s in
// the ns/op of one call); a 7B model holds about 7,000 such calls.
func BenchmarkDequantize(b *testing.B) {
	for _, name := range []string{"Q8_0", "Q4_0", "Q4_K", "Q5_K", "Q6_K"} {
		typ, _ := ggmlTypeNamed(name)
		const n = 1 << 20
		data := make([]byte, n/typ.values*typ.bytes)
		rng := rand.New(rand.NewPCG(1, 1))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(4 * n)
			for range b.N {
				if _, err := typ.dequantize(data, n); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
