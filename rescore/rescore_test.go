package rescore

import (
	"context"
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"tally/generate"
	"tally/store"
	"tally/tasks"
)

// TestFix stores scores of the demo task under a run that names it and
// checks what Fix makes of each: a score under its current digest is shown
// as stored (even a wrong value: the digest is trusted), a stale one is
// recomputed from the stored prediction and sample and counted, a score
// with no digest (imported) is left alone, and one of a task no run names
// is counted unchecked.
func TestFix(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tc, err := tasks.ResolveWith("demo", nil)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := tc.Load(tasks.LoadOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.StartRun(ctx, store.Run{Command: "run", Config: []byte(`{"tasks":["demo"]}`)}); err != nil {
		t.Fatal(err)
	}
	var samples []store.Sample
	for _, s := range loaded.Samples {
		samples = append(samples, ToStore(s))
	}
	if err := st.PutSamples(ctx, samples); err != nil {
		t.Fatal(err)
	}
	job := &generate.Job{Task: tc.Task, Score: tc.Scorer(), Spec: tc.ScoringSpec()}
	set := generate.StopSetting{Name: "nl", Seqs: []string{"\n"}}
	s0, s1, s2 := loaded.Samples[0], loaded.Samples[1], loaded.Samples[2]
	const budget = 16
	pred := " 12"
	truth, err := job.Score(pred, s1)
	if err != nil {
		t.Fatal(err)
	}
	score := func(s string, digest string, value float64, metric string) store.Score {
		return store.Score{GenKey: "g-" + s, Task: "demo", SampleID: s, Setting: set.Name, SettingKey: set.Key(), Budget: budget,
			Metric: metric, Value: value, Prediction: pred, Digest: digest}
	}
	wrong := 0.123
	stored := []store.Score{
		score(s0.ID, generate.ScoreDigest(job, &s0, set, budget, pred), wrong, "drop.f1"), // current: trusted
		score(s1.ID, "digest-of-an-older-scoring", wrong, "drop.f1"),                      // stale
		score(s1.ID, "digest-of-an-older-scoring", wrong, "drop.em"),
		score(s2.ID, "", wrong, "drop.f1"), // imported
	}
	other := score("x", "some-digest", wrong, "f1")
	other.Task, other.GenKey = "moved-task", "g-x"
	stored = append(stored, other)
	var gens []store.Generation
	for _, x := range stored {
		gens = append(gens, store.Generation{Key: x.GenKey, Fingerprint: "fp", Task: x.Task, SampleID: x.SampleID,
			Text: pred + "\n", NTokens: 2, Budget: budget, Finish: "stop"})
	}
	if err := st.PutGenerations(ctx, gens, stored); err != nil {
		t.Fatal(err)
	}

	c, err := New(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if c.Job("demo") == nil || c.Job("moved-task") != nil {
		t.Fatalf("jobs: demo %v, moved-task %v", c.Job("demo"), c.Job("moved-task"))
	}
	got := map[string]float64{}
	err = st.EachEntry(ctx, store.Filter{}, func(e store.Entry) error {
		f, ok, err := c.Fix(e)
		if err != nil || !ok {
			t.Errorf("Fix(%s %s %s) = ok %v, %v", e.Task, e.SampleID, e.Metric, ok, err)
		}
		got[e.SampleID+" "+e.Metric] = f.Value
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		s0.ID + " drop.f1": wrong,
		s1.ID + " drop.f1": truth["drop.f1"],
		s1.ID + " drop.em": truth["drop.em"],
		s2.ID + " drop.f1": wrong,
		"x f1":             wrong,
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || math.Abs(g-w) > 0 {
			t.Errorf("%s: %v, want %v", k, g, w)
		}
	}
	if truth["drop.f1"] == wrong {
		t.Fatal("the recomputed value cannot be told from the stored one")
	}
	if c.Recomputed() != 1 {
		t.Errorf("Recomputed() = %d, want 1 (one stale sample and setting)", c.Recomputed())
	}
	if u := c.Unchecked(); !reflect.DeepEqual(u, map[string]int{"moved-task": 1}) {
		t.Errorf("Unchecked() = %v", u)
	}
}

// TestStoreRoundTrip: a sample read back from its stored form is the
// sample stored, metadata and share key included.
func TestStoreRoundTrip(t *testing.T) {
	tc, err := tasks.ResolveWith("demo", nil)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := tc.Load(tasks.LoadOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range loaded.Samples {
		back, err := FromStore(ToStore(s))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*back, s) {
			t.Errorf("round trip of %s:\n%+v\nwant\n%+v", s.ID, *back, s)
		}
	}
	if _, err := FromStore(store.Sample{Task: "t", ID: "1", Metadata: []byte("{")}); err == nil {
		t.Error("bad metadata read without error")
	}
}
