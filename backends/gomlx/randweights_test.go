package gomlx

import (
	_ "embed"
	"math/rand/v2"
)

// demoCorpus is English text for tests that need documents (prefix
// sharing) and a tokenizer corpus.
//
//go:embed demo_corpus.txt
var demoCorpus string

// Random test weights: norms 1+0.05·N(0,1), everything else 0.2·N(0,1).
const (
	demoNormScale = 0.05
	demoStd       = 0.2
)

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
		out = append(out, lw.inNorm, lw.q, lw.k, lw.v, lw.o, lw.postNorm, lw.gate, lw.up, lw.down)
	}
	return out
}
