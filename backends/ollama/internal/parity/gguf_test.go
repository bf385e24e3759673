package parity

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ollama/ollama/api"

	"tally/backends/gomlx"
	"tally/backends/tokenizer"
)

// ollamaBlob returns the path of the GGUF blob of an Ollama model in
// $TALLY_OLLAMA_MODELS (named by its manifest).
func ollamaBlob(t *testing.T, model string) string {
	t.Helper()
	blob, ok, err := gomlx.OllamaModelBlob(filepath.Join(os.Getenv("TALLY_OLLAMA_MODELS"), "manifests", "registry.ollama.ai", "library", model, "latest"))
	if err != nil || !ok {
		t.Fatalf("manifest of %s: %v (a manifest: %v)", model, err, ok)
	}
	return blob
}

// compareLogits returns the smallest cosine similarity and the largest
// absolute difference (relative to the reference's largest magnitude)
// between the next-token logits of two models over prompts, and how many
// prompts' argmax differ.
func compareLogits(t *testing.T, ref, got *gomlx.Model, prompts [][]int) (minCos, maxRel float64, argmaxDiff int) {
	t.Helper()
	ctx := context.Background()
	minCos = 1
	for _, ids := range prompts {
		a, err := ref.Logits(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		b, err := got.Logits(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		var dot, na, nb, scale, diff float64
		am, bm := 0, 0
		for i := range a {
			x, y := float64(a[i]), float64(b[i])
			dot, na, nb = dot+x*y, na+x*x, nb+y*y
			scale, diff = max(scale, math.Abs(x)), max(diff, math.Abs(x-y))
			if a[i] > a[am] {
				am = i
			}
			if b[i] > b[bm] {
				bm = i
			}
		}
		minCos = min(minCos, dot/math.Sqrt(na*nb))
		maxRel = max(maxRel, diff/scale)
		if am != bm {
			argmaxDiff++
		}
	}
	return minCos, maxRel, argmaxDiff
}

// TestGGUF loads the GGUF files Ollama made (its converter and llama.cpp's
// quantizer) with the native backend and compares them with the same
// weights read from safetensors: the tokenizer rebuilt from the GGUF
// metadata gives the same ids as tokenizer.json, and the logits agree to
// the precision of each format (F16, Q8_0, and the K-quants Q4_K, Q5_K,
// Q6_K on a model wide enough for their 256-value blocks).
func TestGGUF(t *testing.T) {
	model, dir := os.Getenv("TALLY_OLLAMA_MODEL"), os.Getenv("TALLY_OLLAMA_MODEL_DIR")
	if model == "" || dir == "" || os.Getenv("TALLY_OLLAMA_MODELS") == "" {
		t.Skip("no Ollama server: set TALLY_OLLAMA_MODEL, TALLY_OLLAMA_MODELS, OLLAMA_HOST and TALLY_OLLAMA_MODEL_DIR as printed by `eval \"$(scripts/ollama-server.sh)\"` to run")
	}
	ctx := context.Background()
	client, err := api.ClientFromEnvironment()
	if err != nil {
		t.Fatal(err)
	}
	opts := gomlx.Options{FingerprintCache: "-"}
	ref, err := gomlx.Open(ctx, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()

	texts := []string{"the harness 3.", "Question 3: alpha bravo", "monday, every sample\n\na stop sequence", "river forty-two 17 ünïcode"}
	var prompts [][]int
	for _, s := range texts {
		ids, err := ref.Tokenizer().Encode(s, true)
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, ids)
	}

	t.Run("F16", func(t *testing.T) {
		g, err := gomlx.Open(ctx, ollamaBlob(t, model), opts)
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		for i, s := range texts {
			ids, err := g.Tokenizer().Encode(s, true)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(ids) != fmt.Sprint(prompts[i]) {
				t.Errorf("%q: GGUF tokenizer %v, tokenizer.json %v", s, ids, prompts[i])
			}
		}
		cos, rel, _ := compareLogits(t, ref, g, prompts)
		t.Logf("F16 GGUF vs F32 safetensors: min cosine %.7f, max |diff| %.2g of the largest logit", cos, rel)
		if cos < 0.99999 || rel > 5e-3 {
			t.Errorf("F16 GGUF logits: min cosine %.7f, max relative difference %.2g", cos, rel)
		}
	})

	quantize := func(t *testing.T, from, name, q string) string {
		t.Helper()
		err := client.Create(ctx, &api.CreateRequest{Model: name, From: from, Quantize: q}, func(api.ProgressResponse) error { return nil })
		if err != nil {
			t.Fatalf("ollama create %s --quantize %s: %v", name, q, err)
		}
		t.Cleanup(func() { client.Delete(context.Background(), &api.DeleteRequest{Model: name}) })
		return ollamaBlob(t, name)
	}
	// A model whose rows are whole 256-value blocks, for the K-quants, with
	// a tokenizer of its own: its prompts are the same texts, in its ids.
	wide := writeWideModel(t)
	wref, err := gomlx.Open(ctx, wide, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer wref.Close()
	var widePrompts [][]int
	for _, s := range texts {
		ids, err := wref.Tokenizer().Encode(s, true)
		if err != nil {
			t.Fatal(err)
		}
		widePrompts = append(widePrompts, ids)
	}
	files := map[string]string{}
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "generation_config.json"} {
		data, err := os.ReadFile(filepath.Join(wide, f))
		if err != nil {
			t.Fatal(err)
		}
		digest := fmt.Sprintf("sha256:%x", sha256.Sum256(data))
		if err := client.CreateBlob(ctx, digest, bytes.NewReader(data)); err != nil {
			t.Fatalf("upload %s: %v", f, err)
		}
		files[f] = digest
	}
	if err := client.Create(ctx, &api.CreateRequest{Model: "tally-wide", Files: files}, func(api.ProgressResponse) error { return nil }); err != nil {
		t.Fatalf("ollama create tally-wide: %v", err)
	}
	t.Cleanup(func() { client.Delete(context.Background(), &api.DeleteRequest{Model: "tally-wide"}) })
	// Each block format's error against the source weights (relative RMS
	// over a tensor), bounded near what rounding to that format gives
	// Gaussian weights: a decoder that misplaces a bit or a scale is off by
	// 100% or more.
	bound := map[string]float64{"Q8_0": 0.01, "Q6_K": 0.03, "Q5_K": 0.05, "Q4_K": 0.10, "Q4_0": 0.12, "F16": 1e-3, "F32": 0}
	_, src, err := gomlx.ReadGGUF(ollamaBlob(t, "tally-wide"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		quant string
		cos   float64
	}{{"q8_0", 0.999}, {"q4_K_M", 0.93}, {"q5_K_M", 0.98}, {"q4_0", 0.9}} {
		t.Run(tc.quant, func(t *testing.T) {
			blob := quantize(t, "tally-wide", "tally-wide-"+tc.quant, tc.quant)
			_, w, err := gomlx.ReadGGUF(blob)
			if err != nil {
				t.Fatal(err)
			}
			worst := map[string]float64{}
			for name, info := range w.Tensors {
				want, err := src.Read(name, src.Tensors[name].Shape...)
				if err != nil {
					t.Fatal(err)
				}
				got, err := w.Read(name, info.Shape...)
				if err != nil {
					t.Fatal(err)
				}
				var se, ss float64
				for i := range want {
					e := float64(got[i] - want[i])
					se, ss = se+e*e, ss+float64(want[i])*float64(want[i])
				}
				rel := math.Sqrt(se / ss)
				worst[info.DType] = max(worst[info.DType], rel)
				if b, ok := bound[info.DType]; !ok || rel > b {
					t.Errorf("%s: %s tensor %s: relative RMS error %.3g (bound %g)", tc.quant, info.DType, name, rel, b)
				}
			}
			t.Logf("%s: worst relative RMS error by format %v", tc.quant, worst)
			g, err := gomlx.Open(ctx, blob, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			cos, rel, flips := compareLogits(t, wref, g, widePrompts)
			t.Logf("%s GGUF vs F32 safetensors: min cosine %.5f, max |diff| %.2g of the largest logit, %d of %d argmax differ",
				tc.quant, cos, rel, flips, len(widePrompts))
			if cos < tc.cos {
				t.Errorf("%s GGUF logits: min cosine %.5f, want ≥ %.3f", tc.quant, cos, tc.cos)
			}
		})
	}
}

// writeWideModel writes a random Llama (hidden 256, MLP 512, 2 layers,
// 4 heads of 64, 2 key/value heads) with a 512-entry byte-level BPE
// tokenizer trained on wideCorpus (Qwen2's split, which Ollama's converter
// recognises; <|endoftext|> its BOS and EOS, BOS not added), and returns
// its directory. The served test model is the demo model, whose
// vocabulary does not fill the 512 rows.
func writeWideModel(t *testing.T) string {
	t.Helper()
	out := t.TempDir()
	tok, err := tokenizer.TrainByteLevel(wideCorpus(), 512)
	if err != nil {
		t.Fatal(err)
	}
	var check struct {
		AddedTokens []struct {
			ID int `json:"id"`
		} `json:"added_tokens"`
	}
	if err := json.Unmarshal(tok, &check); err != nil || len(check.AddedTokens) == 0 {
		t.Fatalf("trained tokenizer: %v", err)
	}
	files := map[string][]byte{"tokenizer.json": tok}
	for name, v := range map[string]any{
		"tokenizer_config.json": map[string]any{"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
			"add_bos_token": false, "add_eos_token": false, "model_max_length": 4096, "tokenizer_class": "Qwen2Tokenizer"},
		"generation_config.json": map[string]any{"do_sample": false, "eos_token_id": check.AddedTokens[0].ID, "max_new_tokens": 64},
	} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(out, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const vocab, d, ffn, layers, heads, kvHeads, hd = 512, 256, 512, 2, 4, 2, 64
	cfg := map[string]any{
		"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama", "vocab_size": vocab,
		"hidden_size": d, "intermediate_size": ffn, "num_hidden_layers": layers, "num_attention_heads": heads,
		"num_key_value_heads": kvHeads, "head_dim": hd, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
		"rope_theta": 10000.0, "tie_word_embeddings": false, "hidden_act": "silu", "torch_dtype": "float32",
	}
	data, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(out, "config.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 13))
	tensors := map[string][]int{
		"model.embed_tokens.weight": {vocab, d}, "model.norm.weight": {d}, "lm_head.weight": {vocab, d},
	}
	for l := range layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		for n, s := range map[string][]int{
			"input_layernorm.weight": {d}, "post_attention_layernorm.weight": {d},
			"self_attn.q_proj.weight": {heads * hd, d}, "self_attn.k_proj.weight": {kvHeads * hd, d},
			"self_attn.v_proj.weight": {kvHeads * hd, d}, "self_attn.o_proj.weight": {d, heads * hd},
			"mlp.gate_proj.weight": {ffn, d}, "mlp.up_proj.weight": {ffn, d}, "mlp.down_proj.weight": {d, ffn},
		} {
			tensors[p+n] = s
		}
	}
	names := make([]string, 0, len(tensors))
	for n := range tensors {
		names = append(names, n)
	}
	sort.Strings(names)
	header := map[string]any{}
	var body bytes.Buffer
	for _, n := range names {
		shape := tensors[n]
		numel := 1
		for _, x := range shape {
			numel *= x
		}
		start := body.Len()
		for range numel {
			v := float32(rng.NormFloat64() * 0.08)
			if len(shape) == 1 {
				v = 1 + v // norm weights around 1
			}
			binary.Write(&body, binary.LittleEndian, v)
		}
		header[n] = map[string]any{"dtype": "F32", "shape": shape, "data_offsets": []int{start, body.Len()}}
	}
	h, _ := json.Marshal(header)
	var file bytes.Buffer
	binary.Write(&file, binary.LittleEndian, uint64(len(h)))
	file.Write(h)
	file.Write(body.Bytes())
	if err := os.WriteFile(filepath.Join(out, "model.safetensors"), file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// wideCorpus is varied English-like text with enough repeated pairs for
// the 511 entries of the wide model's tokenizer.
func wideCorpus() string {
	subjects := []string{"the harness", "a small model", "every request", "the server", "our benchmark", "this test", "the scheduler", "a long document"}
	verbs := []string{"reads", "writes", "counts", "streams", "scores", "checks", "retries", "measures"}
	objects := []string{"the tokens", "each answer", "forty-two numbers", "the context window", "a stop sequence", "the question", "every sample", "the final score"}
	tails := []string{"before noon.", "in order.", "with care.", "again and again.", "on the CPU.", "for 12 seconds.", "without errors.", "as expected."}
	var b strings.Builder
	for i := 0; i < 600; i++ {
		fmt.Fprintf(&b, "%s %s %s %s", subjects[i%8], verbs[(i/8)%8], objects[(i*3+i/64)%8], tails[(i*5+i/8)%8])
		if i%7 == 6 {
			fmt.Fprintf(&b, "\nQuestion %d: what is %d plus %d?\nAnswer: %d\n", i, i%97, i%13, i%97+i%13)
		} else {
			b.WriteByte(' ')
		}
	}
	words := strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima
	mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu
	january february march april may june july august september october november december
	monday tuesday wednesday thursday friday saturday sunday morning evening afternoon night
	mountain river forest valley desert island ocean glacier volcano meadow canyon harbour
	quickly slowly brightly quietly loudly gently firmly rarely always never sometimes often`)
	for i := 0; i < 3; i++ {
		for j, w := range words {
			fmt.Fprintf(&b, "%s %s, ", w, words[(j*7+i)%len(words)])
		}
		b.WriteString("\n")
	}
	return b.String()
}
