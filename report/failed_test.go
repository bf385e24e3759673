package report

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"tally/generate"
	"tally/store"
)

// failedStore holds what tally run leaves after some prompts exceeded the
// context: task "t" with three samples under two settings, sample 2's
// generation failed (finish "context", no scores, as the run stores it),
// and task "all" whose only generation failed (no score at all).
func failedStore(t *testing.T) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "f.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.StartRun(ctx, store.Run{Command: "run", Model: "m", Fingerprint: "fp", Config: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	stops, _ := json.Marshal(map[string]any{"settings": []generate.StopSetting{{Name: "dot", Seqs: []string{"."}}, {Name: "nl", Seqs: []string{"\n"}}}})
	var gens []store.Generation
	var scores []store.Score
	for i, id := range []string{"0", "1", "2"} {
		g := store.Generation{Key: "k" + id, Fingerprint: "fp", Task: "t", SampleID: id, Text: "1.5\nx", Finish: "length", Budget: 8, Stops: stops}
		if i == 2 {
			g.Text, g.Finish, g.PromptTokens = "", "context", 2000
		} else {
			for _, set := range []generate.StopSetting{{Name: "dot", Seqs: []string{"."}}, {Name: "nl", Seqs: []string{"\n"}}} {
				scores = append(scores, store.Score{GenKey: g.Key, Task: "t", SampleID: id, Setting: set.Name, SettingKey: set.Key(), Budget: 8,
					Metric: "em", Value: 1, Prediction: "1"})
			}
		}
		gens = append(gens, g)
	}
	gens = append(gens, store.Generation{Key: "a0", Fingerprint: "fp", Task: "all", SampleID: "0", Finish: "error", Error: "connection reset", Budget: 8, Stops: stops})
	if err := st.PutSamples(ctx, []store.Sample{{Task: "t", ID: "0", Refs: json.RawMessage(`["1"]`), Metadata: json.RawMessage(`{}`)},
		{Task: "t", ID: "1", Refs: json.RawMessage(`["1"]`), Metadata: json.RawMessage(`{}`)}, {Task: "t", ID: "2", Refs: json.RawMessage(`["1"]`), Metadata: json.RawMessage(`{}`)},
		{Task: "all", ID: "0", Refs: json.RawMessage(`["1"]`), Metadata: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutGenerations(ctx, gens, scores); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestLoadCountsFailed is issue 22's finding that the store-only report
// dropped failed samples (n 19, failed 0): a failed generation, which has
// no scores, counts as a failed sample (0 in the mean, listed with its
// reason) under every column of its model and task, in the summary and in
// the full load alike; a task whose every sample failed is still reported.
func TestLoadCountsFailed(t *testing.T) {
	st := failedStore(t)
	for name, load := range map[string]func(context.Context, *store.Store, store.Filter) (*Dataset, error){"Load": Load, "LoadSummary": LoadSummary} {
		ds, err := load(context.Background(), st, store.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(ds.Tasks) != 2 || ds.Tasks[0].Task != "all" || ds.Tasks[1].Task != "t" {
			t.Fatalf("%s: tasks %+v", name, ds.Tasks)
		}
		for _, r := range ds.Tasks[1].Rows {
			if r.N != 3 || r.Scored != 2 || r.Failed != 1 || float64(r.Mean.Estimate) != 2.0/3 ||
				len(r.FailedSamples) != 1 || r.FailedSamples[0] != (FailedSample{"2", "prompt (2000 tokens) exceeds the model's context"}) {
				t.Errorf("%s: row %+v", name, r)
			}
		}
		all := ds.Tasks[0]
		if len(all.Rows) != 2 || all.Rows[0].Metric != generate.NoneScored || all.Rows[0].N != 1 || all.Rows[0].Failed != 1 ||
			all.Rows[0].Stop != "dot" || all.Rows[1].Stop != "nl" || all.Rows[0].FailedSamples[0].Reason != "backend error: connection reset" {
			t.Errorf("%s: every sample failed: rows %+v", name, all.Rows)
		}
		if name == "Load" {
			td := ds.Tasks[1]
			if len(td.Samples) != 3 || !td.Samples[2].Failed() || td.Samples[2].Under[0] == nil || td.Samples[2].Under[1].Failed == "" {
				t.Errorf("failed sample not in the full load: %+v", td.Samples)
			}
		}
	}
	// A filter on settings keeps the failures under the settings kept.
	ds, err := LoadSummary(context.Background(), st, store.Filter{Settings: []string{"nl"}})
	if err != nil || len(ds.Tasks) != 2 || len(ds.Tasks[0].Rows) != 1 || ds.Tasks[1].Rows[0].Failed != 1 {
		t.Fatalf("filtered: %+v %v", ds, err)
	}
}

// TestCompareMatchesLoad: the same scores and failures, read from results
// (FromResults, as run and compare do) and from the store (Load, as report
// --store does), give the same figures: one computation behind both.
func TestCompareMatchesLoad(t *testing.T) {
	st := failedStore(t)
	ds, err := LoadSummary(context.Background(), st, store.Filter{Tasks: []string{"t"}})
	if err != nil {
		t.Fatal(err)
	}
	job := &generate.Job{Task: "t", MaxTokens: 8, Settings: []generate.StopSetting{{Name: "dot", Seqs: []string{"."}}, {Name: "nl", Seqs: []string{"\n"}}}}
	res := generate.Results{"t": {}}
	for _, set := range job.Settings {
		res["t"][set.Name] = map[string][]generate.SampleScore{"em": {{SampleID: "0", Value: 1, Prediction: "1"}, {SampleID: "1", Value: 1, Prediction: "1"},
			{SampleID: "2", Failed: "prompt (2000 tokens) exceeds the model's context"}}}
	}
	from, err := FromResults(context.Background(), nil, []*generate.Job{job}, []RunResults{{Model: "m", Results: res}}, FromOptions{ModelLabels: true})
	if err != nil {
		t.Fatal(err)
	}
	a, b := ds.Tasks[0].Rows, from.Tasks[0].Rows
	for i := range a {
		a[i].Setting, a[i].Against, b[i].Setting, b[i].Against = "", "", "", ""
	}
	if js(a) != js(b) {
		t.Errorf("store rows\n%s\nresults rows\n%s", js(a), js(b))
	}
}
