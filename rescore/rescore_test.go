package rescore

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"tally/datasets"
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

// TestStoredMetadata: the metadata a digest reads from a stored sample's
// metadata column is what decoding the column whole (datasets.Stored)
// gives, whether or not the column begins with it as ToStore writes it.
func TestStoredMetadata(t *testing.T) {
	for _, raw := range []string{
		`{"metadata":null,"share_key":"k","index":3,"doc":{"passage":"p"},"target":" 1"}`,
		`{"metadata":{"b":[1,2.5,"x"],"a":{"n":null,"t":true}},"share_key":"","doc":{"q":"<&>"}}`,
		`{"metadata":{},"share_key":""}`,
		`{"metadata":null}`,
		`{"share_key":"k","metadata":{"z":1}}`,
		`{"metadata": {"spaced": 1e3}, "share_key": "k"}`,
		`{"metadata":{"big":12345678901234567890}}`,
	} {
		var want datasets.Stored
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		got, err := storedMetadata([]byte(raw))
		if err != nil || !reflect.DeepEqual(got, want.Metadata) {
			t.Errorf("storedMetadata(%s) = %#v, %v; want %#v", raw, got, err, want.Metadata)
		}
	}
	for _, raw := range []string{`{`, `{"metadata":[1]}`, `{"metadata":{"a":}`, `[]`} {
		if _, err := storedMetadata([]byte(raw)); err == nil {
			t.Errorf("storedMetadata(%s): no error", raw)
		}
	}
}

// TestFixTasksInterleaved: a Checker holds the samples of the task it read
// last while scores come task by task; scores of a task that comes back
// after another task's are still checked against their own samples (and
// every task is held from then on).
func TestFixTasksInterleaved(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dir := t.TempDir()
	var specs []string
	for _, name := range []string{"one", "two"} {
		var rows strings.Builder
		for i := range 2 {
			fmt.Fprintf(&rows, `{"answer":{"date":{"day":"","month":"","year":""},"number":"%d","spans":[]},"passage":"P%d.","query_id":"%s-%d",`+
				`"question":"Q?","section_id":"%s-%d","validated_answers":{"date":[],"number":[],"spans":[]}}`+"\n", i, i, name, i, name, i)
		}
		data, spec := filepath.Join(dir, name+".jsonl"), filepath.Join(dir, name+".yaml")
		yaml := "task: " + name + "\nloader: drop\ndata: " + data + "\nid: \"{{.query_id}}\"\nprompt: \"{{.passage}} {{.question}}\"\n" +
			"target: \" {{.target}}\"\nstop:\n  nl: [\"\\n\"]\nmax_tokens: 12\nmetrics: [drop]\n"
		if err := os.WriteFile(data, []byte(rows.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(spec, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		specs = append(specs, spec)
	}
	cfg, _ := json.Marshal(map[string][]string{"tasks": specs})
	if _, err := st.StartRun(ctx, store.Run{Command: "run", Config: cfg}); err != nil {
		t.Fatal(err)
	}
	set := generate.StopSetting{Name: "nl", Seqs: []string{"\n"}}
	const budget, pred = 12, " 1"
	type known struct {
		job *generate.Job
		s   datasets.Sample
	}
	var ks []known
	for _, spec := range specs {
		tc, err := tasks.Resolve(spec)
		if err != nil {
			t.Fatal(err)
		}
		loaded, err := tc.Load(tasks.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		job := &generate.Job{Task: tc.Task, Score: tc.Scorer(), Spec: tc.ScoringSpec()}
		for _, s := range loaded.Samples {
			if err := st.PutSamples(ctx, []store.Sample{ToStore(s)}); err != nil {
				t.Fatal(err)
			}
			ks = append(ks, known{job, s})
		}
	}
	entry := func(k known, stale bool) store.Entry {
		digest := generate.ScoreDigest(k.job, &k.s, set, budget, pred)
		if stale {
			digest = "stale"
		}
		return store.Entry{Fingerprint: "fp", Score: store.Score{GenKey: "g-" + k.s.ID, Task: k.s.Task, SampleID: k.s.ID, Setting: set.Name,
			SettingKey: set.Key(), Budget: budget, Metric: "m", Value: 0.5, Prediction: pred, Digest: digest}}
	}
	for _, tc := range []struct {
		name    string
		order   []int // into ks: task one's 0 and 1, two's 2 and 3
		holdAll bool
	}{
		{"task by task", []int{0, 1, 2, 3}, false},
		{"interleaved", []int{0, 2, 1, 3, 0}, true},
	} {
		c, err := New(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range tc.order {
			stale := i == len(tc.order)-1
			_, ok, err := c.Fix(entry(ks[k], stale))
			if err != nil {
				t.Fatalf("%s: entry %d: %v", tc.name, i, err)
			}
			if !ok != stale { // metric "m" is not computed: a stale score of it is dropped
				t.Errorf("%s: entry %d (%s/%s): ok %v", tc.name, i, ks[k].s.Task, ks[k].s.ID, ok)
			}
		}
		if c.Recomputed() != 1 || len(c.Unchecked()) != 0 {
			t.Errorf("%s: Recomputed() = %d, Unchecked() = %v; want 1, none", tc.name, c.Recomputed(), c.Unchecked())
		}
		if held := len(c.samples); c.holdAll != tc.holdAll || held != map[bool]int{false: 1, true: 2}[tc.holdAll] {
			t.Errorf("%s: holdAll %v, %d tasks held", tc.name, c.holdAll, held)
		}
	}
}
