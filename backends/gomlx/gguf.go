package gomlx

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/ollama/ollama/fs/ggml"

	"tally/backends/tokenizer"
)

// A GGUF file (llama.cpp's format, the one Ollama stores its models in) is
// read with github.com/ollama/ollama/fs/ggml's header decoder: its
// metadata becomes the Config a config.json would give, its tensors are
// indexed under their Hugging Face names and widened to float32 as they
// are loaded (F32, F16, BF16 and the block formats Q4_0, Q8_0, Q4_K, Q5_K,
// Q6_K; ggmlquant.go), Llama 3.1's RoPE factors (rope_freqs) divide the inverse
// frequencies, and the query and key projections of the llama
// architecture are put back in Hugging Face's row order (llama.cpp's
// converter interleaves each head's two rotary halves for its own RoPE).
// The tokenizer is the tokenizer.json beside the file when there is one,
// else the one the file's metadata describes: a byte-level BPE
// (tokenizer.ggml.model "gpt2": vocabulary and merges) or a SentencePiece
// BPE ("llama": pieces and scores), rendered as the tokenizer.json Hugging
// Face would have (backends/tokenizer's vocabularies).

// IsGGUF reports whether path is a regular file that starts with the GGUF
// magic (Ollama's blobs have no extension).
func IsGGUF(path string) bool {
	f, err := openRegular(path) // a FIFO is refused, never waited on
	if err != nil {
		return false
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return false
	}
	var magic [4]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && string(magic[:]) == "GGUF"
}

// OllamaModelBlob returns the GGUF file an Ollama model manifest names
// (a file under OLLAMA_MODELS/manifests/…, e.g.
// ~/.ollama/models/manifests/registry.ollama.ai/library/qwen2.5/0.5b): its
// model layer in the blobs folder beside manifests. ok is false when path
// is not such a manifest.
func OllamaModelBlob(path string) (blob string, ok bool, err error) {
	st, err := os.Stat(path)
	if err != nil || !st.Mode().IsRegular() || st.Size() > 1<<20 {
		return "", false, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false, nil
	}
	var m struct {
		SchemaVersion int
		Layers        []struct{ MediaType, Digest string }
	}
	if json.Unmarshal(data, &m) != nil || m.SchemaVersion == 0 || len(m.Layers) == 0 {
		return "", false, nil
	}
	root := filepath.Dir(path)
	for filepath.Base(root) != "manifests" {
		up := filepath.Dir(root)
		if up == root {
			return "", true, fmt.Errorf("%s: an Ollama manifest outside a manifests folder", path)
		}
		root = up
	}
	for _, l := range m.Layers {
		if l.MediaType == "application/vnd.ollama.image.model" {
			hexDigest, found := strings.CutPrefix(l.Digest, "sha256:")
			if !found || strings.ContainsAny(hexDigest, `/\.`) {
				return "", true, fmt.Errorf("%s: model layer digest %q", path, l.Digest)
			}
			return filepath.Join(filepath.Dir(root), "blobs", "sha256-"+hexDigest), true, nil
		}
	}
	return "", true, fmt.Errorf("%s: an Ollama manifest with no model layer", path)
}

// openGGUF loads the model of one GGUF file.
func openGGUF(ctx context.Context, path string, opts Options) (*Model, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	kv, cfg, w, err := readGGUF(f, path)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	tokPath := filepath.Join(filepath.Dir(path), "tokenizer.json")
	_, statErr := os.Lstat(tokPath)
	m, err := assemble(ctx, cfg, w, opts, func() (StreamTokenizer, error) {
		if statErr == nil {
			return loadTokenizer(ModelFolder(filepath.Dir(path), opts.FollowSymlinks), tokPath)
		}
		return ggufTokenizer(path, kv)
	})
	if err != nil {
		return nil, err
	}
	m.dir = path
	m.fpFiles = []string{path}
	if statErr == nil {
		m.fpFiles = append(m.fpFiles, tokPath)
	}
	if t, ok := kv["tokenizer.chat_template"].(string); ok {
		m.chat.source, m.chat.bos, m.chat.eos = t, -1, -1
		if id, ok := kvNumber(kv, "tokenizer.ggml.bos_token_id"); ok {
			m.chat.bos = int(id)
		}
		if id, ok := kvNumber(kv, "tokenizer.ggml.eos_token_id"); ok {
			m.chat.eos = int(id)
		}
	}
	return m, nil
}

