package generate

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tally/backends"
	"tally/datasets"
	"tally/store"
)

// byteTok is a tokenizer whose ids are the bytes of the text.
type byteTok struct{}

func (byteTok) Encode(text string, _ bool) ([]int, error) {
	ids := make([]int, len(text))
	for i := 0; i < len(text); i++ {
		ids[i] = int(text[i])
	}
	return ids, nil
}

func (byteTok) Decode(ids []int, _ bool) (string, error) {
	b := make([]byte, len(ids))
	for i, id := range ids {
		b[i] = byte(id)
	}
	return string(b), nil
}

// fakeModel is a deterministic "greedy" model: the next byte is a hash of
// every id so far, drawn from an alphabet where '.', '\n' and ';' are common,
// so continuing from a stored prefix gives exactly what an uninterrupted
// generation gives. It never emits EOS.
type fakeModel struct {
	slots     int
	ctxLen    int
	generated atomic.Int64    // new tokens produced
	prefilled atomic.Int64    // prompt + prefix tokens consumed
	fail      map[string]bool // prompts whose requests fail (error events)

	mu        sync.Mutex
	perPrompt map[string]int // new tokens per prompt
}

// tokensOf returns the new tokens generated for each prompt.
func (f *fakeModel) tokensOf() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for k, v := range f.perPrompt {
		out[k] = v
	}
	return out
}

const alphabet = "abcdefgh ij12.\n;5 xyz.,"

func (f *fakeModel) next(ids []int) int {
	h := fnv.New64a()
	var b [4]byte
	for _, id := range ids {
		b[0], b[1], b[2], b[3] = byte(id), byte(id>>8), byte(id>>16), byte(id>>24)
		h.Write(b[:])
	}
	return int(alphabet[h.Sum64()%uint64(len(alphabet))])
}

func (f *fakeModel) Name() string                                { return "fake" }
func (f *fakeModel) Fingerprint(context.Context) (string, error) { return "fake-v1", nil }
func (f *fakeModel) Tokenizer() backends.Tokenizer               { return byteTok{} }
func (f *fakeModel) ContextLength() int                          { return f.ctxLen }
func (f *fakeModel) Slots() int                                  { return f.slots }
func (f *fakeModel) Close() error                                { return nil }

