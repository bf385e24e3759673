package main

import (
	"bytes"
	"os"
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

// TestWholeOutput (issue 37, item 5): the HTML page a report writes to a
// file its shell opened (> or >>) is cut back to what the file held
// before when the command does not finish; kept when it does.
func TestWholeOutput(t *testing.T) {
	for _, tc := range []struct {
		name     string
		before   string
		finished bool
		want     string
	}{
		{"interrupted, >", "", false, ""},
		{"interrupted, >>", "earlier\n", false, "earlier\n"},
		{"finished", "earlier\n", true, "earlier\n<html>…</html>\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "page.html")
			if err := os.WriteFile(path, []byte(tc.before), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			done := wholeOutput(f)
			f.WriteString("<html>…")
			if tc.finished {
				f.WriteString("</html>\n")
				done()
			}
			undoAtExit()
			if got, _ := os.ReadFile(path); string(got) != tc.want {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
}
