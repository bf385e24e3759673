package gomlx

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"tally/backends/tokenizer"
)

//go:embed demo_corpus.txt
var demoCorpus string

// Demo model constants: a tiny Llama-architecture model with random weights.
const (
	demoSeed      = 20261122
	demoVocab     = 512
	demoHidden    = 64
	demoLayers    = 2
	demoHeads     = 4
	demoKVHeads   = 2
	demoInter     = 176
	demoContext   = 2048
	demoVersion   = "demo-v2"
	demoNormScale = 0.05
	demoStd       = 0.2
	demoStopScale = 2.5
)

// Demo builds, deterministically and with no files, a tiny Llama-style model
// (hidden 64, 2 layers, 4 heads / 2 KV heads, context 2048) with random
// weights and a ~512-token byte-level BPE tokenizer trained on a small
// embedded English corpus. It exercises the whole pipeline; its outputs are
// random text, not meaningful answers.
func Demo(ctx context.Context, opts Options) (*Model, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("demo model: %w", err)
	}
	tokJSON, err := tokenizer.TrainByteLevel(demoCorpus, demoVocab)
	if err != nil {
		return nil, fmt.Errorf("demo tokenizer: %w", err)
	}
	tk, err := tokenizer.FromJSON(tokJSON)
	if err != nil {
		return nil, fmt.Errorf("demo tokenizer: %w", err)
	}
	vocab, eos, err := vocabOf(tokJSON)
	if err != nil {
		return nil, fmt.Errorf("demo tokenizer: %w", err)
	}
	cfg := Config{
		ModelType: "llama", VocabSize: vocab, HiddenSize: demoHidden, IntermediateSize: demoInter,
		NumLayers: demoLayers, NumHeads: demoHeads, NumKVHeads: demoKVHeads, HeadDim: demoHidden / demoHeads,
		MaxPositionEmbeddings: demoContext, RMSNormEps: 1e-5, RopeTheta: 10000, Rope: RopeScaling{Type: "default"},
		SlidingWindow: make([]int, demoLayers), HiddenAct: "silu", DType: "float32", BOSTokenID: -1,
	}
	if eos >= 0 {
		cfg.EOSTokenIDs = []int{eos}
	}
	host := randomWeights(cfg, demoSeed)
	// Random weights rarely emit "." or a newline within a short budget, so
	// the demo's stop settings would never fire. Scaling those tokens' rows
	// of lm_head by demoStopScale widens their logits' spread: each becomes
	// the argmax on roughly a tenth of the steps, so dot=. and nl=\n stop
	// at different places and one generation pass serves both.
	for _, piece := range []string{".", "Ċ"} { // "Ċ" is "\n" in byte-level BPE
		if id, ok := tk.TokenID(piece); ok {
			row := host[2][id*cfg.HiddenSize : (id+1)*cfg.HiddenSize]
			for i := range row {
				row[i] *= demoStopScale
			}
		}
	}
	tok := opts.Tokenizer
	if tok == nil {
		tok = WrapTokenizer(tk)
	}
	m, err := newModel(cfg, layout{}, host, tok, opts)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%+v\x00", demoVersion, demoSeed, cfg)
	h.Write(tokJSON)
	m.fpExtra = demoVersion + ":sha256:" + hex.EncodeToString(h.Sum(nil))
	m.dir = "demo"
	return m, nil
}

// vocabOf returns the number of ids of a tokenizer.json and the id of
// <|endoftext|> (or -1).
func vocabOf(tokJSON []byte) (int, int, error) {
	var t struct {
		Model struct {
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
		Added []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
		} `json:"added_tokens"`
	}
	if err := json.Unmarshal(tokJSON, &t); err != nil {
		return 0, 0, fmt.Errorf("parse tokenizer.json: %w", err)
	}
	n, eos := 0, -1
	for _, id := range t.Model.Vocab {
		n = max(n, id+1)
	}
	for _, a := range t.Added {
		n = max(n, a.ID+1)
		if a.Content == "<|endoftext|>" {
			eos = a.ID
		}
	}
	if n == 0 {
		return 0, 0, fmt.Errorf("empty vocabulary")
	}
	return n, eos, nil
}

// randomWeights draws weights as the fixture README describes (norms
// 1+0.05·N(0,1), everything else 0.2·N(0,1)) from a PCG seeded with seed,
// in Hugging Face named_parameters order, then fuses them into canonical
// order. Biases are absent.
func randomWeights(c Config, seed uint64) [][]float32 {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	draw := func(n int, norm bool) []float32 {
		x := make([]float32, n)
		for i := range x {
			if norm {
				x[i] = float32(1 + demoNormScale*rng.NormFloat64())
			} else {
				x[i] = float32(demoStd * rng.NormFloat64())
			}
		}
		return x
	}
	d, q, kv, in := c.HiddenSize, c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim, c.IntermediateSize
	embed := draw(c.VocabSize*d, false)
	type layerW struct{ q, k, v, o, gate, up, down, inNorm, postNorm []float32 }
	layers := make([]layerW, c.NumLayers)
	for l := range layers {
		lw := &layers[l]
		lw.q, lw.k, lw.v, lw.o = draw(q*d, false), draw(kv*d, false), draw(kv*d, false), draw(d*q, false)
		lw.gate, lw.up, lw.down = draw(in*d, false), draw(in*d, false), draw(d*in, false)
		lw.inNorm, lw.postNorm = draw(d, true), draw(d, true)
	}
	final := draw(d, true)
	out := [][]float32{embed, final}
	if !c.TieWordEmbeddings {
		out = append(out, draw(c.VocabSize*d, false))
	}
	for _, lw := range layers {
		qkv := append(append(append([]float32{}, lw.q...), lw.k...), lw.v...)
		gateUp := append(append([]float32{}, lw.gate...), lw.up...)
		out = append(out, lw.inNorm, qkv, lw.o, lw.postNorm, gateUp, lw.down)
	}
	return out
}