// ReadGGUF reads the architecture of a GGUF file and indexes its tensors
// under their Hugging Face names; WeightIndex.Read widens them to float32
// (query and key rows in Hugging Face's order).
func ReadGGUF(path string) (Config, *WeightIndex, error) {
	f, err := openRegular(path)
	if err != nil {
		return Config{}, nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	_, cfg, w, err := readGGUF(f, path)
	return cfg, w, err
}

// readGGUF decodes the header of the GGUF file f (at path). A malformed
// header that makes the decoder panic (a length past any limit) is an
// error like any other.
func readGGUF(f *os.File, path string) (kv ggml.KV, cfg Config, w *WeightIndex, err error) {
	defer func() {
		if r := recover(); r != nil {
			kv, cfg, w, err = nil, Config{}, nil, fmt.Errorf("read GGUF %s: malformed header: %v", path, r)
		}
	}()
	if err := checkGGUFLengths(f); err != nil {
		return nil, Config{}, nil, fmt.Errorf("read GGUF %s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, Config{}, nil, fmt.Errorf("read GGUF %s: %w", path, err)
	}
	g, _, err := ggml.Decode(f, -1)
	if err != nil {
		return nil, Config{}, nil, fmt.Errorf("read GGUF %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		return nil, Config{}, nil, fmt.Errorf("read GGUF %s: %w", path, err)
	}
	if err := checkGGUFTensors(g.KV(), g.Tensors(), st.Size()); err != nil {
		return nil, Config{}, nil, fmt.Errorf("read GGUF %s: %w", path, err)
	}
	cfg, w, err = ggufModel(path, g.KV(), g.Tensors())
	return g.KV(), cfg, w, err
}

// kvNumber reads a numeric metadata value of any width.
func kvNumber(kv ggml.KV, key string) (float64, bool) {
	switch v := kv[key].(type) {
	case uint8:
		return float64(v), true
	case int8:
		return float64(v), true
	case uint16:
		return float64(v), true
	case int16:
		return float64(v), true
	case uint32:
		return float64(v), true
	case int32:
		return float64(v), true
	case uint64:
		return float64(v), true
	case int64:
		return float64(v), true
	case float32:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

// ggufArchs maps the GGUF architectures tally runs to config.json's
// model_type, and says whether llama.cpp's converter permuted the query
// and key rows (architectures whose llama.cpp RoPE rotates adjacent pairs).
var ggufArchs = map[string]struct {
	modelType string
	permuted  bool
}{
	"llama": {"llama", true},
	"qwen2": {"qwen2", false},
}

// ggufLayerNames maps a block tensor's GGUF name (after "blk.N.") to its
// Hugging Face name (after "model.layers.N.").
var ggufLayerNames = map[string]string{
	"attn_norm.weight":   "input_layernorm.weight",
	"attn_q.weight":      "self_attn.q_proj.weight",
	"attn_k.weight":      "self_attn.k_proj.weight",
	"attn_v.weight":      "self_attn.v_proj.weight",
	"attn_q.bias":        "self_attn.q_proj.bias",
	"attn_k.bias":        "self_attn.k_proj.bias",
	"attn_v.bias":        "self_attn.v_proj.bias",
	"attn_output.weight": "self_attn.o_proj.weight",
	"attn_output.bias":   "self_attn.o_proj.bias",
	"ffn_norm.weight":    "post_attention_layernorm.weight",
	"ffn_gate.weight":    "mlp.gate_proj.weight",
	"ffn_up.weight":      "mlp.up_proj.weight",
	"ffn_down.weight":    "mlp.down_proj.weight",
	"ffn_gate.bias":      "mlp.gate_proj.bias",
	"ffn_up.bias":        "mlp.up_proj.bias",
	"ffn_down.bias":      "mlp.down_proj.bias",
}

// ggufTopNames maps the GGUF names of the tensors outside the blocks.
var ggufTopNames = map[string]string{
	"token_embd.weight":  "model.embed_tokens.weight",
	"output_norm.weight": "model.norm.weight",
	"output.weight":      "lm_head.weight",
}

// hfName is the Hugging Face name of a GGUF tensor, or "" for one tally
// does not know.
func hfName(name string) string {
	if n, ok := ggufTopNames[name]; ok {
		return n
	}
	var layer int
	var rest string
	if _, err := fmt.Sscanf(name, "blk.%d.%s", &layer, &rest); err != nil || layer < 0 {
		return ""
	}
	if n, ok := ggufLayerNames[rest]; ok && name == fmt.Sprintf("blk.%d.%s", layer, rest) {
		return fmt.Sprintf("model.layers.%d.%s", layer, n)
	}
	return ""
}

// ggufModel reads the architecture from the metadata (as the config.json
// it stands for, so that the same checks apply) and indexes the tensors.
func ggufModel(path string, kv ggml.KV, ts ggml.Tensors) (Config, *WeightIndex, error) {
	arch, _ := kv["general.architecture"].(string)
	a, ok := ggufArchs[arch]
	if !ok {
		return Config{}, nil, fmt.Errorf("%s: GGUF architecture %q is not supported (want llama or qwen2)", path, arch)
	}
	byName := map[string]*ggml.Tensor{}
	for _, t := range ts.Items() {
		byName[t.Name] = t
	}
	num := func(key string) (float64, bool) { return kvNumber(kv, arch+"."+key) }
	raw := map[string]any{"model_type": a.modelType, "hidden_act": "silu"}
	for _, f := range []struct {
		key, field string
		required   bool
	}{
		{"embedding_length", "hidden_size", true},
		{"feed_forward_length", "intermediate_size", true},
		{"block_count", "num_hidden_layers", true},
		{"attention.head_count", "num_attention_heads", true},
		{"attention.head_count_kv", "num_key_value_heads", false},
		{"attention.key_length", "head_dim", false},
		{"context_length", "max_position_embeddings", false},
		{"attention.layer_norm_rms_epsilon", "rms_norm_eps", false},
		{"rope.freq_base", "rope_theta", false},
	} {
		v, ok := num(f.key)
		switch {
		case ok:
			raw[f.field] = v
		case kv[arch+"."+f.key] != nil:
			return Config{}, nil, fmt.Errorf("%s: metadata %s.%s is not a number (per-layer values are not supported)", path, arch, f.key)
		case f.required:
			return Config{}, nil, fmt.Errorf("%s: metadata %s.%s is missing", path, arch, f.key)
		}
	}
	switch typ, _ := kv[arch+".rope.scaling.type"].(string); typ {
	case "", "none":
	case "linear":
		factor, _ := num("rope.scaling.factor")
		raw["rope_scaling"] = map[string]any{"rope_type": "linear", "factor": factor}
	default:
		return Config{}, nil, fmt.Errorf("%s: RoPE scaling %q is not supported", path, typ)
	}
	emb, ok := byName["token_embd.weight"]
	if !ok || len(emb.Shape) != 2 {
		return Config{}, nil, fmt.Errorf("%s: no 2-D token_embd.weight", path)
	}
	raw["vocab_size"] = emb.Shape[1]
	_, hasOutput := byName["output.weight"]
	raw["tie_word_embeddings"] = !hasOutput
	_, qBias := byName["blk.0.attn_q.bias"]
	raw["attention_bias"] = qBias
	_, gateBias := byName["blk.0.ffn_gate.bias"]
	raw["mlp_bias"] = gateBias
	var eos []int
	for _, k := range []string{"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"} {
		if v, ok := kvNumber(kv, k); ok && !slices.Contains(eos, int(v)) {
			eos = append(eos, int(v))
		}
	}
	raw["eos_token_id"] = eos
	if v, ok := kvNumber(kv, "tokenizer.ggml.bos_token_id"); ok {
		raw["bos_token_id"] = int(v)
	}
	data, _ := json.Marshal(raw)
	cfg, err := ParseConfig(data, path+" (GGUF metadata)")
	if err != nil {
		return Config{}, nil, err
	}

	w := &WeightIndex{Tensors: map[string]TensorInfo{}, Files: []string{path}}
	if t, ok := byName["rope_freqs.weight"]; ok {
		// Per-dimension divisors of the inverse frequencies (llama.cpp's
		// converter writes Llama 3.1's scaling so).
		f, err := readGGUFFloats(path, ts.Offset, t, cfg.HeadDim/2)
		if err != nil {
			return Config{}, nil, err
		}
		cfg.Rope = RopeScaling{Type: "factors", Factors: f}
		delete(byName, "rope_freqs.weight")
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := byName[n]
		hf := hfName(n)
		if hf == "" {
			return Config{}, nil, fmt.Errorf("%s: tensor %s is not one of the %s weights tally knows", path, n, arch)
		}
		typ, ok := ggmlTypes[t.Kind]
		if !ok {
			return Config{}, nil, fmt.Errorf("%s: tensor %s: type %s is not supported (want F32, F16, BF16, Q4_0, Q8_0, Q4_K, Q5_K or Q6_K)", path, n, t.Type())
		}
		shape := make([]int, len(t.Shape))
		for i, d := range t.Shape {
			shape[len(shape)-1-i] = int(d) // ggml lists the innermost dimension first
		}
		info := TensorInfo{Name: hf, DType: typ.name, Shape: shape, File: path,
			Offset: int64(ts.Offset + t.Offset), Length: int64(t.Size())}
		if a.permuted {
			switch {
			case strings.Contains(n, ".attn_q."):
				info.ropeHeads = cfg.NumHeads
			case strings.Contains(n, ".attn_k."):
				info.ropeHeads = cfg.NumKVHeads
			}
		}
		w.Tensors[hf] = info
	}
	return cfg, w, nil
}

// readGGUFFloats reads a 1-D tensor of n values as float32.
func readGGUFFloats(path string, dataStart uint64, t *ggml.Tensor, n int) ([]float32, error) {
	typ, ok := ggmlTypes[t.Kind]
	if !ok || len(t.Shape) != 1 || int(t.Shape[0]) != n {
		return nil, fmt.Errorf("%s: tensor %s: %s %v, want %d values", path, t.Name, t.Type(), t.Shape, n)
	}
	x, err := readTensorF32(TensorInfo{Name: t.Name, DType: typ.name, Shape: []int{n}, File: path,
		Offset: int64(dataStart + t.Offset), Length: int64(t.Size())}, nil)
	if err != nil {
		return nil, err
	}
	for i, v := range x {
		if !(v > 0) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("%s: tensor %s: factor %d is %v", path, t.Name, i, v)
		}
	}
	return x, nil
}

// unpermuteRope puts the rows of a query or key projection (or bias)
// converted by llama.cpp back in Hugging Face's order: within each of
// heads heads, GGUF row 2i+s holds Hugging Face row s·(d/2)+i (s is the
// rotary half, d the head width). cols is the row length.
func unpermuteRope(x []float32, heads, cols int) ([]float32, error) {
	rows := len(x) / cols
	if heads <= 0 || rows%heads != 0 || (rows/heads)%2 != 0 {
		return nil, fmt.Errorf("%d rows do not split into %d heads of even width", rows, heads)
	}
	d := rows / heads
	out := make([]float32, len(x))
	for h := range heads {
		for i := range d / 2 {
			for s := range 2 {
				src := (h*d + 2*i + s) * cols
				dst := (h*d + s*d/2 + i) * cols
				copy(out[dst:dst+cols], x[src:src+cols])
			}
		}
	}
	return out, nil
}

// errNoGGUFTokenizer is ggufTokenizer's answer for vocabularies it cannot
// rebuild.
var errNoGGUFTokenizer = errors.New("put the model's tokenizer.json beside the GGUF file")

// ggufTokenizer rebuilds the tokenizer of a GGUF file from its metadata
// (none when the metadata has none): a byte-level BPE (tokenizer.ggml.model "gpt2") with the split regex its
// pre-tokenizer name (tokenizer.ggml.pre) stands for.
func ggufTokenizer(path string, kv ggml.KV) (StreamTokenizer, error) {
	if kv["tokenizer.ggml.model"] == nil {
		return nil, nil // no tokenizer (ids in, ids out)
	}
	model, _ := kv["tokenizer.ggml.model"].(string)
	if model == "llama" {
		return ggufSentencePiece(path, kv)
	}
	if model != "gpt2" {
		return nil, fmt.Errorf("%s: tokenizer model %q cannot be rebuilt from GGUF metadata (byte-level BPE \"gpt2\" and SentencePiece \"llama\" can): %w", path, model, errNoGGUFTokenizer)
	}
	pre, _ := kv["tokenizer.ggml.pre"].(string)
	pattern, ok := tokenizer.PatternFor(pre)
	if !ok {
		return nil, fmt.Errorf("%s: pre-tokenizer %q is not known: %w", path, pre, errNoGGUFTokenizer)
	}
	v := tokenizer.ByteLevelVocab{Pattern: pattern, NFC: pre == "qwen2", IgnoreMerges: pre == "llama-bpe", BOS: -1}
	if err := kvArrays(path, kv, map[string]any{"tokenizer.ggml.tokens": &v.Tokens, "tokenizer.ggml.token_type": &v.Types,
		"tokenizer.ggml.merges": &v.Merges}); err != nil {
		return nil, err
	}
	if len(v.Tokens) == 0 || len(v.Merges) == 0 {
		return nil, fmt.Errorf("%s: no tokenizer.ggml.tokens or merges: %w", path, errNoGGUFTokenizer)
	}
	if id, ok := kvNumber(kv, "tokenizer.ggml.bos_token_id"); ok {
		v.BOS = int(id)
		v.AddBOS, _ = kv["tokenizer.ggml.add_bos_token"].(bool)
	}
	return tokenizerFromJSON(path, v.JSON)
}

// ggufSentencePiece rebuilds a SentencePiece BPE tokenizer
// (tokenizer.ggml.model "llama") from its pieces, scores and types.
func ggufSentencePiece(path string, kv ggml.KV) (StreamTokenizer, error) {
	v := tokenizer.SentencePieceVocab{AddSpacePrefix: true, BOS: -1}
	if err := kvArrays(path, kv, map[string]any{"tokenizer.ggml.tokens": &v.Tokens, "tokenizer.ggml.scores": &v.Scores,
		"tokenizer.ggml.token_type": &v.Types}); err != nil {
		return nil, err
	}
	if len(v.Tokens) == 0 || len(v.Scores) != len(v.Tokens) {
		return nil, fmt.Errorf("%s: %d pieces with %d scores: %w", path, len(v.Tokens), len(v.Scores), errNoGGUFTokenizer)
	}
	if b, ok := kv["tokenizer.ggml.add_space_prefix"].(bool); ok {
		v.AddSpacePrefix = b
	}
	if id, ok := kvNumber(kv, "tokenizer.ggml.bos_token_id"); ok {
		v.BOS, v.AddBOS = int(id), true // llama.cpp adds BOS unless told not to
		if b, ok := kv["tokenizer.ggml.add_bos_token"].(bool); ok {
			v.AddBOS = b
		}
	}
	return tokenizerFromJSON(path, v.JSON)
}

// kvArrays decodes metadata arrays into the given slices (absent keys
// leave them empty).
func kvArrays(path string, kv ggml.KV, dst map[string]any) error {
	for key, d := range dst {
		if kv[key] == nil {
			continue
		}
		raw, err := json.Marshal(kv[key])
		if err == nil {
			err = json.Unmarshal(raw, d)
		}
		if err != nil {
			return fmt.Errorf("%s: metadata %s: %w", path, key, err)
		}
	}
	return nil
}

// tokenizerFromJSON loads the tokenizer.json that render makes.
func tokenizerFromJSON(path string, render func() ([]byte, error)) (StreamTokenizer, error) {
	data, err := render()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	t, err := tokenizer.FromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: tokenizer from GGUF metadata: %w", path, err)
	}
	return WrapTokenizer(t), nil
}

// checkGGUFLengths walks the header of a GGUF file (version 2 or 3,
// little-endian) and checks every length it states against the bytes
// left in the file, so that a corrupt or truncated header is refused before
// the decoder allocates what a bad length asks for.
func checkGGUFLengths(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	r := &countingReader{r: bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 64<<10)}
	var head struct {
		Magic   [4]byte
		Version uint32
		Tensors uint64
		KVs     uint64
	}
	if err := binary.Read(r, binary.LittleEndian, &head); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if head.Version < 2 || head.Version > 3 {
		return fmt.Errorf("GGUF version %d (want 2 or 3)", head.Version)
	}
	left := func() int64 { return size - r.n }
	u64 := func() (uint64, error) {
		var v uint64
		err := binary.Read(r, binary.LittleEndian, &v)
		return v, err
	}
	u32 := func() (uint32, error) {
		var v uint32
		err := binary.Read(r, binary.LittleEndian, &v)
		return v, err
	}
	str := func(what string) error {
		n, err := u64()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		if n > uint64(left()) {
			return fmt.Errorf("%s: length %d past the end of the file", what, n)
		}
		_, err = r.Discard(int(n))
		return err
	}
	scalar := map[uint32]int64{0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
	const typString, typArray = 8, 9
	if head.KVs > uint64(left()) || head.Tensors > uint64(left()) {
		return fmt.Errorf("%d metadata entries and %d tensors in a %d-byte file", head.KVs, head.Tensors, size)
	}
	for i := range head.KVs {
		if err := str(fmt.Sprintf("metadata key %d", i)); err != nil {
			return err
		}
		t, err := u32()
		if err != nil {
			return err
		}
		switch {
		case t == typString:
			err = str(fmt.Sprintf("metadata value %d", i))
		case t == typArray:
			var et uint32
			var n uint64
			if et, err = u32(); err == nil {
				n, err = u64()
			}
			if err != nil {
				return err
			}
			if n > uint64(left()) {
				return fmt.Errorf("metadata array %d: %d elements past the end of the file", i, n)
			}
			if es, ok := scalar[et]; ok {
				if n*uint64(es) > uint64(left()) {
					return fmt.Errorf("metadata array %d: %d elements past the end of the file", i, n)
				}
				_, err = r.Discard(int(n) * int(es))
			} else if et == typString {
				for j := range n {
					if err = str(fmt.Sprintf("metadata array %d element %d", i, j)); err != nil {
						break
					}
				}
			} else {
				return fmt.Errorf("metadata array %d: element type %d", i, et)
			}
		default:
			es, ok := scalar[t]
			if !ok {
				return fmt.Errorf("metadata value %d: type %d", i, t)
			}
			_, err = r.Discard(int(es))
		}
		if err != nil {
			return err
		}
	}
	for i := range head.Tensors {
		if err := str(fmt.Sprintf("tensor name %d", i)); err != nil {
			return err
		}
		dims, err := u32()
		if err != nil {
			return err
		}
		if dims > 4 {
			return fmt.Errorf("tensor %d: %d dimensions", i, dims)
		}
		if _, err := r.Discard(int(dims)*8 + 4 + 8); err != nil {
			return fmt.Errorf("tensor %d: %w", i, err)
		}
	}
	return nil
}

// checkGGUFTensors checks the layout of a GGUF file's tensor data as
// llama.cpp's gguf_init does, before any tensor is read: general.alignment
// (when given) a uint32 power of two; each tensor of a type tally reads,
// its size computed without overflow, its offset a multiple of the
// alignment, its data inside the file; no two tensors of one name, and
// none overlapping another. (An offset of 2^64-1, an unaligned or
// overlapping tensor, a duplicated one or an alignment of 3 loaded
// garbage weights and ran with exit 0.)
func checkGGUFTensors(kv ggml.KV, ts ggml.Tensors, fileSize int64) error {
	align := uint64(32)
	if v, ok := kv["general.alignment"]; ok {
		a, isU32 := v.(uint32)
		if !isU32 {
			return fmt.Errorf("general.alignment is a %T, want a uint32", v)
		}
		if a == 0 || a&(a-1) != 0 {
			return fmt.Errorf("general.alignment %d is not a power of two", a)
		}
		align = uint64(a)
	}
	if ts.Offset > uint64(fileSize) || ts.Offset%align != 0 {
		return fmt.Errorf("tensor data at %d in a %d-byte file (alignment %d)", ts.Offset, fileSize, align)
	}
	dataLen := uint64(fileSize) - ts.Offset
	type span struct {
		name       string
		start, end uint64
	}
	spans := make([]span, 0, len(ts.Items()))
	names := map[string]bool{}
	for _, t := range ts.Items() {
		if names[t.Name] {
			return fmt.Errorf("tensor %s appears twice", t.Name)
		}
		names[t.Name] = true
		typ, ok := ggmlTypes[t.Kind]
		if !ok {
			return fmt.Errorf("tensor %s: type %s is not supported (want F32, F16, BF16, Q4_0, Q8_0, Q4_K, Q5_K or Q6_K)", t.Name, t.Type())
		}
		n := uint64(1)
		for _, d := range t.Shape {
			hi, lo := bits.Mul64(n, d)
			if hi != 0 {
				return fmt.Errorf("tensor %s: shape %v overflows", t.Name, t.Shape)
			}
			n = lo
		}
		if n%uint64(typ.values) != 0 {
			return fmt.Errorf("tensor %s: %d values, not whole blocks of %d (%s)", t.Name, n, typ.values, typ.name)
		}
		hi, size := bits.Mul64(n/uint64(typ.values), uint64(typ.bytes))
		if hi != 0 || size > dataLen {
			return fmt.Errorf("tensor %s: %d values of %s past the %d bytes of tensor data", t.Name, n, typ.name, dataLen)
		}
		if t.Offset%align != 0 {
			return fmt.Errorf("tensor %s: offset %d is not a multiple of the alignment %d", t.Name, t.Offset, align)
		}
		if t.Offset > dataLen-size {
			return fmt.Errorf("tensor %s: %d bytes at offset %d, past the %d bytes of tensor data", t.Name, size, t.Offset, dataLen)
		}
		spans = append(spans, span{t.Name, t.Offset, t.Offset + size})
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start < spans[j].start })
	for i := 1; i < len(spans); i++ {
		if spans[i].start < spans[i-1].end {
			return fmt.Errorf("tensors %s and %s overlap (bytes %d-%d and %d-%d of the tensor data)", spans[i-1].name, spans[i].name,
				spans[i-1].start, spans[i-1].end, spans[i].start, spans[i].end)
		}
	}
	return nil
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r *bufio.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Discard skips n bytes.
func (c *countingReader) Discard(n int) (int, error) {
	m, err := c.r.Discard(n)
	c.n += int64(m)
	return m, err
}
