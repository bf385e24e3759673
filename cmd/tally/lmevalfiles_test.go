package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tally/internal/lmevalschema"
	"tally/internal/sharedtest"
)

// lmevalResults reads the one results file under dir/model.
func lmevalResults(t *testing.T, dir, model string) (string, map[string]any) {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, model, "results_*.json"))
	if len(m) != 1 {
		t.Fatalf("results files under %s: %v", dir, m)
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return m[0], res
}

// sampleLines reads every line of the samples files of a task under
// dir/model.
func sampleLines(t *testing.T, dir, model, task string) []map[string]any {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, model, "samples_"+task+"_*.jsonl"))
	if len(m) != 1 {
		t.Fatalf("samples files of %s under %s: %v", task, dir, m)
	}
	f, err := os.Open(m[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var l map[string]any
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		out = append(out, l)
	}
	return out
}

// TestOutputPathHonoursRun is issue 22's finding that --output-path wrote
// other numbers than the run printed: on a store holding all 40 demo
// samples, `run --limit 10 --output-path` writes the run's figures over
// its 10 samples (one line per sample and stop setting), config.limit 10
// and n-samples 10 of 40, in lm-eval's schema; --samples likewise.
func TestOutputPathHonoursRun(t *testing.T) {
	dir := t.TempDir()
	db, out := filepath.Join(dir, "d.db"), filepath.Join(dir, "out")
	tallyOut(t, "demo", "--store", db)
	var sum struct {
		Scores map[string]map[string]map[string]float64
	}
	if err := json.Unmarshal([]byte(tallyOut(t, "run", "--model", "demo", "--tasks", "demo", "--limit", "10", "--store", db, "--json", "--output-path", out)), &sum); err != nil {
		t.Fatal(err)
	}
	lmevalschema.Check(t, out)
	_, res := lmevalResults(t, out, "demo")
	got := res["results"].(map[string]any)["demo"].(map[string]any)
	for set, byMetric := range sum.Scores["demo"] {
		for metric, v := range byMetric {
			name := map[string]string{"drop.em": "em", "drop.f1": "f1", "drop-fixed.em": "em_fixed", "drop-fixed.f1": "f1_fixed"}[metric]
			if g, ok := got[name+","+set].(float64); !ok || g != v {
				t.Errorf("results %s,%s = %v, the run printed %v", name, set, got[name+","+set], v)
			}
		}
	}
	if limit := res["config"].(map[string]any)["limit"]; limit != 10.0 {
		t.Errorf("config.limit %v, want 10", limit)
	}
	if ns := res["n-samples"].(map[string]any)["demo"].(map[string]any); ns["effective"] != 10.0 || ns["original"] != 40.0 {
		t.Errorf("n-samples %v, want 10 of 40", ns)
	}
	if lines := sampleLines(t, out, "demo", "demo"); len(lines) != 30 {
		t.Errorf("%d sample lines, want 10 samples × 3 stop settings", len(lines))
	}
	out2 := filepath.Join(dir, "out2")
	tallyOut(t, "rescore", "--model", "demo", "--tasks", "demo", "--samples", "demo-2026-0003,demo-2026-0007", "--store", db, "--output-path", out2)
	lines := sampleLines(t, out2, "demo", "demo")
	if len(lines) != 6 {
		t.Errorf("--samples: %d sample lines, want 2 samples × 3 stop settings", len(lines))
	}
	// A rescore writing files loads its samples' data rows (one that
	// writes none does not): each line shows the doc the run's line does.
	docs := map[string]string{}
	for _, l := range sampleLines(t, out, "demo", "demo") {
		d, _ := json.Marshal(l["doc"])
		docs[fmt.Sprint(l["doc_id"])] = string(d)
	}
	for _, l := range lines {
		d, _ := json.Marshal(l["doc"])
		if want, ok := docs[fmt.Sprint(l["doc_id"])]; !ok || string(d) != want || !strings.HasPrefix(string(d), "{") {
			t.Errorf("rescore --output-path: doc %v is %s, the run wrote %s", l["doc_id"], d, want)
		}
	}
}

