package generate

import (
	"context"
	"sync"
	"testing"

	"tally/backends"
)

// countingProgress adds up what Execute reports to a TokenProgress.
type countingProgress struct {
	mu                      sync.Mutex
	tokens, prefilled, work int
}

func (c *countingProgress) Start(int)   {}
func (c *countingProgress) SampleDone() {}
func (c *countingProgress) Finish()     {}
func (c *countingProgress) Tokens(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tokens += n
}
func (c *countingProgress) Work(prompt, _ int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.work = prompt
}
func (c *countingProgress) SampleEnded(_ string, prompt, _, _ int, _ string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prefilled += prompt
}

// serverLike is fakeModel as a server backend streams it: text pieces of
// up to three tokens without ids, no tokenizer (the plan knows no prompt
// lengths), token counts in the final event; an overflowing prompt's final
// event carries its length, as the native backend's does.
type serverLike struct {
	*fakeModel
	ids bool
}

func (s serverLike) Tokenizer() backends.Tokenizer {
	if s.ids {
		return s.fakeModel.Tokenizer()
	}
	return nil
}

func (s serverLike) Generate(ctx context.Context, reqs []backends.Request, sink backends.Sink) error {
	var mu sync.Mutex
	pending := map[int]string{}
	return s.fakeModel.Generate(ctx, reqs, func(ev backends.Event) bool {
		mu.Lock()
		defer mu.Unlock()
		if ev.Finish == backends.FinishContext {
			ev.PromptTokens = len(reqs[ev.Index].PromptIDs)
		}
		if s.ids {
			return sink(ev)
		}
		if !ev.Done {
			pending[ev.Index] += ev.Text
			if len(pending[ev.Index]) < 3 {
				return true
			}
			ev = backends.Event{Index: ev.Index, Text: pending[ev.Index]}
			delete(pending, ev.Index)
			return sink(ev)
		}
		if p := pending[ev.Index]; p != "" {
			delete(pending, ev.Index)
			sink(backends.Event{Index: ev.Index, Text: p})
		}
		return sink(ev)
	})
}

// TestProgressAddsUpToSummary is item 4 of issue 26: the last progress
// line said "339 tokens" where the summary said 480 (a server streams
// pieces, not tokens), and "4185/4185 prompt tokens prefilled" where the
// summary (and plan) counted 0 for prompts beyond the context. What
// Execute reports to the progress now adds up to the summary's figures.
func TestProgressAddsUpToSummary(t *testing.T) {
	for _, tc := range []struct {
		name string
		be   serverLike
	}{
		{"server pieces", serverLike{fakeModel: &fakeModel{slots: 3}}},
		{"native with overflow", serverLike{fakeModel: &fakeModel{slots: 3, ctxLen: 30}, ids: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			st := openStore(t)
			job := newJob(9, 12, dot, none)
			job.Samples[4].Prompt = "a prompt that is much longer than the thirty-token context window"
			p, err := MakePlan(ctx, st, tc.be, []*Job{job})
			if err != nil {
				t.Fatal(err)
			}
			if want := map[bool]int{true: 0, false: p.Requests}[tc.be.ids]; p.Untokenised != want {
				t.Errorf("plan: %d untokenised prompts, want %d (plan said \"0 prompt tokens\" for a server)", p.Untokenised, want)
			}
			var c countingProgress
			sum, err := Execute(ctx, st, tc.be, p, Options{Progress: &c})
			if err != nil {
				t.Fatal(err)
			}
			if c.tokens != sum.GeneratedTokens || sum.GeneratedTokens == 0 {
				t.Errorf("progress counted %d tokens, summary %d", c.tokens, sum.GeneratedTokens)
			}
			if c.prefilled != sum.PromptTokens {
				t.Errorf("progress counted %d prompt tokens prefilled, summary %d", c.prefilled, sum.PromptTokens)
			}
			if c.work != p.PromptTokens {
				t.Errorf("progress announced %d prompt tokens to prefill, plan %d", c.work, p.PromptTokens)
			}
		})
	}
}
