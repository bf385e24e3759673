package main

import (
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/gomlx/compute/dtypes/bfloat16"
	"golang.org/x/sync/errgroup"
)

// shape is a Llama-family model shape.
type shape struct {
	Hidden, Intermediate, Layers, Heads, KVHeads, HeadDim, Vocab int
	Tied                                                         bool
	// RopeFactor is rope_scaling's llama3 factor (Llama 3.1: 8, 3.2: 32).
	RopeFactor float64
}

// shapes are the checkpoints the GPU check writes: Llama-3.1-8B's and
// Llama-3.2-1B's shapes (their config.json), and a tiny one with the same
// vocabulary for the CPU dry run.
var shapes = map[string]shape{
	"llama-8b": {Hidden: 4096, Intermediate: 14336, Layers: 32, Heads: 32, KVHeads: 8, HeadDim: 128, Vocab: 128256, RopeFactor: 8},
	"llama-1b": {Hidden: 2048, Intermediate: 8192, Layers: 16, Heads: 32, KVHeads: 8, HeadDim: 64, Vocab: 128256, Tied: true, RopeFactor: 32},
	"tiny":     {Hidden: 64, Intermediate: 128, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 128256, Tied: true, RopeFactor: 32},
}

// tensor is one weight of a checkpoint, in Hugging Face's names and
// [out, in] layout.
type tensor struct {
	name  string
	shape []int
	norm  bool
}

// elems is the number of values of t.
func (t tensor) elems() int64 {
	n := int64(1)
	for _, d := range t.shape {
		n *= int64(d)
	}
	return n
}

// tensors lists s's weights in the order transformers' named_parameters
// gives them.
func (s shape) tensors() []tensor {
	q, kv := s.Heads*s.HeadDim, s.KVHeads*s.HeadDim
	out := []tensor{{name: "model.embed_tokens.weight", shape: []int{s.Vocab, s.Hidden}}}
	for l := range s.Layers {
		p := fmt.Sprintf("model.layers.%d.", l)
		out = append(out,
			tensor{name: p + "self_attn.q_proj.weight", shape: []int{q, s.Hidden}},
			tensor{name: p + "self_attn.k_proj.weight", shape: []int{kv, s.Hidden}},
			tensor{name: p + "self_attn.v_proj.weight", shape: []int{kv, s.Hidden}},
			tensor{name: p + "self_attn.o_proj.weight", shape: []int{s.Hidden, q}},
			tensor{name: p + "mlp.gate_proj.weight", shape: []int{s.Intermediate, s.Hidden}},
			tensor{name: p + "mlp.up_proj.weight", shape: []int{s.Intermediate, s.Hidden}},
			tensor{name: p + "mlp.down_proj.weight", shape: []int{s.Hidden, s.Intermediate}},
			tensor{name: p + "input_layernorm.weight", shape: []int{s.Hidden}, norm: true},
			tensor{name: p + "post_attention_layernorm.weight", shape: []int{s.Hidden}, norm: true},
		)
	}
	out = append(out, tensor{name: "model.norm.weight", shape: []int{s.Hidden}, norm: true})
	if !s.Tied {
		out = append(out, tensor{name: "lm_head.weight", shape: []int{s.Vocab, s.Hidden}})
	}
	return out
}

// params is the number of parameters of s.
func (s shape) params() int64 {
	var n int64
	for _, t := range s.tensors() {
		n += t.elems()
	}
	return n
}

