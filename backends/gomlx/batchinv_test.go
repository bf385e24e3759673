package gomlx

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"tally/backends"
)

// sampleRun is what one request computed: its last prompt logits (from
// the prefill) and its greedy tokens.
type sampleRun struct {
	logits []float32
	ids    []int
}

// runTogether runs reqs in one Generate call and returns, by request
// index, each one's last prompt logits and greedy tokens.
func runTogether(t *testing.T, m *Model, reqs []backends.Request) map[int]sampleRun {
	t.Helper()
	out := map[int]sampleRun{}
	m.prefillHook = func(i int, l []float32) { out[i] = sampleRun{logits: slices.Clone(l)} }
	defer func() { m.prefillHook = nil }()
	ids, _ := collect(t, m, reqs, nil)
	for _, r := range reqs {
		s := out[r.Index]
		s.ids = ids[r.Index]
		out[r.Index] = s
	}
	return out
}

// logitBits counts the logits whose float32 bits differ, and their largest
// difference.
func logitBits(a, b []float32) (n int, maxAbs float64) {
	if len(a) != len(b) {
		return max(len(a), len(b)), math.Inf(1)
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			n++
			maxAbs = math.Max(maxAbs, math.Abs(float64(a[i])-float64(b[i])))
		}
	}
	return n, maxAbs
}

// TestBatchInvariance: a sample's last prompt logits (bit for bit) and its
// 64 greedy tokens are the same alone and in any batch, on every fixture
// model in every --dtype mode (float32, bfloat16 and float16 on the
// float32 fixture, auto on its BF16 copy, which computes in bfloat16 on
// AVX-512 and in float32, exactly widened, on the other kernel families).
// Each fixture prompt (1 to 2,000 tokens) runs alone first; then the
// compositions: all 8 together, mixed groups of 2, 3 and 5 (other lengths,
// other batch buckets, rows refilled as others finish), the same prompts
// prefilled in many chunks (a small prefill budget), and two requests
// sharing a 600-token prefix (ShareKey: the prefix prefilled once and
// copied, the rest prefilled from position 600). Before the products were
// made batch-invariant (see invariance), every prompt's float32 logits in
// the batch of 8 differed from its logits alone (up to 8e-6), and in
// bfloat16 greedy tokens parted (llama-tiny's 1,000-token prompt at its
// 64th token).
func TestBatchInvariance(t *testing.T) {
	ctx := context.Background()
	type composition struct {
		name    string
		prompts []int
		budget  int  // Options.PrefillBudget (0: the default)
		shared  bool // prompts 8 and 6 with one ShareKey
	}
	comps := []composition{
		{name: "all 8", prompts: []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{name: "three", prompts: []int{6, 1, 4}},
		{name: "two", prompts: []int{3, 7}},
		{name: "five", prompts: []int{0, 2, 5, 6, 7}},
		{name: "chunked", prompts: []int{7, 5, 3, 1}, budget: 1 << 20},
		{name: "shared prefix", prompts: []int{8, 6}, shared: true},
	}
	for _, name := range fixtureModels {
		e := loadExpected(t, name)
		// Prompt 8 is the first 600 tokens of prompt 6 then prompt 3.
		prompts := append(slices.Clone(e.Prompts), append(slices.Clone(e.Prompts[6][:600]), e.Prompts[3]...))
		dir := filepath.Join(sharedDir(t), "fixtures", "models", name)
		dir16, _ := roundedCheckpoint(t, name)
		for _, mc := range []struct {
			label, dir string
			mode       DType
		}{
			{"float32", dir, DTypeFloat32},
			{"bfloat16", dir, DTypeBFloat16},
			{"float16", dir, DTypeFloat16},
			{"auto on BF16", dir16, DTypeAuto},
		} {
			t.Run(name+"/"+mc.label, func(t *testing.T) {
				open := func(budget int) *Model {
					m, err := Open(ctx, mc.dir, Options{DType: mc.mode, FingerprintCache: "-", MaxBatch: 8, PrefillBudget: budget})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { m.Close() })
					return m
				}
				m := open(0)
				skip := func(i int) bool { return testing.Short() && len(prompts[i]) > 300 }
				request := func(i int) backends.Request {
					return backends.Request{Index: i, PromptIDs: prompts[i], MaxTokens: 64}
				}
				alone := map[int]sampleRun{}
				for i := range prompts {
					if !skip(i) {
						alone[i] = runTogether(t, m, []backends.Request{request(i)})[i]
					}
				}
				for _, comp := range comps {
					var reqs []backends.Request
					for _, i := range comp.prompts {
						if !skip(i) {
							r := request(i)
							if comp.shared {
								r.ShareKey = "document"
							}
							reqs = append(reqs, r)
						}
					}
					mc := m
					if comp.budget > 0 {
						mc = open(comp.budget)
					}
					got := runTogether(t, mc, reqs)
					for _, r := range reqs {
						i := r.Index
						what := fmt.Sprintf("prompt %d (%d tokens) in %q", i, len(prompts[i]), comp.name)
						if n, d := logitBits(got[i].logits, alone[i].logits); n > 0 {
							t.Errorf("%s: %d of %d last logits differ from the prompt's alone (by up to %.3g)", what, n, len(alone[i].logits), d)
						}
						if !slices.Equal(got[i].ids, alone[i].ids) {
							t.Errorf("%s: greedy tokens %v, alone %v", what, got[i].ids, alone[i].ids)
						}
					}
					if comp.budget > 0 && !testing.Short() && mc.Stats().PrefillCalls <= len(reqs) {
						t.Errorf("%q: %d prefill calls for %d requests: the budget did not split the prompts", comp.name, mc.Stats().PrefillCalls, len(reqs))
					}
					if comp.shared && !testing.Short() && m.Stats().SharedTokens == 0 {
						t.Errorf("%q: no prefix was shared", comp.name)
					}
				}
			})
		}
	}
}
