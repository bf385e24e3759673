package generate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"tally/datasets"
	"tally/store"
)

// renamed returns n samples whose prompts are not testSamples' (so nothing
// stored answers them).
func renamed(n int) []datasets.Sample {
	out := testSamples(n)
	for i := range out {
		out[i].ID, out[i].Prompt = fmt.Sprintf("r%03d", i), fmt.Sprintf("Another question %d?\nAnswer:", i)
	}
	return out
}

// TestPlanEstimate is item 5 of issue 34: plan's estimate assumed every
// request runs to its budget (2–4× the time taken). It expects each
// request to stop where the model's stored generations stopped under the
// same settings (a budget-only setting: at the budget), and times the
// tokens at the prefill and decode speeds earlier runs measured, or at
// their rate of generated tokens when the backend times no phases; with no
// earlier run the time is unknown and the plan says so.
func TestPlanEstimate(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	be := &fakeModel{slots: 4}
	runJobs(t, st, be, newJob(40, 64, dot, nl))

	fresh := &Job{Task: "t", Samples: renamed(40), Settings: []StopSetting{dot, nl}, MaxTokens: 64, Score: lenScorer}
	p, err := MakePlan(ctx, st, be, []*Job{fresh})
	if err != nil {
		t.Fatal(err)
	}
	if p.Estimate.Seconds != -1 || p.EstimatedSeconds != -1 || !strings.Contains(p.Estimate.Basis(), "no earlier run") {
		t.Errorf("no runs measured: estimate %+v, basis %q", p.Estimate, p.Estimate.Basis())
	}
	before := be.generated.Load()
	if _, err := Execute(ctx, st, be, p, Options{}); err != nil {
		t.Fatal(err)
	}
	actual := float64(be.generated.Load() - before)
	got := float64(p.Estimate.Tokens)
	t.Logf("expected %v tokens, generated %v, budget bound %d", got, actual, p.TokensToGenerate)
	if p.Estimate.Lengths != 40 || got > 1.5*actual || got < actual/1.5 || float64(p.TokensToGenerate) < 2*actual {
		t.Errorf("expected %v tokens (from %d stored generations), generated %v (budget bound %d)", got, p.Estimate.Lengths, actual, p.TokensToGenerate)
	}

	// A budget-only setting continues each stored generation to the
	// budget: exactly the tokens the plan's bound counts.
	longer := newJob(40, 96, dot, nl, none)
	p, err = MakePlan(ctx, st, be, []*Job{longer})
	if err != nil {
		t.Fatal(err)
	}
	if p.Requests != 40 || p.Estimate.Tokens != p.TokensToGenerate {
		t.Errorf("budget-only setting: %d requests, expected %d tokens, want the bound %d", p.Requests, p.Estimate.Tokens, p.TokensToGenerate)
	}

	// Speeds: a native run's stats time prefill and decode apart; a
	// server's run gives a rate of generated tokens.
	for _, tc := range []struct {
		name  string
		stats string
		want  func(e Estimate, prompt int) float64
	}{
		{"native", `{"PrefillSeconds": 2, "DecodeSeconds": 4}`, func(e Estimate, prompt int) float64 {
			// 2000 prompt tokens in 2 s, 200 generated in 4 s, 1 s besides.
			return float64(prompt)/1000 + float64(e.Tokens)/50 + 1
		}},
		{"server", `{}`, func(e Estimate, _ int) float64 { return float64(e.Tokens) / (200.0 / 7) }},
	} {
		st := openStore(t)
		runJobs(t, st, be, newJob(40, 64, dot, nl))
		id, err := st.StartRun(ctx, store.Run{Command: "run", Model: "fake", Fingerprint: "fake-v1", Config: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.FinishRun(ctx, id, store.RunDone, 200, 2000, 7, json.RawMessage(tc.stats)); err != nil {
			t.Fatal(err)
		}
		p, err := MakePlan(ctx, st, be, []*Job{{Task: "t", Samples: renamed(40), Settings: []StopSetting{dot, nl}, MaxTokens: 64, Score: lenScorer}})
		if err != nil {
			t.Fatal(err)
		}
		want := tc.want(p.Estimate, p.PromptTokens)
		if math.Abs(p.Estimate.Seconds-want) > 1e-9 || p.EstimatedSeconds != p.Estimate.Seconds || p.Estimate.Runs != 1 {
			t.Errorf("%s: estimate %+v, want %v s", tc.name, p.Estimate, want)
		}
		t.Logf("%s: %s", tc.name, p.Estimate.Basis())
		// Nothing to run takes no time, whatever the runs' other seconds.
		p, err = MakePlan(ctx, st, be, []*Job{newJob(40, 64, dot, nl)})
		if err != nil {
			t.Fatal(err)
		}
		if p.Requests != 0 || p.Estimate.Seconds != 0 {
			t.Errorf("%s: a plan with nothing to run: %d requests, %v s", tc.name, p.Requests, p.Estimate.Seconds)
		}
	}
}

// TestStopLength: where a stored generation says a request stops under a
// job's settings: the token holding the end of the last setting's first
// match; the budget (+Inf) for a setting with no sequence, or one not
// matched by a generation that ran on for another reason; its length when
// it ended on its own.
func TestStopLength(t *testing.T) {
	g := func(text, finish string) *store.Generation {
		offs := make([]int, len(text))
		for i := range offs {
			offs[i] = i
		}
		return &store.Generation{Text: text, Offsets: offs, NTokens: len(text), Finish: finish}
	}
	inf := math.Inf(1)
	for _, tc := range []struct {
		gen      *store.Generation
		settings []StopSetting
		want     float64
	}{
		{g("7.5\n\nPassage", "stop"), []StopSetting{dot}, 2},
		{g("7.5\n\nPassage", "stop"), []StopSetting{dot, nl}, 4},
		{g("7.5\n\nPassage", "stop"), []StopSetting{semi}, inf},
		{g("7.5\n\nPassage", "eos"), []StopSetting{semi, dot}, 12},
		{g("7.5\n\nPassage", "stop"), []StopSetting{none}, inf},
		{&store.Generation{Text: "ab.cd", NTokens: 10, Finish: "stop"}, []StopSetting{dot}, 6}, // no offsets: by bytes
	} {
		if got := stopLength(tc.gen, tc.settings); got != tc.want {
			t.Errorf("%q %v: %v, want %v", tc.gen.Text, tc.settings, got, tc.want)
		}
	}
	l := stopLengths([]store.Generation{*g("a.", "stop"), *g("abc.", "stop"), *g("abcdef", "length")}, []StopSetting{dot})
	for _, tc := range []struct {
		it   Item
		want float64
	}{
		{Item{NewTokens: 10}, (2 + 4 + 10) / 3.0},
		{Item{NewTokens: 3}, (2 + 3 + 3) / 3.0},
		{Item{NewTokens: 7, Continue: true, Stored: &store.Generation{NTokens: 3}}, (4+10)/2.0 - 3},
		{Item{NewTokens: 7, Continue: true, Stored: &store.Generation{NTokens: 30}}, 7},
	} {
		if got := l.expected(&tc.it); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%+v: expected %v, want %v", tc.it, got, tc.want)
		}
	}
}
