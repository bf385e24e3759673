//go:build unix

package gomlx

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"

	"tally/backends"
)

// reportRSS reports the process's peak resident set size in MiB.
func reportRSS(b *testing.B) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "peakRSS_MiB")
	}
}

// benchDecode generates newTokens tokens for batch requests of promptLen
// random ids per iteration and reports decode tokens/s (prefill excluded),
// prefill tokens/s and compilations.
func benchDecode(b *testing.B, m *Model, batch, promptLen, newTokens int) {
	reqs := randomRequests(m, batch, promptLen, newTokens)
	ctx := context.Background()
	// Warm up: compile every graph outside the timed loop.
	if err := m.Generate(ctx, reqs, func(backends.Event) bool { return true }); err != nil {
		b.Fatal(err)
	}
	m.cfg.EOSTokenIDs = nil // random models must run the full budget
	var decodeTime, prefillTime time.Duration
	decodeTokens, prefillTokens := 0, 0
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		var firstAt time.Time
		seen := 0
		err := m.Generate(ctx, reqs, func(ev backends.Event) bool {
			if len(ev.IDs) > 0 {
				seen++
				if seen == batch {
					firstAt = time.Now() // every row has its first token: prefill done
				}
			}
			return true
		})
		if err != nil {
			b.Fatal(err)
		}
		end := time.Now()
		prefillTime += firstAt.Sub(start)
		decodeTime += end.Sub(firstAt)
		prefillTokens += batch * promptLen
		decodeTokens += seen - batch
	}
	b.StopTimer()
	b.ReportMetric(float64(decodeTokens)/decodeTime.Seconds(), "decode_tok/s")
	b.ReportMetric(float64(prefillTokens)/prefillTime.Seconds(), "prefill_tok/s")
	b.ReportMetric(float64(m.Compilations()), "compilations")
	reportRSS(b)
}

func BenchmarkDemoDecode(b *testing.B) {
	for _, batch := range []int{1, 8} {
		b.Run(map[int]string{1: "batch1", 8: "batch8"}[batch], func(b *testing.B) {
			m, err := Demo(context.Background(), Options{MaxBatch: batch})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			benchDecode(b, m, batch, 64, 64)
		})
	}
}

// llamaConfig is a random-weight Llama-shaped config for benchmarks.
func llamaConfig(vocab, hidden, inter, layers, heads, kvHeads, ctx int) Config {
	return Config{
		ModelType: "llama", VocabSize: vocab, HiddenSize: hidden, IntermediateSize: inter,
		NumLayers: layers, NumHeads: heads, NumKVHeads: kvHeads, HeadDim: hidden / heads, MaxPositionEmbeddings: ctx,
		RMSNormEps: 1e-5, RopeTheta: 10000, Rope: RopeScaling{Type: "default"}, SlidingWindow: make([]int, layers),
		HiddenAct: "silu", BOSTokenID: -1,
	}
}

// randomModel builds a model of cfg with seeded random weights.
func randomModel(b *testing.B, cfg Config, batch int) *Model {
	m, err := newModel(cfg, layout{}, randomWeights(cfg, 7), nil, Options{MaxBatch: batch})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return m
}

// smallConfig is the model of BenchmarkDecodeCacheLength and
// BenchmarkPrefillLength.
func smallConfig() Config { return llamaConfig(4096, 256, 704, 4, 4, 2, 4096) }

// BenchmarkLlama100M decodes with a random Llama-shaped model of about 100M
// parameters (hidden 768, 12 layers, 12/4 heads, MLP 2048, vocab 16000):
// prompt 512, 128 new tokens. It is slow on the pure-Go backend.
func BenchmarkLlama100M(b *testing.B) {
	cfg := llamaConfig(16000, 768, 2048, 12, 12, 4, 2048)
	b.Logf("parameters: %.1fM", float64(cfg.Params())/1e6)
	for _, batch := range []int{1, 8} {
		b.Run(map[int]string{1: "batch1", 8: "batch8"}[batch], func(b *testing.B) {
			m := randomModel(b, cfg, batch)
			benchDecode(b, m, batch, 512, 128)
		})
	}
}

// BenchmarkDecodeCacheLength decodes 32 new tokens after prompts of 16,
// 1000 and 3000 tokens with a small random Llama-shaped model (hidden 256,
// 4 layers, 4/2 heads, head_dim 64, MLP 704, vocab 4096) at batch 1 and 8,
// showing how decode speed falls with the cache length.
func BenchmarkDecodeCacheLength(b *testing.B) {
	cfg := smallConfig()
	for _, batch := range []int{1, 8} {
		for _, prompt := range []int{16, 1000, 3000} {
			b.Run(fmt.Sprintf("batch%d/prompt%d", batch, prompt), func(b *testing.B) {
				m := randomModel(b, cfg, batch)
				benchDecode(b, m, batch, prompt, 32)
			})
		}
	}
}

// randomRequests makes batch requests of promptLen seeded random ids.
func randomRequests(m *Model, batch, promptLen, maxTokens int) []backends.Request {
	rng := rand.New(rand.NewPCG(1, 2))
	reqs := make([]backends.Request, batch)
	for i := range reqs {
		ids := make([]int, promptLen)
		for j := range ids {
			ids[j] = rng.IntN(m.Config().VocabSize)
		}
		reqs[i] = backends.Request{Index: i, PromptIDs: ids, MaxTokens: maxTokens}
	}
	return reqs
}

