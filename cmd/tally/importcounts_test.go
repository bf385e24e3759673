package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportCutLog (issue 37, item 5): lm-eval files tally wrote come back
// whole; the same files with the samples log cut at a line boundary (half
// its lines) are refused in one line, nothing stored, where they were
// imported with exit 0.
func TestImportCutLog(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	runTally(t, built, "demo", "--store", filepath.Join(dir, "src.db"), "--limit", "6", "--output-path", out)
	logs, _ := filepath.Glob(filepath.Join(out, "*", "samples_*.jsonl"))
	if len(logs) != 1 {
		t.Fatalf("samples logs %v", logs)
	}
	whole := filepath.Join(dir, "whole.db")
	if _, stderr, code := runStatus(t, "import", out, "--store", whole); code != 0 {
		t.Fatalf("the whole files: status %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if err := os.WriteFile(logs[0], bytes.Join(lines[:len(lines)/2], nil), 0o644); err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.db")
	_, stderr, code := runStatus(t, "import", out, "--store", cut)
	if msg := strings.TrimSpace(stderr); code != 1 || !strings.Contains(msg, "is cut short") || strings.Contains(msg, "\n") {
		t.Errorf("a log cut in half: status %d, %q; want one line refusing it", code, msg)
	}
	if _, err := os.Stat(cut); err == nil {
		if n := storeCounts(t, cut); n["generations"] != 0 || n["scores"] != 0 {
			t.Errorf("a refused import stored %v", n)
		}
	}
}
