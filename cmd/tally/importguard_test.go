package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// These tests cover issue 23, finding 5: import trusted the folder (a FIFO
// hung it for good, a link to /dev/zero exhausted memory, links out of the
// folder were followed) and lines had no bound (a 50 MB data line made a
// run take 49 s and 5.7 GB).

// logLines is an lm-eval sample log of n generate_until lines.
func logLines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"doc_id":%d,"doc":{"q":"question %d"},"target":"a%d","arguments":[["Q%d:",{"until":["."]}]],"resps":[["a%d"]],"filtered_resps":["a%d"],"metrics":["exact_match"],"exact_match":1}`+"\n", i, i, i, i, i, i)
	}
	return b.String()
}

// logName is an lm-eval sample log's file name for task.
func logName(task string) string { return "samples_" + task + "_2024-05-01T10-00-00.123456.jsonl" }

// runGuarded runs tally, killing it (and failing the test) if it is still
// running after outageGuard; it returns the combined output and exit
// status.
func runGuarded(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), outageGuard)
	defer cancel()
	out, err := exec.CommandContext(ctx, built, args...).CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("tally %s: still running after %s: killed\n%s", strings.Join(args, " "), outageGuard, out)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

// TestImportRefusesUntrusted: in a folder given to tally import, a FIFO, a
// link to a device, a link out of the folder and an over-long line are
// each refused in one line naming the file (and line), before anything is
// stored; --follow-symlinks reads the link out of the folder.
func TestImportRefusesUntrusted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	base := t.TempDir()
	outside := filepath.Join(base, "elsewhere", logName("out"))
	must(t, os.MkdirAll(filepath.Dir(outside), 0o755))
	must(t, os.WriteFile(outside, []byte(logLines(2)), 0o644))
	long := `{"doc_id":0,"doc":{"q":"` + strings.Repeat("x", 17<<20) + `"}}` + "\n"
	tests := []struct {
		name   string
		hazard func(dir string) error
		want   string
	}{
		{"fifo", func(dir string) error { return syscall.Mkfifo(filepath.Join(dir, logName("fifo")), 0o644) }, "is a named pipe"},
		{"fifo by content name", func(dir string) error { return syscall.Mkfifo(filepath.Join(dir, "notes.jsonl"), 0o644) }, "is a named pipe"},
		{"dev zero", func(dir string) error { return os.Symlink("/dev/zero", filepath.Join(dir, logName("zero"))) }, "is a device"},
		{"link out", func(dir string) error { return os.Symlink(outside, filepath.Join(dir, logName("out"))) }, "outside"},
		{"long line", func(dir string) error { return os.WriteFile(filepath.Join(dir, logName("long")), []byte(long), 0o644) }, "line 1: longer than 16 MiB"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			must(t, os.MkdirAll(dir, 0o755))
			must(t, os.WriteFile(filepath.Join(dir, logName("good")), []byte(logLines(3)), 0o644))
			must(t, tc.hazard(dir))
			db := filepath.Join(t.TempDir(), "i.db")
			out, code := runGuarded(t, "import", dir, "--store", db)
			msg := strings.TrimSpace(out)
			if code != ExitError || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("import: exit status %d, output %q; want %d and one line containing %q", code, msg, ExitError, tc.want)
			}
			if _, err := os.Stat(db); err == nil {
				if n := storeCounts(t, db); n["generations"] != 0 || n["runs"] != 0 {
					t.Errorf("a refused import stored %v", n)
				}
			}
		})
	}
	t.Run("follow symlinks", func(t *testing.T) {
		dir := t.TempDir()
		must(t, os.Symlink(outside, filepath.Join(dir, logName("out"))))
		db := filepath.Join(t.TempDir(), "i.db")
		out, code := runGuarded(t, "import", dir, "--store", db, "--follow-symlinks")
		if n := storeCounts(t, db); code != 0 || n["generations"] != 2 {
			t.Errorf("import --follow-symlinks: exit status %d, store %v\n%s", code, n, out)
		}
	})
}

// TestDataLineBound: a task data file (--data) with a line past 16 MiB is
// refused in one line naming the file and line, before any model work.
func TestDataLineBound(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "big.jsonl")
	must(t, os.WriteFile(data, []byte(`{"id":"1","prompt":"p","answers":"a"}`+"\n"+`{"id":"2","prompt":"`+strings.Repeat("y ", 9<<20)+`","answers":"a"}`+"\n"), 0o644))
	out, code := runGuarded(t, "run", "--model", "demo", "--tasks", "jsonl", "--data", data, "--store", filepath.Join(dir, "d.db"))
	msg := strings.TrimSpace(out)
	if code != ExitError || !strings.Contains(msg, "big.jsonl line 2: longer than 16 MiB") || strings.Contains(msg, "\n") {
		t.Errorf("run: exit status %d, output %q; want %d and one line naming big.jsonl line 2", code, msg, ExitError)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestImportAllOrNothing (issue 23, finding 6): an import of a good file
// then a truncated one exits 1 and stores nothing, the good file's rows
// and any run record included (they were stored, with a run left
// "running"); what the store held before is unchanged.
func TestImportAllOrNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	db := filepath.Join(t.TempDir(), "a.db")
	first := t.TempDir()
	must(t, os.WriteFile(filepath.Join(first, logName("first")), []byte(logLines(2)), 0o644))
	if out, code := runGuarded(t, "import", first, "--store", db); code != 0 {
		t.Fatalf("first import: exit status %d\n%s", code, out)
	}
	before := storeCounts(t, db)
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, logName("a_good")), []byte(logLines(5)), 0o644))
	good := logLines(2)
	must(t, os.WriteFile(filepath.Join(dir, logName("b_cut")), []byte(good+good[:40]), 0o644))
	out, code := runGuarded(t, "import", dir, "--store", db)
	if code != ExitError || !strings.Contains(out, logName("b_cut")+" line 3") {
		t.Errorf("import of a truncated file: exit status %d, output %q; want %d naming its line 3", code, out, ExitError)
	}
	after := storeCounts(t, db)
	for _, table := range []string{"runs", "samples", "generations", "scores"} {
		if after[table] != before[table] {
			t.Errorf("%s: %d before the failed import, %d after", table, before[table], after[table])
		}
	}
	ls, code := runGuarded(t, "ls", "--store", db, "--json")
	if code != 0 || strings.Contains(ls, `"running"`) {
		t.Errorf("ls after the failed import (exit status %d) shows a running record:\n%s", code, ls)
	}
}