// benchPrefill prefills batch random prompts of promptLen ids per
// iteration (one new token each, so decode is negligible) and reports
// prompt tokens/s.
func benchPrefill(b *testing.B, m *Model, batch, promptLen int) {
	reqs := randomRequests(m, batch, promptLen, 1)
	ctx := context.Background()
	// Warm up: compile every graph outside the timed loop.
	if err := m.Generate(ctx, reqs, func(backends.Event) bool { return true }); err != nil {
		b.Fatal(err)
	}
	var elapsed time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := m.Generate(ctx, reqs, func(backends.Event) bool { return true }); err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N*batch*promptLen)/elapsed.Seconds(), "prefill_tok/s")
	reportRSS(b)
}

// BenchmarkPrefillLength prefills prompts of 16, 1000 and 3000 tokens with
// the model of BenchmarkDecodeCacheLength at batch 1 and 8.
func BenchmarkPrefillLength(b *testing.B) {
	cfg := smallConfig()
	for _, batch := range []int{1, 8} {
		for _, prompt := range []int{16, 1000, 3000} {
			b.Run(fmt.Sprintf("batch%d/prompt%d", batch, prompt), func(b *testing.B) {
				m := randomModel(b, cfg, batch)
				benchPrefill(b, m, batch, prompt)
			})
		}
	}
}

// benchConfig is the model of scripts/cpu-bench (issue 16): hidden 768,
// 12 layers, 12/4 heads, MLP 2048, vocabulary 512 (about 76M parameters).
func benchConfig() Config { return llamaConfig(512, 768, 2048, 12, 12, 4, 2048) }

// BenchmarkCPUBenchModel prefills and decodes with the model of
// scripts/cpu-bench: prompts of 270 tokens, 128 new tokens, at batch 1 and
// 8 (see scripts/cpu-bench.sh for the comparison with Ollama). Profile one
// part with e.g. -bench 'CPUBenchModel/prefill/batch1' -cpuprofile.
func BenchmarkCPUBenchModel(b *testing.B) {
	cfg := benchConfig()
	for _, batch := range []int{1, 8} {
		name := map[int]string{1: "batch1", 8: "batch8"}[batch]
		b.Run("prefill/"+name, func(b *testing.B) {
			benchPrefill(b, randomModel(b, cfg, batch), batch, 270)
		})
		b.Run("decode/"+name, func(b *testing.B) {
			benchDecode(b, randomModel(b, cfg, batch), batch, 270, 128)
		})
	}
}

// BenchmarkCPUBenchDType runs BenchmarkCPUBenchModel's parts on the same
// model as a bfloat16 checkpoint (its weights rounded to bfloat16) under
// --dtype bfloat16 (what auto computes on AVX-512) and float32, the two
// modes of each part one after the other. Repeat the whole benchmark to measure them in
// turn on a machine shared with other work (-count repeats each case in a
// row instead); docs/numerics.md gives the ratios.
func BenchmarkCPUBenchDType(b *testing.B) {
	cfg := benchConfig()
	host := randomWeights(cfg, 7)
	for i, s := range weightSpecs(cfg, layout{}) {
		if s.matrix {
			for j, x := range host[i] {
				host[i][j] = bfloat16.FromFloat32(x).Float32()
			}
		}
	}
	for _, batch := range []int{1, 8} {
		name := map[int]string{1: "batch1", 8: "batch8"}[batch]
		for _, part := range []string{"prefill", "decode"} {
			for _, mode := range []DType{DTypeBFloat16, DTypeFloat32} {
				b.Run(part+"/"+name+"/"+string(mode), func(b *testing.B) {
					w := make([][]float32, len(host))
					for i := range host {
						w[i] = slices.Clone(host[i])
					}
					m, err := newModel(cfg, layout{half: dtypes.BFloat16}, w, nil, Options{MaxBatch: batch, DType: mode})
					if err != nil {
						b.Fatal(err)
					}
					defer m.Close()
					if part == "prefill" {
						benchPrefill(b, m, batch, 270)
					} else {
						benchDecode(b, m, batch, 270, 128)
					}
				})
			}
		}
	}
}

// BenchmarkProductsDType measures what fastProducts decides by: the
// products' speed in bfloat16, float16 and float32 on this machine's
// kernels (run it under GOMLX_SIMD_AVX512=false and GOMLX_SIMD_AVX2=false
// for the other families), on the random BF16 Llama of cmd/tally's
// TestRerunEqualsFullRun (hidden 1024, 2 layers, 16/4 heads, MLP 2048,
// vocabulary 800): prefill of 100-token prompts and decode of 32 tokens
// after 20, at batch 1 and 8, the three modes of each part one after the
// other. Repeat the whole benchmark to get rounds, and compare each mode
// with float32 within a round; docs/numerics.md gives the ratios.
func BenchmarkProductsDType(b *testing.B) {
	cfg := llamaConfig(800, 1024, 2048, 2, 16, 4, 2048)
	host := randomWeights(cfg, 7)
	for i, s := range weightSpecs(cfg, layout{}) {
		if s.matrix {
			for j, x := range host[i] {
				host[i][j] = bfloat16.FromFloat32(x).Float32()
			}
		}
	}
	for _, batch := range []int{1, 8} {
		for _, part := range []string{"prefill", "decode"} {
			for _, mode := range []DType{DTypeBFloat16, DTypeFloat16, DTypeFloat32} {
				b.Run(fmt.Sprintf("%s/batch%d/%s", part, batch, mode), func(b *testing.B) {
					w := make([][]float32, len(host))
					for i := range host {
						w[i] = slices.Clone(host[i])
					}
					m, err := newModel(cfg, layout{half: dtypes.BFloat16}, w, nil, Options{MaxBatch: batch, DType: mode})
					if err != nil {
						b.Fatal(err)
					}
					defer m.Close()
					if part == "prefill" {
						benchPrefill(b, m, batch, 100)
					} else {
						benchDecode(b, m, batch, 20, 32)
					}
				})
			}
		}
	}
}
