package generate

import (
	"testing"

	"tally/backends"
	"tally/store"
)

// TestCapBudget (issue 23, finding 1): a token budget is capped by the
// room the context leaves after the prompt, when both are known.
func TestCapBudget(t *testing.T) {
	for _, tc := range []struct{ budget, prompt, ctx, want int }{
		{1000, 98, 1024, 926},
		{200, 889, 1024, 135},
		{12, 98, 1024, 12},
		{MaxBudget, 98, 1024, 926},
		{100, 0, 1024, 100},    // server-side tokenisation: unknown prompt length
		{100, 98, 0, 100},      // unknown context
		{100, 1024, 1024, 100}, // the prompt alone overflows: it fails, whatever the budget
	} {
		if got := capBudget(tc.budget, tc.prompt, tc.ctx); got != tc.want {
			t.Errorf("capBudget(%d, %d, %d) = %d, want %d", tc.budget, tc.prompt, tc.ctx, got, tc.want)
		}
	}
}

// TestFilledContextAnswers (issue 23, finding 1): a generation that fills
// the context answers every setting, whether it says so ("context-full")
// or an earlier tally recorded it as "length"; one short of it still
// needs the rest of the capped budget.
func TestFilledContextAnswers(t *testing.T) {
	none := StopSetting{Name: "none"}
	it := &Item{Job: &Job{MaxTokens: 1000}, Budget: 926}
	for _, tc := range []struct {
		finish string
		n      int
		ok     bool
		needed int
	}{
		{backends.FinishContextFull, 926, true, 0},
		{backends.FinishLength, 926, true, 0},
		{backends.FinishLength, 900, false, 26},
		{backends.FinishLength, 12, false, 914},
	} {
		g := &store.Generation{Text: "x", NTokens: tc.n, Finish: tc.finish}
		if _, ok, need := it.truncate(g, none); ok != tc.ok || need != tc.needed {
			t.Errorf("%s after %d tokens: ok %v need %d; want %v %d", tc.finish, tc.n, ok, need, tc.ok, tc.needed)
		}
	}
}
