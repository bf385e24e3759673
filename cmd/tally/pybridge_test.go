package main

import (
	"bytes"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"tally/generate"
	"tally/internal/pyref"
)

// bridgeTaskFiles write a task folder whose process_results tally has no
// Go port of; dies makes it end its process on the document "die".
func bridgeTaskFiles(t *testing.T, dies bool) (yaml, data string) {
	t.Helper()
	dir := t.TempDir()
	utils := "import os\n\ndef doc_to_text(doc):\n    return \"Q: \" + doc[\"q\"] + \"\\nA:\"\n\n" +
		"def process_results(doc, results):\n"
	if dies {
		utils += "    if doc[\"q\"] == \"die\":\n        os._exit(3)\n"
	}
	utils += "    return {\"hit\": float(doc[\"a\"] in results[0])}\n"
	files := map[string]string{
		"utils.py":   utils,
		"test.jsonl": "{\"q\": \"one\", \"a\": \"1\"}\n{\"q\": \"die\", \"a\": \"2\"}\n{\"q\": \"three\", \"a\": \"3\"}\n",
		"task.yaml": "task: bridged\ntest_split: test\ndoc_to_text: !function utils.doc_to_text\ndoc_to_target: a\n" +
			"process_results: !function utils.process_results\nmetric_list:\n  - metric: hit\n    aggregation: mean\n    higher_is_better: true\n" +
			"generation_kwargs:\n  until: [\"\\n\"]\n  max_gen_toks: 4\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "task.yaml"), filepath.Join(dir, "test.jsonl")
}

// TestPythonBridgeRun: without --python a task whose functions only
// Python runs is refused in one line saying how to opt in; with it, it
// runs; when the worker dies while scoring, tally run ends with one line
// naming the function, keeps every generation and stores no score (not
// even an unscorable one) for the sample it was scoring, and a rescore
// with working code scores what is left.
func TestPythonBridgeRun(t *testing.T) {
	py := pyref.Python(t)
	run := func(args ...string) (string, int) {
		t.Helper()
		var out, errb bytes.Buffer
		cmd := exec.Command(built, args...)
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.Env = append(os.Environ(), "TALLY_LMEVAL_PYTHON=")
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return errb.String(), ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return errb.String(), 0
	}
	yaml, data := bridgeTaskFiles(t, true)
	db := filepath.Join(t.TempDir(), "s.db")
	base := []string{"run", "--model", "demo", "--tasks", yaml, "--data", data, "--store", db}

	stderr, code := run(base...)
	if code != 1 || !strings.Contains(stderr, "--python python3") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Errorf("without --python: exit %d, stderr %q; want 1 and one line naming --python", code, stderr)
	}

	stderr, code = run(append(base, "--python", py)...)
	if last := lastLine(stderr); code != 1 || !strings.HasSuffix(last, ": python worker: process_results utils.process_results (Python): the worker exited (exit status 3)") {
		t.Errorf("a worker that dies: exit %d, stderr %q", code, stderr)
	}
	gens, scores := storeRows(t, db)
	if gens != 3 {
		t.Errorf("%d generations stored, want all 3 (the worker's death loses none)", gens)
	}
	for _, s := range scores {
		if s.metric == generate.Unscorable || s.id == "1" {
			t.Errorf("stored %v: the sample the worker died on gets no score", s)
		}
	}

	// The same folder with working code: another variant (its .py
	// digest), generated from the stored generations.
	fixed, _ := bridgeTaskFiles(t, false)
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(fixed), "utils.py"))
	if err := os.WriteFile(filepath.Join(filepath.Dir(yaml), "utils.py"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if stderr, code = run(append(base, "--python", py)...); code != 0 {
		t.Fatalf("with working code: exit %d: %s", code, stderr)
	}
	gens, scores = storeRows(t, db)
	if gens != 3 {
		t.Errorf("%d generations after the second run, want 3 (none generated again)", gens)
	}
	variants := map[string]bool{}
	for _, s := range scores {
		variants[s.task] = true
	}
	if len(variants) != 2 {
		t.Errorf("scores under %d variants, want 2 (a changed utils.py is another variant): %v", len(variants), variants)
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

type storedScore struct{ task, id, metric string }

// storeRows counts a store's generations and lists its scores.
func storeRows(t *testing.T, db string) (int, []storedScore) {
	t.Helper()
	sdb, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	var gens int
	if err := sdb.QueryRow(`SELECT count(*) FROM generations`).Scan(&gens); err != nil {
		t.Fatal(err)
	}
	rows, err := sdb.Query(`SELECT task, sample_id, metric FROM scores`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []storedScore
	for rows.Next() {
		var s storedScore
		if err := rows.Scan(&s.task, &s.id, &s.metric); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return gens, out
}
