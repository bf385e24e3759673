package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"tally/generate"
)

// TestPlurals is item 6 of issue 34: counts of one are said in the
// singular ("1 prompts exceed" was printed).
func TestPlurals(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	_, stderr, err := execute2(t, "demo", "--store", db, "--fewshot", "39", "--limit", "1")
	if exitStatus(err, new(bytes.Buffer)) != ExitFailed {
		t.Fatalf("status: %v\n%s", err, stderr)
	}
	for _, want := range []string{"tally: 1 prompt exceeds the model's context", "generating 1 sample\n", "\n1 sample: "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if err == nil || !strings.HasPrefix(err.Error(), "3 (sample, setting) pairs failed") {
		t.Errorf("error %v", err)
	}
	var b bytes.Buffer
	printPlan(&b, &generate.Plan{Counts: map[generate.Status]int{}, Requests: 1, Overflow: 1, Stale: 1, PromptTokens: 1, Untokenised: 1}, nil)
	for _, want := range []string{"1 prompt exceeds the context", "1 (sample, setting) pair has stale scores", "1 prompt token and the 1 prompt the server tokenises"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, b.String())
		}
	}
}
