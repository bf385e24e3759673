package gomlx

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"

	"tally/backends"
)

// llama8B is the Llama-3-8B shape with bf16 weights (≈16 GB), caches and
// activations.
func llama8B(free int64, prompt, maxNew, requests, maxBatch int) MemoryInput {
	return MemoryInput{FreeBytes: free, WeightBytes: 16_060_000_000, KVBytesPerToken: 2 * 32 * 8 * 128 * 2, ActBytes: 2,
		Hidden: 4096, Intermediate: 14336, Heads: 32, KVHeads: 8, HeadDim: 128, Vocab: 128256,
		PromptTokens: prompt, MaxNewTokens: maxNew, Requests: requests, MaxBatch: maxBatch}
}

func TestPlanMemory(t *testing.T) {
	fixture := func(free int64, prompt, requests, maxBatch int) MemoryInput {
		// llama-tiny: float32, 2 layers, 2 kv heads × 16, vocab 512.
		return MemoryInput{FreeBytes: free, WeightBytes: 4 * 2 * 512 * 64 * 2, KVBytesPerToken: 2 * 2 * 2 * 16 * 4, ActBytes: 4,
			Hidden: 64, Intermediate: 176, Heads: 4, KVHeads: 2, HeadDim: 16, Vocab: 512,
			PromptTokens: prompt, MaxNewTokens: 64, Requests: requests, MaxBatch: maxBatch}
	}
	cases := []struct {
		name    string
		in      MemoryInput
		batch   int
		cache   int
		chunk   int
		errWant string // substring of the error; "" for a plan
	}{
		{"8B 128k prompt on 78 GiB: chunked prefill", llama8B(78<<30, 131072, 128, 1, 8), 1, 163840, 1024, ""},
		{"8B 128k prompts ×8 on 78 GiB: two rows", llama8B(78<<30, 131072, 128, 8, 8), 2, 163840, 512, ""},
		{"8B 128k prompt on 24 GiB", llama8B(24<<30, 131072, 128, 1, 8), 0, 0, 0, "needs 37.50 GiB, 24.00 GiB free"},
		{"8B 4k prompts ×64 on 78 GiB: batch capped by memory", llama8B(78<<30, 4096, 128, 64, 64), 58, 8192, 512, ""},
		{"8B 512 prompts ×32 on 24 GiB", llama8B(24<<30, 512, 128, 32, 32), 32, 1024, 512, ""},
		{"8B 32k prompts ×8 on 78 GiB", llama8B(78<<30, 32768, 128, 8, 64), 8, 40960, 2048, ""},
		{"fixture: batch is the request bucket", fixture(1<<30, 2000, 3, 8), 4, 4096, 2048, ""},
		{"fixture: MaxBatch caps", fixture(1<<30, 100, 64, 8), 8, 256, 128, ""},
		{"fixture: tiny memory", fixture(200<<20, 100, 8, 8), 0, 0, 0, "0.20 GiB free"},
		{"unknown free memory", fixture(0, 100, 8, 8), 0, 0, 0, "free memory unknown"},
		{"no prompt", fixture(1<<30, 0, 8, 8), 0, 0, 0, "bad run"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := PlanMemory(tc.in)
			if tc.errWant != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errWant) {
					t.Fatalf("err %v, want one containing %q (plan %v)", err, tc.errWant, p)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Batch != tc.batch || p.CacheLength != tc.cache || p.PrefillChunk != tc.chunk {
				t.Errorf("batch %d cache %d chunk %d, want %d %d %d", p.Batch, p.CacheLength, p.PrefillChunk, tc.batch, tc.cache, tc.chunk)
			}
			if p.NeedBytes() > tc.in.FreeBytes {
				t.Errorf("plan needs %d bytes, %d free", p.NeedBytes(), tc.in.FreeBytes)
			}
			if p.CacheLength < tc.in.PromptTokens+tc.in.MaxNewTokens || p.KeyBuckets[len(p.KeyBuckets)-1] != p.CacheLength {
				t.Errorf("cache %d, key buckets %v", p.CacheLength, p.KeyBuckets)
			}
			if p.PrefillBudget != tc.in.Heads*p.PrefillChunk*p.CacheLength {
				t.Errorf("prefill budget %d", p.PrefillBudget)
			}
			if s := p.String(); !strings.Contains(s, "prefill chunk") || !strings.Contains(s, "GiB free") {
				t.Errorf("String() = %q", s)
			}
			t.Log(p)
		})
	}
	_, err := PlanMemory(llama8B(24<<30, 131072, 128, 1, 8))
	if !errors.Is(err, ErrDoesNotFit) {
		t.Errorf("err %v, want ErrDoesNotFit", err)
	}
}

