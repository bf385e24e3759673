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

// TestPlanEstimatesTheRun is item 5 of issue 34 on the demo: plan expects
// the tokens the run that follows generates (the demo model stops at "."
// and "\n" long before its budget; plan counted every budget in full), from
// the stop positions of the model's stored generations, and times them at
// the prefill and decode speeds the earlier run recorded. The run's
// summary says how long it took (its seconds were always 0: the figure
// was set after the summary was copied out). The native engine's split
// step times prefill and decode apart too (it recorded 0 for both, and
// plan fell back to one rate that counted compilation in).
func TestPlanEstimatesTheRun(t *testing.T) {
	db := filepath.Join(t.TempDir(), "e.db")
	if _, err := execute(t, "demo", "--store", db); err != nil {
		t.Fatal(err)
	}
	args := []string{"--model", "demo", "--tasks", "demo", "--fewshot", "1", "--stop", "dot=.", "--stop", `nl=\n`, "--max-tokens", "24", "--store", db, "--json"}
	out, err := execute(t, append([]string{"plan"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var plan struct {
		Expected int      `json:"expected_tokens"`
		Bound    int      `json:"tokens_to_generate"`
		Seconds  *float64 `json:"estimated_seconds"`
		Basis    string   `json:"estimate_basis"`
		Requests int      `json:"requests"`
	}
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	out, err = execute(t, append([]string{"run"}, args...)...)
	if err != nil {
		t.Fatal(err)
	}
	var run struct {
		Generated int     `json:"generated_tokens"`
		Seconds   float64 `json:"seconds"`
	}
	if err := json.Unmarshal([]byte(out), &run); err != nil {
		t.Fatal(err)
	}
	t.Logf("plan: %d requests, %d tokens expected (bound %d), %v s: %s; run: %d tokens, %.3f s",
		plan.Requests, plan.Expected, plan.Bound, *plan.Seconds, plan.Basis, run.Generated, run.Seconds)
	if e, a := float64(plan.Expected), float64(run.Generated); e > 1.5*a || e < a/1.5 {
		t.Errorf("plan expected %d tokens, the run generated %d", plan.Expected, run.Generated)
	}
	if plan.Bound < 2*run.Generated {
		t.Errorf("the demo's requests should stop well before their budget: bound %d, generated %d", plan.Bound, run.Generated)
	}
	if plan.Seconds == nil || *plan.Seconds <= 0 || !strings.Contains(plan.Basis, "prefill") || !strings.Contains(plan.Basis, "decode") || strings.Contains(plan.Basis, "not measured apart") {
		t.Errorf("plan's time %v rests on %q, want the prefill and decode speeds measured", plan.Seconds, plan.Basis)
	}
	if run.Seconds <= 0 {
		t.Errorf("the run's summary says it took %v s", run.Seconds)
	}
}
