package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"tally/internal/lmevalcli"
)

// TestLMEvalHabits is item 3 of issue 34: lm-eval's spellings mean what
// they mean there. --limit 0.1 keeps ceil(40 × 0.1) = 4 of the demo's 40
// samples and says so (it was strconv.ParseInt's error); --batch_size auto
// is tally's own choice, said once (it was "invalid argument for
// --concurrency"); --task gets "did you mean --tasks"; --model vllm
// --model_args pretrained=demo is refused naming the forms tally has (it
// ran the demo model).
func TestLMEvalHabits(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	for _, tc := range []struct {
		args    []string
		wantErr string // in the one-line error ("" for success)
		stderr  string // once on stderr, on success
		stored  int    // generations in the store after it
	}{
		{[]string{"run", "--model", "demo", "--tasks", "demo", "--limit", "0.1"}, "",
			"tally: task demo: --limit 0.1: 4 of the 40 samples (lm-eval's rule for a limit below 1: ceil(40 × 0.1))", 4},
		{[]string{"run", "--model", "demo", "--tasks", "demo", "--limit", "6", "--batch_size", "auto"}, "", lmevalcli.AutoNote, 6},
		{[]string{"run", "--model", "demo", "--task", "demo"}, "unknown flag --task for `tally run`: did you mean --tasks?", "", 6},
		{[]string{"plan", "--model", "demo", "--tasks", "demo", "--max_token", "3"}, "did you mean --max-tokens?", "", 6},
		{[]string{"run", "--model", "vllm", "--model_args", "pretrained=demo", "--tasks", "demo"},
			"--model vllm is lm-eval's model type for a backend tally does not have", "", 6},
		{[]string{"run", "--model", "sglang", "--model_args", "pretrained=demo", "--tasks", "demo"}, lmevalcli.ModelForms, "", 6},
	} {
		_, stderr, err := execute2(t, append(tc.args, "--store", db)...)
		name := strings.Join(tc.args, " ")
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("tally %s: %v", name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n")):
			t.Errorf("tally %s: error %v, want one line with %q", name, err, tc.wantErr)
		case tc.stderr != "" && strings.Count(stderr, tc.stderr) != 1:
			t.Errorf("tally %s: stderr says %q %d times, want once:\n%s", name, tc.stderr, strings.Count(stderr, tc.stderr), stderr)
		}
		if n := storeCounts(t, db)["generations"]; n != tc.stored {
			t.Errorf("tally %s: %d generations stored, want %d", name, n, tc.stored)
		}
	}
}

// TestImportOwnLogAsData is item 6 of issue 34: tally's own lm-eval
// samples file comes back through `tally import --model imported:X --tasks
// drop --data samples_drop_*.jsonl` (it failed with `no "answer" key`: the
// file's docs are the task's template rows, its gold answers in tally's
// own object; and each document is there once per stop setting), and
// compare then gives every setting the scores the original run had.
func TestImportOwnLogAsData(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join("..", "..", "tasks", "builtin", "demo.jsonl")
	orig, imp, out := filepath.Join(dir, "o.db"), filepath.Join(dir, "i.db"), filepath.Join(dir, "out")
	run := []string{"--tasks", "drop", "--data", data, "--limit", "8"}
	if _, err := execute(t, append([]string{"run", "--model", "demo", "--store", orig, "--output-path", out}, run...)...); err != nil {
		t.Fatal(err)
	}
	logs, _ := filepath.Glob(filepath.Join(out, "demo", "samples_drop_*.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("samples files %v", logs)
	}
	if _, err := execute(t, "import", "--model", "imported:X", "--tasks", "drop", "--data", logs[0], "--store", imp); err != nil {
		t.Fatalf("import of tally's own samples file: %v", err)
	}
	means := func(args ...string) map[string]float64 {
		t.Helper()
		stdout, err := execute(t, append([]string{"compare", "--json"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		var rows []struct {
			Metric, Stop string
			N            int
			Mean         struct{ Estimate float64 }
		}
		if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
			t.Fatal(err)
		}
		m := map[string]float64{}
		for _, r := range rows {
			m[fmt.Sprintf("%s %s n=%d", r.Stop, r.Metric, r.N)] = r.Mean.Estimate
		}
		return m
	}
	want := means(append([]string{"--model", "demo", "--store", orig}, run...)...)
	got := means("--model", "imported:X", "--tasks", "drop", "--data", logs[0], "--store", imp)
	if len(want) < 8 || !maps.Equal(got, want) {
		t.Errorf("imported scores %v\nwant the run's %v", got, want)
	}
}