func TestCacheLength(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{1, 64}, {64, 64}, {65, 128}, {4224, 8192}, {8192, 8192}, {8193, 10240}, {32896, 40960}, {131200, 163840}, {262144, 262144},
	} {
		if got := cacheLength(tc.n); got != tc.want {
			t.Errorf("cacheLength(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func TestParseMemAvailable(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int64
		ok   bool
	}{
		{"MemTotal:       16303036 kB\nMemFree:         1234 kB\nMemAvailable:   10485760 kB\n", 10 << 30, true},
		{"MemTotal: 1 kB\n", 0, false},
		{"MemAvailable: x kB\n", 0, false},
		{"MemAvailable: 12 MB\n", 0, false},
	} {
		got, err := parseMemAvailable(strings.NewReader(tc.text))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q: got %d, %v; want %d (ok %v)", tc.text, got, err, tc.want, tc.ok)
		}
	}
}

func TestModelMemoryPlan(t *testing.T) {
	e := loadExpected(t, "llama-tiny")
	var reqs []backends.Request
	longest := 0
	for i := range 4 {
		reqs = append(reqs, backends.Request{Index: i, PromptIDs: e.Prompts[i], MaxTokens: 8})
		longest = max(longest, len(e.Prompts[i]))
	}
	// The least memory that gives two rows for this run.
	probe := openFixture(t, "llama-tiny", Options{MaxBatch: 8})
	in := probe.memoryInput(0, longest, 8, 4)
	var two int64
	for f := in.WeightBytes; two == 0; f += in.KVBytesPerToken * 8 {
		in.FreeBytes = f
		if p, err := PlanMemory(in); err == nil && p.Batch > 1 {
			two = f
		}
	}
	cases := []struct {
		name   string
		memory int64
		batch  int // batch of the cache; 0: every request fails
	}{
		{"host memory", 0, 4},
		{"two rows", two, 2},
		{"too little", 1 << 20, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := openFixture(t, "llama-tiny", Options{MaxBatch: 8, DeviceMemory: tc.memory})
			p, err := m.MemoryPlan(longest, 8)
			if tc.batch == 0 {
				if !errors.Is(err, ErrDoesNotFit) {
					t.Errorf("plan %v, err %v", p, err)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			ids, final := collect(t, m, reqs, nil)
			for i := range reqs {
				if tc.batch == 0 {
					if final[i].Finish != backends.FinishError || !errors.Is(final[i].Err, ErrDoesNotFit) {
						t.Errorf("request %d: %+v", i, final[i])
					}
					continue
				}
				if want := e.GreedyUnbatched[i][:8]; !slices.Equal(ids[i], want) {
					t.Errorf("request %d: %v, want %v", i, ids[i], want)
				}
			}
			for k := range m.graphs {
				if k.Batch != tc.batch {
					t.Errorf("graph %s: cache batch %d, want %d", k, k.Batch, tc.batch)
				}
			}
		})
	}
}

// TestDeviceMemorySizesPrefillChunks: with Options.DeviceMemory the
// prefill chunks are the memory plan's, not the device default's. On XLA
// (where the plan exists only with DeviceMemory) the default budget (1<<28
// score elements) prefills a 32k-token prompt of a 32-head model in about
// 100 calls of 128 to 2,048 tokens (15 graph shapes to compile), the plan
// for an 80 GB card in 10 (8 shapes). The pure-Go backend's split step
// holds no scores, so by default it takes a 4,000-token prompt of
// llama-tiny in one call (up to splitMaxTokens), as the plan for 4 GiB
// does; an explicit PrefillBudget of 1<<24 scores cuts it into 3 chunks,
// with the same tokens and logits, bit for bit.
func TestDeviceMemorySizesPrefillChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 4000))
	prompt := make([]int, 4000)
	for i := range prompt {
		prompt[i] = rng.IntN(512)
	}
	run := func(opts Options) ([]int, []float32, Stats) {
		m := openFixture(t, "llama-tiny", opts)
		var last []float32
		m.prefillHook = func(_ int, logits []float32) { last = slices.Clone(logits) }
		ids, _ := collect(t, m, []backends.Request{{PromptIDs: prompt, MaxTokens: 8}}, nil)
		return ids[0], last, m.Stats()
	}
	defIDs, defLogits, defStats := run(Options{})
	planIDs, planLogits, planStats := run(Options{DeviceMemory: 4 << 30})
	if defStats.PrefillCalls != 1 || planStats.PrefillCalls != 1 {
		t.Errorf("prefill calls: %d by default (want 1), %d with DeviceMemory (want 1)", defStats.PrefillCalls, planStats.PrefillCalls)
	}
	if !slices.Equal(defIDs, planIDs) {
		t.Errorf("greedy ids differ: %v by default, %v with the plan's chunks", defIDs, planIDs)
	}
	// The pure-Go backend's products do not depend on how a prompt is
	// chunked (see invariance): the logits are the same bit for bit.
	if n, d := logitBits(planLogits, defLogits); n > 0 {
		t.Errorf("last prompt logits: %d differ between the chunkings (by up to %.3g)", n, d)
	}
	// An explicit PrefillBudget still wins over the plan.
	explicitIDs, explicitLogits, explicit := run(Options{DeviceMemory: 4 << 30, PrefillBudget: 1 << 24})
	if explicit.PrefillCalls != 3 {
		t.Errorf("PrefillBudget 1<<24 with DeviceMemory: %d prefill calls, want 3", explicit.PrefillCalls)
	}
	if n, d := logitBits(explicitLogits, defLogits); n > 0 || !slices.Equal(explicitIDs, defIDs) {
		t.Errorf("3 chunks: %d last prompt logits differ from one chunk's (by up to %.3g); ids %v, %v", n, d, explicitIDs, defIDs)
	}
}