func (f *fakeModel) Generate(ctx context.Context, reqs []backends.Request, sink backends.Sink) error {
	var wg sync.WaitGroup
	work := make(chan backends.Request)
	for w := 0; w < max(1, f.slots); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				f.one(ctx, r, sink)
			}
		}()
	}
	defer wg.Wait()
	defer close(work)
	for _, r := range reqs {
		select {
		case work <- r:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (f *fakeModel) one(ctx context.Context, r backends.Request, sink backends.Sink) {
	if f.fail[r.Prompt] {
		sink(backends.Event{Index: r.Index, Done: true, Finish: backends.FinishError, Err: fmt.Errorf("injected failure")})
		return
	}
	ids := append(append([]int(nil), r.PromptIDs...), r.Prefix...)
	if f.ctxLen > 0 && len(r.PromptIDs) >= f.ctxLen {
		sink(backends.Event{Index: r.Index, Done: true, Finish: backends.FinishContext, Err: backends.ErrContextOverflow})
		return
	}
	f.prefilled.Add(int64(len(ids)))
	for n := 0; n < r.MaxTokens; n++ {
		if ctx.Err() != nil {
			return
		}
		id := f.next(ids)
		ids = append(ids, id)
		f.generated.Add(1)
		f.mu.Lock()
		if f.perPrompt == nil {
			f.perPrompt = map[string]int{}
		}
		f.perPrompt[r.Prompt]++
		f.mu.Unlock()
		if !sink(backends.Event{Index: r.Index, Text: string(rune(id)), IDs: []int{id}}) {
			sink(backends.Event{Index: r.Index, Done: true, Finish: backends.FinishStop, PromptTokens: len(r.PromptIDs), GenTokens: n + 1})
			return
		}
	}
	sink(backends.Event{Index: r.Index, Done: true, Finish: backends.FinishLength, PromptTokens: len(r.PromptIDs), GenTokens: r.MaxTokens})
}

func testSamples(n int) []datasets.Sample {
	out := make([]datasets.Sample, n)
	for i := range out {
		out[i] = datasets.Sample{Task: "t", ID: fmt.Sprintf("s%03d", i), Prompt: fmt.Sprintf("Question %d: what?\nAnswer:", i),
			References: json.RawMessage(`["12"]`)}
	}
	return out
}

// lenScorer scores the prediction's length, so any truncation difference
// shows in the scores.
func lenScorer(pred string, _ datasets.Sample) (map[string]float64, error) {
	return map[string]float64{"len": float64(len(pred))}, nil
}

func newJob(n, budget int, settings ...StopSetting) *Job {
	return &Job{Task: "t", Samples: testSamples(n), Settings: settings, MaxTokens: budget, Score: lenScorer}
}

func openStore(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func runJobs(t testing.TB, st *store.Store, be backends.Backend, jobs ...*Job) (*Plan, Summary) {
	t.Helper()
	ctx := context.Background()
	p, err := MakePlan(ctx, st, be, jobs)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Execute(ctx, st, be, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p, sum
}

var (
	dot  = StopSetting{"dot", []string{"."}}
	nl   = StopSetting{"nl", []string{"\n"}}
	semi = StopSetting{"semi", []string{";"}}
	pair = StopSetting{"pair", []string{"1", "2"}}
	none = StopSetting{"none", nil}
)

func TestPlanStatuses(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	be := &fakeModel{slots: 4}
	runJobs(t, st, be, newJob(30, 64, dot))

	// Same setting: complete. A setting with no stop under the same budget:
	// the stored text ended at '.', so it needs continuing (or is answerable
	// when the record ended by budget).
	p, err := MakePlan(ctx, st, be, []*Job{newJob(30, 64, dot, none)})
	if err != nil {
		t.Fatal(err)
	}
	if p.Counts[Complete] != 30 {
		t.Errorf("dot: %d complete, want 30 (%v)", p.Counts[Complete], p.Counts)
	}
	if p.Counts[Continue]+p.Counts[Answerable] != 30 || p.Counts[Continue] == 0 {
		t.Errorf("none: counts %v, want continue+answerable = 30 with some continue", p.Counts)
	}
	for _, it := range p.Items {
		if it.Statuses[1] == Continue && (!it.Continue || it.NewTokens != 64-it.Stored.NTokens) {
			t.Errorf("%s: continue item with NewTokens %d, stored %d", it.Sample.ID, it.NewTokens, it.Stored.NTokens)
		}
	}
	// New samples are missing; a shorter budget is answerable from the stored record.
	p, err = MakePlan(ctx, st, be, []*Job{newJob(35, 64, dot), newJob(30, 2, dot)})
	if err != nil {
		t.Fatal(err)
	}
	if p.Counts[Missing] != 5 || p.Counts[Complete] != 30 || p.Counts[Answerable] != 30 {
		t.Errorf("counts %v, want 5 missing, 30 complete, 30 answerable", p.Counts)
	}
}

func TestFailedAndContext(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	job := newJob(12, 16, dot)
	job.Samples[5].Prompt = "a prompt that is much longer than the thirty-token context window"
	be := &fakeModel{slots: 2, ctxLen: 30, fail: map[string]bool{job.Samples[0].Prompt: true, job.Samples[1].Prompt: true}}
	_, sum := runJobs(t, st, be, job)
	if sum.Errors != 3 {
		t.Errorf("errors %d, want 3 (2 failures, 1 context)", sum.Errors)
	}
	if len(sum.Overflowed) != 1 || len(sum.ErrorSamples) != 2 {
		t.Errorf("overflowed %v, failed %v", sum.Overflowed, sum.ErrorSamples)
	}
	p, err := MakePlan(ctx, st, be, []*Job{job})
	if err != nil {
		t.Fatal(err)
	}
	if p.Counts[Failed] != 3 {
		t.Errorf("counts %v, want 3 failed (2 errors, 1 context overflow)", p.Counts)
	}
	res, err := ReadResults(ctx, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if c := counts(res)["t"]["dot"]; c.Scored != 9 || c.Failed != 3 {
		t.Errorf("counts %+v, want 9 scored, 3 failed", c)
	}
	if f := res.Failures(); len(f) != 3 || !strings.Contains(strings.Join(f, "\n"), "exceeds the model's context") {
		t.Errorf("failures %v", f)
	}
	// Failed samples enter the mean as 0.
	var sum9 float64
	for _, x := range res["t"]["dot"]["len"] {
		sum9 += x.Value
	}
	if got := float64(means(res)["t"]["dot"]["len"]); got != sum9/12 {
		t.Errorf("mean %v, want %v (failed as 0 over 12)", got, sum9/12)
	}
	// The rerun retries exactly the failed ones.
	be.fail = nil
	before := be.generated.Load()
	_, sum = runJobs(t, st, be, job)
	if sum.GenerationsNew != 2 || be.generated.Load() == before {
		t.Errorf("rerun generated %d new, want 2", sum.GenerationsNew)
	}
	g, _ := st.Generations(ctx, "", []string{Key("fake-v1", mustEncode(job.Samples[5].Prompt), "")})
	for _, x := range g {
		if x.Finish != backends.FinishContext || x.Error == "" {
			t.Errorf("overflow record: finish %q error %q", x.Finish, x.Error)
		}
	}
	if len(g) != 1 {
		t.Errorf("overflow record not stored")
	}
}

func mustEncode(s string) []int { ids, _ := byteTok{}.Encode(s, true); return ids }

// scoresOf returns sample -> setting -> value of the "len" metric.
func scoresOf(t testing.TB, st *store.Store, p *Plan) map[string]map[string]float64 {
	t.Helper()
	res, err := ReadResults(context.Background(), st, p)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for set, byMetric := range res["t"] {
		for _, x := range byMetric["len"] {
			if out[x.SampleID] == nil {
				out[x.SampleID] = map[string]float64{}
			}
			out[x.SampleID][set] = x.Value
		}
	}
	return out
}

// TestOnePassEqualsSeparateRuns checks that scoring K settings from one
// pass gives the scores each setting gets when run alone.
func TestOnePassEqualsSeparateRuns(t *testing.T) {
	settings := []StopSetting{dot, nl, semi, pair}
	st := openStore(t)
	p, _ := runJobs(t, st, &fakeModel{slots: 3}, newJob(40, 48, settings...))
	together := scoresOf(t, st, p)
	for _, s := range settings {
		st1 := openStore(t)
		p1, _ := runJobs(t, st1, &fakeModel{slots: 3}, newJob(40, 48, s))
		alone := scoresOf(t, st1, p1)
		for id, v := range alone {
			if together[id][s.Name] != v[s.Name] {
				t.Errorf("%s under %s: one pass %v, alone %v", id, s.Name, together[id][s.Name], v[s.Name])
			}
		}
	}
}

// multiSettingTokens returns the tokens generated for K settings in one
// pass, for each setting alone, and the per-sample bound: the sum over
// samples of the most demanding setting's tokens for that sample.
func multiSettingTokens(t testing.TB, n, budget int, settings []StopSetting) (onePass int64, alone []int64, bound int64) {
	be := &fakeModel{slots: 4}
	runJobs(t, openStore(t), be, newJob(n, budget, settings...))
	onePass = be.generated.Load()
	most := map[string]int{}
	for _, s := range settings {
		b := &fakeModel{slots: 4}
		runJobs(t, openStore(t), b, newJob(n, budget, s))
		alone = append(alone, b.generated.Load())
		for p, v := range b.tokensOf() {
			most[p] = max(most[p], v)
		}
	}
	for _, v := range most {
		bound += int64(v)
	}
	return onePass, alone, bound
}

// TestOnePassCost checks the cost of comparing K settings in one pass: per
// sample it is exactly what the most demanding setting costs alone (the pass
// ends when the last setting stops: no overhead), and never more than
// separate runs.
func TestOnePassCost(t *testing.T) {
	for _, k := range []int{2, 4} {
		one, alone, bound := multiSettingTokens(t, 60, 64, []StopSetting{dot, nl, semi, pair}[:k])
		var sum int64
		for _, a := range alone {
			sum += a
		}
		if one != bound {
			t.Errorf("K=%d: one pass %d tokens, per-sample most demanding setting %d", k, one, bound)
		}
		if one > sum {
			t.Errorf("K=%d: one pass %d tokens > separate runs %d", k, one, sum)
		}
		t.Logf("K=%d: one pass %d tokens = %.3fx the per-sample most demanding setting, %.3fx the first setting alone, %.3fx separate runs",
			k, one, float64(one)/float64(bound), float64(one)/float64(alone[0]), float64(one)/float64(sum))
	}
}

// TestRerunContinues runs with '.', then with '\n' on the same store: the
// rerun generates only the tokens the first run had not (continuation from
// the stored ids), and its scores equal a fresh '\n' run's.
func TestRerunContinues(t *testing.T) {
	st := openStore(t)
	be := &fakeModel{slots: 4}
	runJobs(t, st, be, newJob(50, 64, dot))
	firstPer := be.tokensOf()

	fresh := &fakeModel{slots: 4}
	stFresh := openStore(t)
	pFresh, _ := runJobs(t, stFresh, fresh, newJob(50, 64, nl))
	needed := fresh.generated.Load()

	before := be.generated.Load()
	p, sum := runJobs(t, st, be, newJob(50, 64, nl))
	rerun := be.generated.Load() - before
	var notGenerated int64
	for p, v := range fresh.tokensOf() {
		notGenerated += int64(max(0, v-firstPer[p]))
	}
	if sum.GenerationsContinued == 0 {
		t.Fatal("no generation was continued")
	}
	if float64(rerun) > 1.05*float64(notGenerated) {
		t.Errorf("rerun generated %d tokens; the first run had left %d (ratio %.3f > 1.05)", rerun, notGenerated, float64(rerun)/float64(notGenerated))
	}
	got, want := scoresOf(t, st, p), scoresOf(t, stFresh, pFresh)
	for id, v := range want {
		if got[id]["nl"] != v["nl"] {
			t.Errorf("%s: continued %v, fresh %v", id, got[id]["nl"], v["nl"])
		}
	}
	t.Logf("rerun %d tokens, not generated by the first run %d (%.3fx); a peer regenerates %d (%.3fx)", rerun, notGenerated,
		float64(rerun)/float64(notGenerated), needed, float64(needed)/float64(notGenerated))
	// A third run with the same settings does no model work.
	before = be.generated.Load()
	_, sum = runJobs(t, st, be, newJob(50, 64, nl, dot))
	if be.generated.Load() != before || sum.GenerationsReused != 50 {
		t.Errorf("third run generated %d tokens, reused %d", be.generated.Load()-before, sum.GenerationsReused)
	}
}

// TestCancelResumes cancels a run midway: what finished is committed, and
// the resumed run ends with the scores of an uninterrupted one.
func TestCancelResumes(t *testing.T) {
	st := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	be := &cancelAfter{fakeModel: fakeModel{slots: 2}, after: 300, cancel: cancel}
	job := newJob(40, 64, dot, nl)
	p, err := MakePlan(ctx, st, be, []*Job{job})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Execute(ctx, st, be, p, Options{}); err == nil {
		t.Fatal("cancelled run returned no error")
	}
	n, _ := st.Counts(context.Background())
	if n["generations"] == 0 || n["generations"] >= 40 {
		t.Fatalf("after cancel: %d generations stored, want some but not all", n["generations"])
	}
	p2, _ := runJobs(t, st, &fakeModel{slots: 2}, newJob(40, 64, dot, nl))
	stRef := openStore(t)
	pRef, _ := runJobs(t, stRef, &fakeModel{slots: 3}, newJob(40, 64, dot, nl))
	got, want := scoresOf(t, st, p2), scoresOf(t, stRef, pRef)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("resumed scores differ:\n got %v\nwant %v", got, want)
	}
	n2, _ := st.Counts(context.Background())
	nRef, _ := stRef.Counts(context.Background())
	if n2["generations"] != nRef["generations"] || n2["scores"] != nRef["scores"] {
		t.Errorf("counts %v, uninterrupted %v", n2, nRef)
	}
}

type cancelAfter struct {
	fakeModel
	after  int64
	cancel func()
}

func (c *cancelAfter) Generate(ctx context.Context, reqs []backends.Request, sink backends.Sink) error {
	return c.fakeModel.Generate(ctx, reqs, func(ev backends.Event) bool {
		if c.fakeModel.generated.Load() >= c.after {
			c.cancel()
		}
		return sink(ev)
	})
}

func TestSharedStops(t *testing.T) {
	got := sharedStops([]StopSetting{{"a", []string{".", "\n"}}, {"b", []string{"\n", "x"}}})
	if len(got) != 1 || got[0] != "\n" {
		t.Errorf("shared %q", got)
	}
	if len(sharedStops([]StopSetting{dot, none})) != 0 {
		t.Error("a setting with no stop shares nothing")
	}
}

// BenchmarkStopSettings reports the generated tokens of comparing 2 and 4
// settings in one pass, as a ratio to the most demanding setting alone and
// to running each setting separately.
func BenchmarkStopSettings(b *testing.B) {
	for _, k := range []int{2, 4} {
		b.Run(fmt.Sprintf("K=%d", k), func(b *testing.B) {
			var one, bound int64
			var alone []int64
			for i := 0; i < b.N; i++ {
				one, alone, bound = multiSettingTokens(b, 100, 64, []StopSetting{dot, nl, semi, pair}[:k])
			}
			var sum int64
			for _, a := range alone {
				sum += a
			}
			b.ReportMetric(float64(one)/float64(alone[0]), "x_first_alone")
			b.ReportMetric(float64(one)/float64(bound), "x_per_sample_most_demanding")
			b.ReportMetric(float64(one)/float64(sum), "x_separate_runs")
		})
	}
}

// BenchmarkPlan100k measures planning over 100,000 stored records.
func BenchmarkPlan100k(b *testing.B) {
	ctx := context.Background()
	st := openStore(b)
	be := &fakeModel{slots: 1}
	job := newJob(100000, 8, dot)
	p, err := MakePlan(ctx, st, be, []*Job{job})
	if err != nil {
		b.Fatal(err)
	}
	var gens []store.Generation
	for _, it := range p.Items {
		gens = append(gens, store.Generation{Key: it.Key, Fingerprint: "fake-v1", Task: "t", SampleID: it.Sample.ID,
			Text: "12.5\nabc", IDs: []int{1, 2, 3, 4, 5, 6, 7, 8}, Offsets: []int{0, 1, 2, 3, 4, 5, 6, 7}, NTokens: 8, Budget: 8, Finish: "length"})
		if len(gens) == 1000 {
			if err := st.PutGenerations(ctx, gens, nil); err != nil {
				b.Fatal(err)
			}
			gens = gens[:0]
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p, err := MakePlan(ctx, st, be, []*Job{job})
		if err != nil || p.Counts[Answerable] != 100000 {
			b.Fatal(err, p.Counts)
		}
	}
}

// TestUnscorableDoesNotStopTheRun: a metric that raises on some predictions
// (as L-Eval's reference does on sci_fi outputs without "[fact:") leaves
// those pairs out of its mean, records them, and the run completes.
func TestUnscorableDoesNotStopTheRun(t *testing.T) {
	st := openStore(t)
	job := newJob(20, 16, dot)
	job.Score = func(pred string, s datasets.Sample) (map[string]float64, error) {
		if s.ID < "s005" {
			return nil, fmt.Errorf("reference raises")
		}
		return map[string]float64{"len": float64(len(pred))}, nil
	}
	p, sum := runJobs(t, st, &fakeModel{slots: 2}, job)
	if len(sum.Unscorable) != 5 || !strings.Contains(sum.Unscorable[0], "reference raises") {
		t.Fatalf("unscorable %v", sum.Unscorable)
	}
	res, err := ReadResults(context.Background(), st, p)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res["t"]["dot"]["len"]); n != 15 {
		t.Errorf("%d samples scored, want 15", n)
	}
	if n := len(res["t"]["dot"][Unscorable]); n != 5 {
		t.Errorf("%d unscorable rows, want 5", n)
	}
	// Rescoring reports the same pairs.
	var got Results
	rep, err := Rescore(context.Background(), st, &fakeModel{slots: 2}, []*Job{job}, func(_ *Job, _ *Plan, res Results) error { got = res; return nil })
	if err != nil || rep.Scored != 20 || len(rep.Unscorable) != 5 || len(got["t"]["dot"]["len"]) != 15 {
		t.Errorf("rescore: %+v %v", rep, err)
	}
}

func TestNextClaimBatch(t *testing.T) {
	for _, c := range []struct {
		name          string
		cur, least, n int
		took          time.Duration
		want          int
	}{
		{"fast full batch doubles", 32, 32, 32, FastBatch / 2, 64},
		{"growth stops at the cap", MaxClaimBatch, 32, MaxClaimBatch, FastBatch / 2, MaxClaimBatch},
		{"a batch above the cap stays", 2 * MaxClaimBatch, 2 * MaxClaimBatch, 2 * MaxClaimBatch, 0, 2 * MaxClaimBatch},
		{"fast partial batch stays", 64, 32, 10, FastBatch / 2, 64},
		{"moderate batch stays", 64, 32, 64, 2 * FastBatch, 64},
		{"slow batch halves", 128, 32, 128, 5 * FastBatch, 64},
		{"slow batch stops at the least", 32, 32, 32, time.Minute, 32},
	} {
		if got := nextClaimBatch(c.cur, c.least, c.n, c.took); got != c.want {
			t.Errorf("%s: nextClaimBatch(%d, %d, %d, %v) = %d, want %d", c.name, c.cur, c.least, c.n, c.took, got, c.want)
		}
	}
}

// TestFailReason: a failed generation says why, with the prompt's size
// when the backend counted it and the backend's own words when it refused
// the prompt on an estimate.
func TestFailReason(t *testing.T) {
	for _, tc := range []struct {
		g    *store.Generation
		want string
	}{
		{nil, ""},
		{&store.Generation{Finish: backends.FinishEOS}, ""},
		{&store.Generation{Finish: backends.FinishError}, "backend error"},
		{&store.Generation{Finish: backends.FinishError, Error: "HTTP 500"}, "backend error: HTTP 500"},
		{&store.Generation{Finish: backends.FinishContext, PromptTokens: 6920}, "prompt (6920 tokens) exceeds the model's context"},
		{&store.Generation{Finish: backends.FinishContext, Error: "ollama: about 8385 prompt tokens + 256 new > context 4096: prompt exceeds the model's context"},
			"ollama: about 8385 prompt tokens + 256 new > context 4096: prompt exceeds the model's context"},
		{&store.Generation{Finish: backends.FinishContext}, "prompt exceeds the model's context"},
	} {
		if got := failReason(tc.g); got != tc.want {
			t.Errorf("failReason(%+v) = %q, want %q", tc.g, got, tc.want)
		}
	}
}