// TestAllFailedWritesFiles is issue 22's finding that a run whose samples
// all failed wrote no files and said nothing: the files are written (the
// failed samples listed, counting 0) and stderr says so.
func TestAllFailedWritesFiles(t *testing.T) {
	data := sharedtest.Path(t, "data/drop/drop_dataset_dev.subset.json")
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	cmd := exec.Command(built, "run", "--model", "demo", "--tasks", "drop", "--data", data, "--limit", "4", "--store", filepath.Join(dir, "d.db"), "--output-path", out)
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if err == nil || !errorsAs(err, &ee) || ee.ExitCode() != ExitFailed {
		t.Fatalf("run: %v\n%s", err, b)
	}
	if !strings.Contains(string(b), "every sample failed") {
		t.Errorf("stderr does not say every sample failed:\n%s", b)
	}
	lmevalschema.Check(t, out)
	lines := sampleLines(t, out, "demo", "drop")
	if len(lines) != 8 {
		t.Fatalf("%d sample lines, want 4 samples × 2 settings", len(lines))
	}
	for _, l := range lines {
		if tx := l["tally"].(map[string]any); tx["failed"] == "" || tx["finish"] != "context" {
			t.Errorf("line %v: not marked failed", tx)
		}
	}
}

// TestOutputPathSettingName is issue 23's finding that `--stop foo=.
// --output-path out`, on a store whose scores name "." dot, wrote nothing
// and exited 0: the files are written under the name given.
func TestOutputPathSettingName(t *testing.T) {
	dir := t.TempDir()
	db, out := filepath.Join(dir, "d.db"), filepath.Join(dir, "out")
	tallyOut(t, "demo", "--store", db, "--limit", "5")
	tallyOut(t, "run", "--model", "demo", "--tasks", "demo", "--limit", "5", "--stop", "foo=.", "--store", db, "--output-path", out)
	lmevalschema.Check(t, out)
	_, res := lmevalResults(t, out, "demo")
	if _, ok := res["results"].(map[string]any)["demo"].(map[string]any)["f1,foo"]; !ok {
		t.Errorf("no f1,foo in %v", res["results"])
	}
	if lines := sampleLines(t, out, "demo", "demo"); len(lines) != 5 || lines[0]["filter"] != "foo" {
		t.Errorf("%d lines, filter %v", len(lines), lines[0]["filter"])
	}
}

// TestLMEvalRoundTrip: a DROP run with failed samples, written with
// --output-path and imported into a new store, reports exactly as the
// original store (text, Markdown, JSON), failures and their reasons
// included; the files pass lm-eval's schema.
func TestLMEvalRoundTrip(t *testing.T) {
	data := sharedtest.Path(t, "data/drop/drop_dataset_dev.subset.json")
	dir := t.TempDir()
	a, b, out := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db"), filepath.Join(dir, "out")
	runJSON(t, "run", "--model", "demo", "--tasks", "drop", "--data", data, "--set", "fewshot=0", "--stop", "dot=.", "--stop", `nl=\n`,
		"--store", a, "--output-path", out)
	lmevalschema.Check(t, out)
	tallyOut(t, "import", "--store", b, out)
	for _, format := range []string{"text", "markdown", "json"} {
		want := strings.ReplaceAll(runJSON(t, "report", "--store", a, "--format", format), a, "STORE")
		got := strings.ReplaceAll(runJSON(t, "report", "--store", b, "--format", format), b, "STORE")
		if got != want || !strings.Contains(want, "21") {
			t.Errorf("%s report after the round trip:\n%s\nwant\n%s", format, got, want)
		}
	}
}

// TestStopNameRefused: a stop setting name with a path separator (issue
// 23: `--stop 'x/../../../escaped1=.'` wrote a file three levels up) is
// refused at the command line, in one line.
func TestStopNameRefused(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"x/../../../escaped1", `a\b`, ".."} {
		out, err := runTallyErr(built, "run", "--model", "demo", "--tasks", "demo", "--limit", "1", "--stop", name+"=.",
			"--store", filepath.Join(dir, "d.db"), "--output-path", filepath.Join(dir, "o2", "a", "b"))
		if err == nil || !strings.Contains(out, "path separator") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("--stop %s=.: %v\n%s", name, err, out)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("wrote %v", ents)
	}
}
