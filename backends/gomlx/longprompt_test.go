//go:build unix

package gomlx

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"

	"tally/backends"
)

// tinyLongConfig is issue 36's long-prompt model: a 2-layer, 64-wide
// Llama (4/2 heads of 16, MLP 176, vocabulary 512) with llama3 RoPE and
// 131,072 positions, its matrices BF16.
func tinyLongConfig() Config {
	c := llamaConfig(512, 64, 176, 2, 4, 2, 131072)
	c.Rope = RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}
	c.RopeTheta = 500000
	return c
}

// bf16Model builds a model of cfg with seeded random weights rounded to
// bfloat16, as a BF16 checkpoint under --dtype auto.
func bf16Model(b *testing.B, cfg Config) *Model {
	host := randomWeights(cfg, 7)
	for i, s := range weightSpecs(cfg, layout{}) {
		if s.matrix {
			for j, x := range host[i] {
				host[i][j] = bfloat16.FromFloat32(x).Float32()
			}
		}
	}
	m, err := newModel(cfg, layout{half: dtypes.BFloat16}, host, nil, Options{MaxBatch: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return m
}

// benchLongPrompt prefills one random prompt of n tokens and generates
// newTokens after it, once (no warm-up: compiling is part of what a user
// waits for, and a long prompt is rarely run twice), and reports the
// seconds it took, the prefill's tokens/s and the peak RSS.
func benchLongPrompt(b *testing.B, m *Model, n, newTokens int) {
	reqs := randomRequests(m, 1, n, newTokens)
	m.cfg.EOSTokenIDs = nil
	var total, prefill time.Duration
	for range b.N {
		start := time.Now()
		var first time.Time
		err := m.Generate(context.Background(), reqs, func(ev backends.Event) bool {
			if len(ev.IDs) > 0 && first.IsZero() {
				first = time.Now()
			}
			return true
		})
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		prefill += first.Sub(start)
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "s/prompt")
	b.ReportMetric(float64(n*b.N)/prefill.Seconds(), "prefill_tok/s")
	reportRSS(b)
}

// BenchmarkLongPrompt prefills one long prompt and generates 4 tokens
// after it: issue 36's tiny model (tinyLongConfig) at 2,000 to 32,000
// tokens, and the model of scripts/cpu-bench (benchConfig with a longer
// context, float32) at 4,096 and 16,384. Run one case at a time for its
// peak RSS, e.g. -bench 'LongPrompt/tiny/16000' -benchtime 1x.
func BenchmarkLongPrompt(b *testing.B) {
	for _, n := range []int{2000, 8000, 16000, 32000} {
		b.Run(fmt.Sprintf("tiny/%d", n), func(b *testing.B) {
			benchLongPrompt(b, bf16Model(b, tinyLongConfig()), n, 4)
		})
	}
	for _, n := range []int{4096, 16384} {
		b.Run(fmt.Sprintf("cpubench/%d", n), func(b *testing.B) {
			cfg := benchConfig()
			cfg.MaxPositionEmbeddings = 32768
			benchLongPrompt(b, randomModel(b, cfg, 1), n, 4)
		})
	}
}
