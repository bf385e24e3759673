package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"tally/generate"
)

// execute runs tally in-process with args, returning stdout and the error
// as tally would print it.
func execute(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := execute2(t, args...)
	return out, err
}

// execute2 is execute that also returns what went to stderr.
func execute2(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := newRoot()
	var out, errb bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errb)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

// TestLMEvalSpellings is item 3 of issue 26: lm-eval's flags were "unknown
// flag" with no hint, --set num_fewshot printed a raw YAML decoding error,
// and `tally tasks list` / `--tasks list` were not understood. Each now
// works or fails with one line naming tally's spelling.
func TestLMEvalSpellings(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantOut string // on stdout, when it succeeds
		wantErr string // in the one-line error
	}{
		{[]string{"tasks", "list"}, "drop", ""},
		{[]string{"run", "--tasks", "list"}, "counting-stars", ""},
		{[]string{"tasks", "lsit"}, "", "`tally tasks list`"},
		{[]string{"demo", "--gen_kwargs", "until=."}, "", "--max-tokens N and stop sequences with --stop NAME=SEQ"},
		{[]string{"demo", "--seed", "1234"}, "", "--set fewshot_seed=N"},
		{[]string{"ls", "--output_path", "x"}, "", "tally's --output-path, which `tally ls` does not take"},
		{[]string{"demo", "--set", "num_fewshot=0"}, "", "--set num_fewshot: not a task field (lm-eval's num_fewshot is tally's fewshot); the fields are chat, compare_stop"},
		{[]string{"demo", "--set", "fewshot=some"}, "", "--set fewshot=some: want a whole number"},
		{[]string{"demo", "--num_fewshot", "-1"}, "", "--fewshot -1: want 0 or more"},
		{[]string{"demo", "--fewshot", "1", "--set", "fewshot=2"}, "", "give the number of examples once"},
		{[]string{"run", "--model", "hf", "--tasks", "demo"}, "", "--model hf is lm-eval's model type"},
		{[]string{"run", "--model", "hf", "--model_args", "pretrained=demo,trust_remote_code=True", "--tasks", "demo"}, "", "--model_args trust_remote_code: tally has no such setting"},
		{[]string{"run", "--model", "demo", "--tasks", "leval", "--num_fewshot", "2"}, "", "the leval loader's prompts take no few-shot examples"},
	} {
		out, err := execute(t, tc.args...)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("tally %s: %v", strings.Join(tc.args, " "), err)
		case tc.wantErr == "" && !strings.Contains(out, tc.wantOut):
			t.Errorf("tally %s: output lacks %q:\n%s", strings.Join(tc.args, " "), tc.wantOut, out)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n")):
			t.Errorf("tally %s: error %v, want one line with %q", strings.Join(tc.args, " "), err, tc.wantErr)
		}
	}
}

// loadWith parses args for a run-like command and returns the jobs it
// loads (no store, no model).
func loadWith(t *testing.T, args ...string) []*generate.Job {
	t.Helper()
	f := &runFlags{}
	var jobs []*generate.Job
	cmd := &cobra.Command{Use: "load", RunE: func(*cobra.Command, []string) error {
		lj, err := f.loadJobs(io.Discard)
		if lj != nil {
			jobs = lj.jobs
		}
		return err
	}}
	f.register(cmd, "demo", []string{"demo"}, nil)
	root := &cobra.Command{Use: "tally", SilenceUsage: true, SilenceErrors: true}
	root.AddCommand(cmd)
	understandLMEval(root)
	root.SetArgs(append([]string{"load"}, args...))
	if err := root.Execute(); err != nil {
		t.Fatalf("load %s: %v", strings.Join(args, " "), err)
	}
	return jobs
}

// TestFewshotFlag: --fewshot N (lm-eval's --num_fewshot N) sets the number
// of solved examples before each prompt; the demo task's default is 2.
func TestFewshotFlag(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		shots int
	}{
		{nil, 2},
		{[]string{"--num_fewshot", "0"}, 0},
		{[]string{"--num_fewshot=1"}, 1},
		{[]string{"--fewshot", "3"}, 3},
		{[]string{"--set", "fewshot=0"}, 0},
	} {
		jobs := loadWith(t, tc.args...)
		p := jobs[0].Samples[0].Prompt
		if got := strings.Count(p, "Passage:") - 1; got != tc.shots {
			t.Errorf("%v: %d examples before the prompt, want %d:\n%s", tc.args, got, tc.shots, p)
		}
	}
}

// TestStoreReportTaskFileGone: a report of the store alone reads an
// lm-eval task's file again for its lm-eval files; where it cannot (the
// file gone, or Python it needs not opted in), the files hold what the
// store has of the config, and the report says so and why, where it wrote
// them silently.
func TestStoreReportTaskFileGone(t *testing.T) {
	dir := t.TempDir()
	task := filepath.Join(dir, "gsm8k.yaml")
	src, err := os.ReadFile("../../testdata/lmeval/gsm8k/gsm8k.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(task, src, 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "s.db")
	if _, err := execute(t, "run", "--model", "demo", "--tasks", task, "--data", "../../testdata/lmeval/gsm8k/data", "--limit", "2", "--store", db); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := execute2(t, "report", "--store", db, "--output-path", filepath.Join(dir, "a"))
	if err != nil || strings.Contains(stderr, "could not be read again") {
		t.Fatalf("report with the task file in place: %v, %s", err, stderr)
	}
	if err := os.Remove(task); err != nil {
		t.Fatal(err)
	}
	_, stderr, err = execute2(t, "report", "--store", db, "--output-path", filepath.Join(dir, "b"))
	if err != nil || !strings.Contains(stderr, "task gsm8k: its task file could not be read again") || !strings.Contains(stderr, "gsm8k.yaml") {
		t.Errorf("report with the task file gone: %v; stderr %s", err, stderr)
	}
}
