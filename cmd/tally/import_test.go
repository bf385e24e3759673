package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"tally/internal/sharedtest"
	"testing"

	"tally/datasets/drop"
	"tally/report"
	scoredrop "tally/scoring/drop"
)

func sharedPath(t *testing.T, rel string) string {
	t.Helper()
	return sharedtest.Path(t, rel)
}

// writeDropLog writes an lm-evaluation-harness DROP sample log (layout of
// lm-eval 0.4.0) for the shared DROP questions, with responses the way the
// leaderboard's models produced them under until=["."]: the answer, then a
// blank line and the next few-shot "Passage:", cut at the first ".".
func writeDropLog(t *testing.T, path string) int {
	t.Helper()
	qs, err := drop.Load(sharedPath(t, "data/drop/drop_dataset_dev.subset.json"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for i, q := range qs {
		answers, err := scoredrop.Answers(q.Doc())
		if err != nil {
			t.Fatal(err)
		}
		resp := " " + answers[0][0] + "\n\nPassage: The game was played in Denver"
		line := map[string]any{
			"doc_id":    i,
			"doc":       q,
			"target":    answers[0][0],
			"arguments": []any{[]any{"Passage: " + q.Passage + "\nQuestion: " + q.Question + "\nAnswer:", map[string]any{"until": []string{"."}}}},
			"resps":     [][]string{{resp}},
		}
		if err := enc.Encode(line); err != nil {
			t.Fatal(err)
		}
	}
	return len(qs)
}

// TestImportCompareDrop imports a DROP sample log and compares "." with
// "\n" and drop with drop-fixed on it, with no model.
func TestImportCompareDrop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := buildTally(t)
	dir := t.TempDir()
	log, db := filepath.Join(dir, "samples_drop_2023.jsonl"), filepath.Join(dir, "i.db")
	n := writeDropLog(t, log)
	common := []string{"--model", "imported:leaderboard-model", "--tasks", "drop", "--data", log, "--store", db}
	runTally(t, bin, append([]string{"import"}, common...)...)
	out, err := exec.Command(bin, append([]string{"compare", "--json", "--stop", "dot=.", "--stop", `nl=\n`}, common...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	var rows []report.Row
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("compare output %q: %v", out, err)
	}
	mean := map[string]float64{}
	for _, r := range rows {
		if r.N != n {
			t.Errorf("%s %s: n=%d, want %d", r.Metric, r.Setting, r.N, n)
		}
		mean[r.Metric+" "+r.Setting] = float64(r.Mean.Estimate)
	}
	// Under "\n" every imported answer is exactly the gold answer.
	if mean[`drop.em nl=\n`] != 1 || mean[`drop-fixed.em nl=\n`] != 1 {
		t.Errorf("under nl: %v", mean)
	}
	// Under "." the reference normalisation misses numbers followed by a
	// newline; the fixed one finds them.
	if !(mean["drop.f1 dot=."] < mean["drop-fixed.f1 dot=."]) {
		t.Errorf("drop-fixed should score higher than drop under dot: %v", mean)
	}
	// Import again: nothing duplicated.
	runTally(t, bin, append([]string{"import"}, common...)...)
	if c := storeCounts(t, db); c["generations"] != n || c["samples"] != n {
		t.Errorf("counts after re-import %v", c)
	}
	// A second model's outputs of the same log, compared with --against:
	// paired by sample, the second column's difference is 0 (same text).
	runTally(t, bin, "import", "--model", "imported:other", "--tasks", "drop", "--data", log, "--store", db)
	out, err = exec.Command(bin, append([]string{"compare", "--json", "--stop", `nl=\n`, "--against", "imported:other"}, common...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	rows = nil
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 8 || rows[1].Diff == nil || rows[1].Diff.Estimate != 0 || rows[1].Setting != `imported:other nl=\n` {
		t.Errorf("compare --against rows: %+v", rows[:min(2, len(rows))])
	}
	// The imported model cannot generate: a run with new samples fails cleanly.
	if out, err := exec.Command(bin, "run", "--model", "imported:leaderboard-model", "--tasks", "demo", "--store", db).CombinedOutput(); err == nil {
		t.Errorf("run on an imported model succeeded: %s", out)
	}
}
