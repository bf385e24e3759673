package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"tally/internal/lmevalschema"
	"tally/internal/sharedtest"
	"tally/store"
)

func tallyOut(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(built, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("tally %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// TestStoreAlone runs the demo task once, then with only --store lists,
// reports (text and HTML), exports lm-eval files and imports them into a
// new store, which reports the same figures.
func TestStoreAlone(t *testing.T) {
	dir := t.TempDir()
	db, out := filepath.Join(dir, "d.db"), filepath.Join(dir, "out")
	tallyOut(t, "demo", "--store", db, "--stop", "dot=.", "--stop", `nl=\n`, "--limit", "6", "--output-path", filepath.Join(dir, "run-out"))
	if m, _ := filepath.Glob(filepath.Join(dir, "run-out", "demo", "results_*.json")); len(m) != 1 {
		t.Fatalf("run --output-path wrote %v", m)
	}

	var inv struct {
		Tasks []struct {
			Task               string
			Generated, Pending int
		}
		Cells   []struct{ Setting string }
		LastRun map[string]struct{ Config json.RawMessage } `json:"last_run"`
	}
	if err := json.Unmarshal([]byte(tallyOut(t, "ls", "--store", db, "--json")), &inv); err != nil {
		t.Fatal(err)
	}
	if len(inv.Tasks) != 1 || inv.Tasks[0].Generated != 6 || len(inv.Cells) != 2 || len(inv.LastRun) != 1 {
		t.Fatalf("ls: %+v", inv)
	}
	for _, r := range inv.LastRun {
		if !strings.Contains(strings.ReplaceAll(string(r.Config), " ", ""), `"limit":6`) {
			t.Errorf("last run config %s lacks the limit", r.Config)
		}
	}
	if text := tallyOut(t, "ls", "--store", db); !strings.Contains(text, `nl=\n`) || !strings.Contains(text, "demo") {
		t.Errorf("ls text:\n%s", text)
	}

	page := tallyOut(t, "report", "--store", db, "--format", "html")
	if !strings.Contains(page, `<svg class="chart means"`) || !strings.Contains(page, `<script type="application/octet-stream" id="c0">`) {
		t.Errorf("html report lacks charts or samples")
	}
	orig := tallyOut(t, "report", "--store", db, "--format", "json", "--output-path", out)
	only := tallyOut(t, "report", "--store", db, "--format", "json", "--stop", "nl")
	if strings.Count(only, `"setting"`) != 4 {
		t.Errorf("--stop nl should leave 4 rows (4 metrics):\n%s", only)
	}

	results, _ := filepath.Glob(filepath.Join(out, "demo", "results_*.json"))
	samples, _ := filepath.Glob(filepath.Join(out, "demo", "samples_demo_*.jsonl"))
	if len(results) != 1 || len(samples) != 1 {
		t.Fatalf("lm-eval files: %v %v", results, samples)
	}
	lmevalschema.Check(t, out)
	b, _ := os.ReadFile(results[0])
	var res struct {
		Results  map[string]map[string]any `json:"results"`
		NSamples map[string]map[string]int `json:"n-samples"`
		Configs  map[string]struct {
			FilterList []struct {
				Name   string           `json:"name"`
				Filter []map[string]any `json:"filter"`
			} `json:"filter_list"`
		} `json:"configs"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if _, ok := res.Results["demo"]["f1,nl"]; !ok || res.NSamples["demo"]["effective"] != 6 {
		t.Errorf("results file: %s", b)
	}
	if fl := res.Configs["demo"].FilterList; len(fl) != 2 || fl[1].Name != "nl" || !reflect.DeepEqual(fl[1].Filter[0]["until"], []any{"\n"}) {
		t.Errorf("filter_list %+v", fl)
	}

	db2 := filepath.Join(dir, "i.db")
	tallyOut(t, "import", "--store", db2, out)
	back := tallyOut(t, "report", "--store", db2, "--format", "json")
	if back != orig {
		t.Errorf("round trip differs:\n%s\nvs\n%s", back, orig)
	}
}

// TestImportLMEvalLog imports an lm-eval sample log of a generate_until
// task tally has no config for and reports its logged metric, each of its
// filters as the stop setting of that name (as tally writes them): two
// filters of one document are two settings, not one overwriting the other.
func TestImportLMEvalLog(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "my-model", "samples_gsm8k_2024-05-01T10-00-00.123456.jsonl")
	os.MkdirAll(filepath.Dir(log), 0o755)
	var lines []string
	for _, filter := range []string{"strict-match", "flexible-extract"} {
		for i, ok := range []bool{true, false, filter == "flexible-extract", true} {
			em := 0
			if ok {
				em = 1
			}
			l, _ := json.Marshal(map[string]any{"doc_id": i, "doc": map[string]any{"question": "q"}, "target": "42",
				"arguments": map[string]any{"gen_args_0": map[string]any{"arg_0": "Q" + string(rune('a'+i)), "arg_1": map[string]any{"until": []string{"Question:"}, "max_gen_toks": 256}}},
				"resps":     [][]string{{"The answer is 42"}}, "filtered_resps": []string{"42"}, "filter": filter,
				"metrics": []string{"exact_match"}, "exact_match": em})
			lines = append(lines, string(l))
		}
	}
	os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	db := filepath.Join(dir, "g.db")
	tallyOut(t, "import", "--store", db, dir)
	var rows []struct {
		Task, Metric, Setting string
		N                     int
		Mean                  struct{ Estimate float64 }
	}
	if err := json.Unmarshal([]byte(tallyOut(t, "report", "--store", db, "--json")), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Task != "gsm8k" || rows[0].N != 4 || rows[0].Mean.Estimate != 0.75 || rows[0].Setting != "imported:my-model flexible-extract=Question:" ||
		rows[1].Mean.Estimate != 0.5 || rows[1].Setting != "imported:my-model strict-match=Question:" {
		t.Errorf("rows %+v", rows)
	}
}

// TestImportPublished brings the published prediction files of
// ../shared/data in as they are; report gives their READMEs' numbers.
func TestImportPublished(t *testing.T) {
	data := sharedtest.Path(t, "data")
	db := filepath.Join(t.TempDir(), "p.db")
	tallyOut(t, "import", "--store", db,
		filepath.Join(data, "leval", "Predictions", "exam_eval", "turbo-16k-0613", "coursera.pred.jsonl"),
		filepath.Join(data, "counting_stars"), // a folder: its result file is found by its content
		filepath.Join(data, "alpaca_eval", "results", "text_davinci_001"))
	var rows []struct {
		Task, Metric string
		N            int
		Mean         struct{ Estimate float64 }
	}
	if err := json.Unmarshal([]byte(tallyOut(t, "report", "--store", db, "--json")), &rows); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"leval_coursera": 63.5174, "counting_stars": 0.978515625 * 100, "alpaca_eval/alpaca_eval_gpt4": 15.17412935323383}
	for _, r := range rows {
		w, ok := want[r.Task]
		if !ok {
			t.Errorf("unexpected row %+v", r)
			continue
		}
		if got := 100 * r.Mean.Estimate; math.Abs(got-w) > 5e-5 {
			t.Errorf("%s %s: %.6f, want %.6f", r.Task, r.Metric, got, w)
		}
		delete(want, r.Task)
	}
	if len(want) > 0 {
		t.Errorf("missing rows for %v", want)
	}
}

// TestStoreReportRescoresStale makes some stored scores stale (their value
// changed and their digest no longer the current scoring's, as after a
// metric's version changed) and checks that the store-only report shows
// the recomputed values, says so, and leaves current scores alone.
func TestStoreReportRescoresStale(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "d.db")
	tallyOut(t, "demo", "--store", db, "--stop", "dot=.", "--stop", `nl=\n`, "--limit", "6")
	want := tallyOut(t, "report", "--store", db, "--format", "json")

	ctx := context.Background()
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	gens, err := st.ReadGenerationsOf(ctx, store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range gens {
		keys = append(keys, k)
	}
	scores, err := st.ScoresFor(ctx, keys)
	if err != nil || len(scores) == 0 {
		t.Fatalf("%d scores, %v", len(scores), err)
	}
	// Every score: a wrong value under a digest of an older scoring.
	stale := slices.Clone(scores)
	for i := range stale {
		stale[i].Value = 0.5 + stale[i].Value/3
		stale[i].Digest = "digest-of-an-older-metric-version"
	}
	if err := st.PutScores(ctx, stale); err != nil {
		t.Fatal(err)
	}
	st.Close()

	var errb bytes.Buffer
	cmd := exec.Command(built, "report", "--store", db, "--format", "json")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("report: %v\n%s", err, errb.String())
	}
	if out.String() != want {
		t.Errorf("report over stale scores shows\n%s\nwant (recomputed)\n%s", out.String(), want)
	}
	if !strings.Contains(errb.String(), "recomputed") || !strings.Contains(errb.String(), "stale") {
		t.Errorf("stderr does not say stale scores were recomputed: %q", errb.String())
	}
	// The report never writes the store: the stale scores are still there.
	st, err = store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	after, err := st.ScoresFor(ctx, keys)
	if err != nil || len(after) != len(scores) || after[0].Digest != "digest-of-an-older-metric-version" {
		t.Errorf("store changed by report: %d scores, %v", len(after), err)
	}
	// A current digest is trusted: the same wrong value under the current
	// digest is shown as stored (nothing is recomputed needlessly).
	current := slices.Clone(scores)
	for i := range current {
		current[i].Value = 0.5 + current[i].Value/3
	}
	if err := st.PutScores(ctx, current); err != nil {
		t.Fatal(err)
	}
	if got := tallyOut(t, "report", "--store", db, "--format", "json"); got == want {
		t.Errorf("scores with a current digest were recomputed")
	}
}