// TestOpenRefusesWhatCannotFit: a model whose float32 weights exceed the
// host's available memory is refused before any tensor is read, with the
// sizes in the error; one that fits opens.
func TestOpenRefusesWhatCannotFit(t *testing.T) {
	dir := filepath.Join(sharedDir(t), "fixtures", "models", "llama-tiny")
	for _, tc := range []struct {
		availKB int
		ok      bool
	}{{100, false}, {1 << 20, true}} {
		meminfo := filepath.Join(t.TempDir(), "meminfo")
		os.WriteFile(meminfo, []byte(fmt.Sprintf("MemTotal: 2048 kB\nMemAvailable: %d kB\n", tc.availKB)), 0o644)
		m, err := Open(context.Background(), dir, Options{FingerprintCache: "-", meminfo: meminfo})
		switch {
		case tc.ok && err != nil:
			t.Errorf("%d kB available: %v", tc.availKB, err)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), "as float32 in memory, 0.00 GiB is available")):
			t.Errorf("%d kB available: error %v", tc.availKB, err)
		}
		if m != nil {
			m.Close()
		}
	}
}

// llama31_8B is Llama-3.1-8B's config.json (the shape scripts/gpu-check
// writes with random weights).
const llama31_8B = `{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 128256,
 "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
 "num_key_value_heads": 8, "head_dim": 128, "hidden_act": "silu", "max_position_embeddings": 131072,
 "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0,
 "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "rope_type": "llama3"},
 "tie_word_embeddings": false, "torch_dtype": "bfloat16", "bos_token_id": 128000, "eos_token_id": null}`

// TestPlanLlama8BOnH100 pins the plan the model itself makes (bf16
// weights, float32 KV cache and activations, as it computes) for the
// GPU check's runs of the 8B shape on an 80 GB card (79 GiB free): the
// 32k-token prompt fits with a prefill budget of 2,048 tokens at the full
// cache length, and 32 prompts of 4,096 tokens are decoded 29 rows
// at a time (the float32 cache of 32 rows, 64 GiB, does not fit beside
// the weights).
func TestPlanLlama8BOnH100(t *testing.T) {
	cfg, err := ParseConfig([]byte(llama31_8B), "llama-3.1-8b")
	if err != nil {
		t.Fatal(err)
	}
	m := &Model{cfg: cfg, lay: layout{half: dtypes.BFloat16}, maxBatch: 32}
	const free = 79 << 30
	cases := []struct {
		prompt, requests, batch, cache, chunk int
	}{
		{32768, 1, 1, 40960, 2048},
		{4096, 32, 29, 8192, 512},
		{512, 32, 32, 1024, 512},
	}
	for _, tc := range cases {
		p, err := PlanMemory(m.memoryInput(free, tc.prompt, 128, tc.requests))
		if err != nil {
			t.Fatalf("%d × %d tokens: %v", tc.requests, tc.prompt, err)
		}
		t.Logf("%d × %d tokens: %s", tc.requests, tc.prompt, p)
		if p.Batch != tc.batch || p.CacheLength != tc.cache || p.PrefillChunk != tc.chunk {
			t.Errorf("%d × %d tokens: batch %d cache %d chunk %d, want %d %d %d", tc.requests, tc.prompt,
				p.Batch, p.CacheLength, p.PrefillChunk, tc.batch, tc.cache, tc.chunk)
		}
		// bf16 matrices; the 65 norm vectors stay float32.
		if want := 2*cfg.Params() + 65*4096*2; p.WeightBytes != want {
			t.Errorf("weights %d bytes, want %d (bf16 matrices, float32 norms)", p.WeightBytes, want)
		}
	}
}
