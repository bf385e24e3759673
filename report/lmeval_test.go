package report

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"tally/internal/lmevalschema"
	"tally/store"
)

// TestLMEvalSchema writes lm-eval files from stores with several tasks,
// stop settings, models, failed samples and a task whose every sample
// failed, and checks them against lm-eval's field list
// (tally/internal/lmevalschema, from its source at the commits it names).
func TestLMEvalSchema(t *testing.T) {
	for name, st := range map[string]*store.Store{"failed": failedStore(t), "fixture": fixtureStore(t, 12), "mixed": mixedStore(t)} {
		t.Run(name, func(t *testing.T) {
			ds, err := Load(context.Background(), st, store.Filter{})
			if err != nil {
				t.Fatalf("%v", err)
			}
			dir := t.TempDir()
			if _, err := WriteLMEval(dir, ds, LMEvalOptions{Version: "test", Now: time.Date(2025, 1, 2, 3, 4, 5, 6000, time.UTC)}); err != nil {
				t.Fatalf("%v", err)
			}
			lmevalschema.Check(t, dir)
		})
	}
}

// TestLMEvalSchemaCatches: the schema check fails on a renamed field, a
// missing one and one of another type (as the files tally wrote before,
// with "drop@nl" tasks, a JSON list as target and no task_hashes).
func TestLMEvalSchemaCatches(t *testing.T) {
	ds, err := Load(context.Background(), failedStore(t), store.Filter{})
	if err != nil {
		t.Fatalf("%v", err)
	}
	dir := t.TempDir()
	paths, err := WriteLMEval(dir, ds, LMEvalOptions{Version: "test"})
	if err != nil {
		t.Fatalf("%v", err)
	}
	var rf string
	for _, p := range paths {
		if strings.Contains(p, "/results_") {
			rf = p
		}
	}
	b, _ := os.ReadFile(rf)
	var res map[string]any
	json.Unmarshal(b, &res)
	res["task_hash"] = res["task_hashes"]
	delete(res, "task_hashes")
	res["date"] = "yesterday"
	b, _ = json.Marshal(res)
	os.WriteFile(rf, b, 0o644)
	ft := &lmevalschema.Fake{}
	func() {
		defer func() { recover() }()
		lmevalschema.Check(ft, dir)
	}()
	joined := strings.Join(ft.Failures, "\n")
	for _, want := range []string{"field task_hashes missing", `field .date = yesterday, want number`, `top-level field "task_hash"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("the schema check did not report %q; it reported:\n%s", want, joined)
		}
	}
}

// TestLMEvalPathsStayInside is issue 23's finding that --output-path wrote
// outside its folder (a setting named "x/../../../escaped1", a task named
// with "../" in an imported file): names from tasks, settings and models
// are sanitised into file names inside the folder, and a symlink in the
// folder pointing out of it is refused rather than written through.
func TestLMEvalPathsStayInside(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, t.TempDir()+"/p.db")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	task, model := "../../../../../../../../../../../../escaped-task", "../../escaped-model"
	st.StartRun(ctx, store.Run{Command: "import", Model: model, Fingerprint: "../fp", Config: json.RawMessage(`{}`)})
	st.PutSamples(ctx, []store.Sample{{Task: task, ID: "0", Refs: json.RawMessage(`["a"]`), Metadata: json.RawMessage(`{}`)}})
	if err := st.PutGenerations(ctx, []store.Generation{{Key: "k", Fingerprint: "../fp", Task: task, SampleID: "0", Text: "a.", Finish: "eos", Stops: json.RawMessage(`{}`)}},
		[]store.Score{{GenKey: "k", Task: task, SampleID: "0", Setting: "x/../../../escaped1", SettingKey: ".", Metric: "em", Value: 1, Prediction: "a"}}); err != nil {
		t.Fatal(err)
	}
	ds, err := Load(ctx, st, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	dir := parent + "/a/b"
	paths, err := WriteLMEval(dir, ds, LMEvalOptions{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	filepathWalk(parent, func(p string) { all = append(all, p) })
	for _, p := range all {
		if !strings.HasPrefix(p, dir+"/") {
			t.Errorf("wrote %s outside %s", p, dir)
		}
	}
	if len(paths) != 2 || len(all) != 2 {
		t.Errorf("wrote %v (found %v)", paths, all)
	}
	lmevalschema.Check(t, dir)

	// A symlink in the folder pointing out of it is not written through.
	outside := t.TempDir()
	dir2 := t.TempDir()
	if err := os.Symlink(outside, dir2+"/"+SanitizeModelName(model)); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteLMEval(dir2, ds, LMEvalOptions{Version: "test"}); err == nil {
		t.Error("wrote through a symlink out of the folder")
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("files written outside through a symlink: %v", ents)
	}
}

func filepathWalk(root string, fn func(string)) {
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		p := root + "/" + e.Name()
		if e.IsDir() {
			filepathWalk(p, fn)
		} else {
			fn(p)
		}
	}
}
