package gomlx

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"tally/internal/sharedtest"
	"testing"

	"tally/backends"
)

// sharedDir returns ../shared relative to the module root.
func sharedDir(t testing.TB) string {
	t.Helper()
	return sharedtest.Dir(t)
}

type expected struct {
	PromptLengths   []int       `json:"prompt_lengths"`
	Prompts         [][]int     `json:"prompts"`
	LastLogits      [][]float64 `json:"last_logits"`
	FullIndex       int         `json:"full_logits_prompt_index"`
	FullLogits      [][]float64 `json:"full_logits_len33"`
	GreedyNew       int         `json:"greedy_new_tokens"`
	GreedyUnbatched [][]int     `json:"greedy_unbatched"`
	GreedyBatched   [][]int     `json:"greedy_batched"`
}

func loadExpected(t testing.TB, name string) expected {
	t.Helper()
	path := filepath.Join(sharedDir(t), "fixtures", "models", name+".expected.json.gz")
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open fixture: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("gunzip %s: %v", path, err)
	}
	var e expected
	if err := json.NewDecoder(zr).Decode(&e); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return e
}

func openFixture(t testing.TB, name string, opts Options) *Model {
	t.Helper()
	if opts.FingerprintCache == "" {
		opts.FingerprintCache = "-"
	}
	m, err := Open(context.Background(), filepath.Join(sharedDir(t), "fixtures", "models", name), opts)
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// maxRelErr is max|got-want| / max|want|.
func maxRelErr(got []float32, want []float64) float64 {
	var d, w float64
	for i := range want {
		d = math.Max(d, math.Abs(float64(got[i])-float64(float32(want[i]))))
		w = math.Max(w, math.Abs(want[i]))
	}
	return d / w
}

var fixtureModels = []string{"llama-tiny", "qwen2-tiny", "mistral-tiny"}

// TestParityLogits checks the Logits API on the short prompts (the long
// ones are checked through Generate in TestParityGreedy).
func TestParityLogits(t *testing.T) {
	for _, name := range fixtureModels {
		t.Run(name, func(t *testing.T) {
			e := loadExpected(t, name)
			m := openFixture(t, name, Options{})
			for i, p := range e.Prompts[:4] {
				got, err := m.Logits(context.Background(), p)
				if err != nil {
					t.Fatalf("prompt %d: %v", i, err)
				}
				if r := maxRelErr(got, e.LastLogits[i]); r >= 1e-4 {
					t.Errorf("prompt %d (len %d): rel err %.3g", i, len(p), r)
				}
			}
		})
	}
}

// TestParityGreedy checks, per fixture model, the last-position logits of
// all 8 prompts and the greedy ids unbatched (one request per call) and
// batched (all 8 prompts in one call).
func TestParityGreedy(t *testing.T) {
	for _, name := range fixtureModels {
		t.Run(name, func(t *testing.T) {
			e := loadExpected(t, name)
			m := openFixture(t, name, Options{MaxBatch: 8})
			var worst float64
			m.prefillHook = func(i int, logits []float32) {
				r := maxRelErr(logits, e.LastLogits[i])
				worst = math.Max(worst, r)
				if r >= 1e-4 {
					t.Errorf("prompt %d (len %d): last logits rel err %.3g", i, len(e.Prompts[i]), r)
				}
			}
			for i, p := range e.Prompts {
				if testing.Short() && len(p) > 1000 {
					continue // checked by the batched run below
				}
				ids, final := collect(t, m, []backends.Request{{Index: i, PromptIDs: p, MaxTokens: e.GreedyNew}}, nil)
				if !slices.Equal(ids[i], e.GreedyUnbatched[i]) {
					t.Errorf("unbatched prompt %d (len %d): got %v, want %v", i, len(p), ids[i], e.GreedyUnbatched[i])
				}
				if f := final[i]; f.Finish != backends.FinishLength || f.GenTokens != e.GreedyNew || f.PromptTokens != len(p) {
					t.Errorf("unbatched prompt %d: final %+v", i, f)
				}
			}
			var reqs []backends.Request
			for i, p := range e.Prompts {
				reqs = append(reqs, backends.Request{Index: i, PromptIDs: p, MaxTokens: e.GreedyNew})
			}
			ids, _ := collect(t, m, reqs, nil)
			for i := range e.Prompts {
				if !slices.Equal(ids[i], e.GreedyBatched[i]) {
					t.Errorf("batched prompt %d: got %v, want %v", i, ids[i], e.GreedyBatched[i])
				}
			}
			t.Logf("worst last-logits rel err %.3g; stats %+v", worst, m.Stats())
		})
	}
}
