package generate

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"tally/datasets"
	"tally/store"
)

// TestProcessesShareWork: two executions of the same plan on one store
// file (as two processes would) generate every sample once between them,
// and both end with every sample scored.
func TestProcessesShareWork(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	be := &fakeModel{slots: 2}
	var wg sync.WaitGroup
	sums := make([]Summary, 2)
	errs := make([]error, 2)
	for i := range sums {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := store.Open(ctx, path)
			if err != nil {
				errs[i] = err
				return
			}
			defer st.Close()
			job := newJob(40, 32, dot, nl)
			p, err := MakePlan(ctx, st, be, []*Job{job})
			if err != nil {
				errs[i] = err
				return
			}
			sums[i], errs[i] = Execute(ctx, st, be, p, Options{ClaimBatch: 4, Poll: 5 * time.Millisecond})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("execution %d: %v", i, err)
		}
	}
	made := sums[0].GenerationsNew + sums[1].GenerationsNew
	if made != 40 || len(be.tokensOf()) != 40 {
		t.Errorf("%d generations made (%d prompts run), want 40 once each; summaries %+v", made, len(be.tokensOf()), sums)
	}
	st := openAt(t, path)
	p, err := MakePlan(ctx, st, be, []*Job{newJob(40, 32, dot, nl)})
	if err != nil {
		t.Fatal(err)
	}
	if p.Counts[Complete] != 80 {
		t.Errorf("after both: %v, want 80 complete", p.Counts)
	}
}

// TestDeadClaimTakenOver: work claimed by an owner whose lease expired is
// taken over; work claimed by a live owner is waited for.
func TestDeadClaimTakenOver(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	be := &fakeModel{slots: 2}
	job := newJob(6, 16, dot)
	p, err := MakePlan(ctx, st, be, []*Job{job})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, it := range p.Items {
		keys = append(keys, it.Key)
	}
	if _, err := st.Claim(ctx, "dead", keys[:3], 0, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	sum, err := Execute(ctx, st, be, p, Options{Lease: time.Second, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if sum.ClaimsTakenOver != 3 || sum.GenerationsNew != 6 {
		t.Errorf("summary %+v, want 3 claims taken over and 6 generated", sum)
	}
	if n, _ := st.Counts(ctx); n["claims"] != 0 {
		t.Errorf("claims left: %v", n)
	}
}

func openAt(t *testing.T, path string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestStaleScoresRecomputed: a changed reference or scoring spec makes the
// stored scores stale (plan says so); CurrentResults recomputes them, in
// memory or stored, and a metric no longer produced disappears.
func TestStaleScoresRecomputed(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	be := &fakeModel{slots: 2}
	job := newJob(5, 16, dot)
	job.Spec = "v1"
	job.Score = func(pred string, s datasets.Sample) (map[string]float64, error) {
		return map[string]float64{"len": float64(len(pred)), "refs": float64(len(s.References))}, nil
	}
	runJobs(t, st, be, job)
	plan := func() *Plan {
		t.Helper()
		p, err := MakePlan(ctx, st, be, []*Job{job})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	// A changed reference: that pair is stale.
	job.Samples[2].References = json.RawMessage(`["12345"]`)
	p := plan()
	if p.Stale != 1 || p.Counts[Answerable] != 1 || p.Counts[Complete] != 4 {
		t.Fatalf("after a reference changed: stale %d, %v", p.Stale, p.Counts)
	}
	res, rep, err := CurrentResults(ctx, st, p, ScoreOptions{})
	if err != nil || rep.Recomputed != 1 {
		t.Fatalf("recomputed %d, %v", rep.Recomputed, err)
	}
	for _, x := range res["t"]["dot"]["refs"] {
		if x.SampleID == "s002" && x.Value != float64(len(`["12345"]`)) {
			t.Errorf("s002 refs score %v, from the old reference", x.Value)
		}
	}
	if p := plan(); p.Stale != 1 {
		t.Errorf("a read-only recomputation wrote the store: stale %d", p.Stale)
	}

	// A metric dropped from the task (its spec changes): every pair is
	// stale; written, the dropped metric leaves the results and the store.
	job.Spec, job.Score = "v2", lenScorer
	p = plan()
	if p.Stale != 5 {
		t.Fatalf("after the spec changed: stale %d", p.Stale)
	}
	res, rep, err = CurrentResults(ctx, st, p, ScoreOptions{Write: true})
	if err != nil || rep.Recomputed != 5 {
		t.Fatalf("recomputed %d, %v", rep.Recomputed, err)
	}
	if _, ok := res["t"]["dot"]["refs"]; ok {
		t.Error("a dropped metric is still in the results")
	}
	if p := plan(); p.Stale != 0 || p.Counts[Complete] != 5 {
		t.Errorf("after writing: stale %d, %v", p.Stale, p.Counts)
	}
	keys := make([]string, 0, len(p.Items))
	for _, it := range p.Items {
		keys = append(keys, it.Key)
	}
	stored, _ := st.ScoresFor(ctx, keys)
	for _, x := range stored {
		if x.Metric == "refs" {
			t.Fatalf("a dropped metric is still stored: %+v", x)
		}
	}
}