// config is s's config.json as transformers 5 reads it (the legacy
// rope_theta + rope_scaling form, as the Hub's Llama 3 files have it). No
// BOS or EOS id: every row runs its budget (throughput), and a DROP run
// ends on its stop sequences or budget.
func (s shape) config() map[string]any {
	return map[string]any{
		"architectures": []string{"LlamaForCausalLM"}, "model_type": "llama",
		"vocab_size": s.Vocab, "hidden_size": s.Hidden, "intermediate_size": s.Intermediate,
		"num_hidden_layers": s.Layers, "num_attention_heads": s.Heads, "num_key_value_heads": s.KVHeads,
		"head_dim": s.HeadDim, "hidden_act": "silu", "max_position_embeddings": 131072,
		"rms_norm_eps": 1e-5, "rope_theta": 500000.0,
		"rope_scaling": map[string]any{"rope_type": "llama3", "factor": s.RopeFactor, "low_freq_factor": 1.0,
			"high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
		"tie_word_embeddings": s.Tied, "attention_bias": false, "mlp_bias": false,
		"torch_dtype": "bfloat16", "bos_token_id": nil, "eos_token_id": nil, "pad_token_id": nil,
	}
}

// weightStd is the standard deviation of the random matrices
// (transformers' own Llama initializer_range).
const weightStd = 0.02

// chunkElems is the number of values one worker draws and writes at once.
const chunkElems = 1 << 24

func runWeights(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("weights", flag.ContinueOnError)
	name := fs.String("shape", "", "llama-8b, llama-1b or tiny")
	out := fs.String("out", "", "model folder to write")
	tok := fs.String("tokenizer", "", "tokenizer.json or tokenizer.json.gz to copy in (tokenizer_config.json beside it too)")
	seed := fs.Uint64("seed", 25, "random seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s, ok := shapes[*name]
	if !ok || *out == "" {
		return fmt.Errorf("want -shape llama-8b|llama-1b|tiny and -out DIR")
	}
	return writeCheckpoint(ctx, *out, s, *tok, *seed)
}

// writeCheckpoint writes a model folder of shape s with random bf16
// weights: config.json, generation_config.json, the tokenizer (when tok is
// given) and model.safetensors.
func writeCheckpoint(ctx context.Context, dir string, s shape, tok string, seed uint64) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := writeJSONFile(filepath.Join(dir, "config.json"), s.config()); err != nil {
		return err
	}
	gen := map[string]any{"do_sample": false, "bos_token_id": nil, "eos_token_id": nil}
	if err := writeJSONFile(filepath.Join(dir, "generation_config.json"), gen); err != nil {
		return err
	}
	if tok != "" {
		if err := copyTokenizer(tok, dir); err != nil {
			return err
		}
	}
	return writeSafetensors(ctx, filepath.Join(dir, "model.safetensors"), s, seed)
}

// copyTokenizer copies tokenizer.json (gunzipped when it is .gz) and, when
// it is there, the tokenizer_config.json beside it into dir.
func copyTokenizer(src, dir string) error {
	in, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("tokenizer: %w", err)
	}
	defer in.Close()
	var r io.Reader = in
	if strings.HasSuffix(src, ".gz") {
		zr, err := gzip.NewReader(in)
		if err != nil {
			return fmt.Errorf("tokenizer %s: %w", src, err)
		}
		defer zr.Close()
		r = zr
	}
	if err := writeFileFrom(filepath.Join(dir, "tokenizer.json"), r); err != nil {
		return err
	}
	cfg := filepath.Join(filepath.Dir(src), "tokenizer_config.json")
	if f, err := os.Open(cfg); err == nil {
		defer f.Close()
		return writeFileFrom(filepath.Join(dir, "tokenizer_config.json"), f)
	}
	return nil
}

// writeFileFrom writes r's bytes to path.
func writeFileFrom(path string, r io.Reader) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

// writeJSONFile writes v as indented JSON.
func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// writeSafetensors writes s's tensors as one BF16 safetensors file: norms
// 1 + 0.05·u, everything else uniform with standard deviation weightStd
// (u uniform on [-√3, √3)), drawn chunk by chunk on every core (each chunk
// from its own seeded PCG, so the file depends only on seed) and written
// in place, so a 16 GB file never sits in memory.
func writeSafetensors(ctx context.Context, path string, s shape, seed uint64) error {
	type entry struct {
		DType   string   `json:"dtype"`
		Shape   []int    `json:"shape"`
		Offsets [2]int64 `json:"data_offsets"`
	}
	ts := s.tensors()
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	offsets := make([]int64, len(ts))
	var off int64
	for i, t := range ts {
		offsets[i] = off
		n := 2 * t.elems()
		header[t.name] = entry{DType: "BF16", Shape: t.shape, Offsets: [2]int64{off, off + n}}
		off += n
	}
	h, err := json.Marshal(header)
	if err != nil {
		return fmt.Errorf("encode safetensors header: %w", err)
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	base := int64(8 + len(h))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(base + off); err != nil {
		return fmt.Errorf("size %s: %w", path, err)
	}
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(h)))
	if _, err := f.WriteAt(append(lenBuf[:], h...), 0); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, t := range ts {
		for start := int64(0); start < t.elems(); start += chunkElems {
			n := min(int64(chunkElems), t.elems()-start)
			at := base + offsets[i] + 2*start
			g.Go(func() error {
				if err := gctx.Err(); err != nil {
					return err
				}
				buf := randomBF16(seed, uint64(i), uint64(start), int(n), t.norm)
				if _, err := f.WriteAt(buf, at); err != nil {
					return fmt.Errorf("write %s: %w", path, err)
				}
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return f.Close()
}

// randomBF16 draws n little-endian bf16 values for chunk start of tensor
// index: 1 + 0.05·u for norms, weightStd·u otherwise, u uniform with unit
// variance.
func randomBF16(seed, index, start uint64, n int, norm bool) []byte {
	rng := rand.New(rand.NewPCG(seed^index*0x9e3779b97f4a7c15, start))
	scale, offset := float32(weightStd*math.Sqrt(3)), float32(0)
	if norm {
		scale, offset = float32(0.05*math.Sqrt(3)), 1
	}
	buf := make([]byte, 2*n)
	for i := 0; i < n; {
		r := rng.Uint64()
		for k := 0; k < 4 && i < n; k++ {
			u := float32(int16(r>>(16*k))) / 32768 // [-1, 1)
			v := offset + scale*u
			binary.LittleEndian.PutUint16(buf[2*i:], uint16(bfloat16.FromFloat32(v)))
			i++
		}
	}
	return buf
}
