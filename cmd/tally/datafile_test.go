package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestDataFIFORefused (issue 37, item 5): a --data naming a FIFO is refused
// by run, plan and import in one line before it is opened (before, the
// open waited for a writer for good, through Ctrl-C); a pipe the shell
// hands over by its descriptor (/dev/stdin here, /dev/fd/N for <(…)) is
// still read.
func TestDataFIFORefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "data.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "s.db")
	for _, args := range [][]string{
		{"run", "--model", "demo", "--tasks", "jsonl", "--data", fifo, "--store", db},
		{"plan", "--model", "demo", "--tasks", "jsonl", "--data", fifo, "--store", db},
		{"import", "--model", "imported:x", "--tasks", "drop", "--data", fifo, "--store", db},
	} {
		out, code := runGuarded(t, args...)
		if msg := strings.TrimSpace(out); code != 1 || !strings.Contains(msg, fifo+" is a named pipe (FIFO)") || strings.Contains(msg, "\n") {
			t.Errorf("%v: status %d, %q; want one line refusing the FIFO", args, code, msg)
		}
	}
	cmd := exec.Command(built, "run", "--model", "demo", "--tasks", "jsonl", "--data", "/dev/stdin", "--store", db, "--json")
	cmd.Stdin = strings.NewReader(`{"id":"1","prompt":"Q: 2+2?\nA:","answers":["4"]}` + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Errorf("--data /dev/stdin: %v\n%s", err, stderr.String())
	}
}
