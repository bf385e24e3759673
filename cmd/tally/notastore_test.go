package main

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// storeCommands are the commands that open a --store, on store path db
// (src: a sound store to copy from).
func storeCommands(db, src string) [][]string {
	base := []string{"--model", "demo", "--tasks", "demo", "--limit", "2", "--store", db}
	return [][]string{
		{"demo", "--limit", "2", "--store", db},
		append([]string{"run"}, base...),
		append([]string{"rescore"}, base...),
		append([]string{"plan"}, base...),
		append([]string{"compare"}, base...),
		{"report", "--store", db},
		{"ls", "--store", db},
		{"check", "--store", db},
		{"export", "--store", src, "--to", db},
		{"export", "--store", db, "--to", src + ".copy"},
	}
}

// TestNotATallyStoreUnchanged (issue 37, item 4): a SQLite file that is not
// a tally store is refused by every command, in one line naming it, and
// left byte for byte as it was, with no -wal or -shm beside it: one whose
// tables only bear tally's names (before, it was switched to WAL and half
// migrated before it was refused), a tally store holding a table of its
// owner's (before, ls and report read it), one carrying a trigger (which
// ran on tally's writes), and one whose table has a column more.
func TestNotATallyStoreUnchanged(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	runTally(t, built, "demo", "--store", src, "--limit", "2")
	sound, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, sql string
		fromStore bool // made from the sound store, else a new file
		want      string
	}{
		{"tally's table names", `CREATE TABLE runs(x); CREATE TABLE samples(y); CREATE TABLE generations(z); INSERT INTO runs VALUES(1)`, false, "tally schema version"},
		{"a table of one's own", `CREATE TABLE mine(note TEXT); INSERT INTO mine VALUES('keep')`, true, "tables tally does not make (mine)"},
		{"a trigger", `CREATE TRIGGER rewrite AFTER INSERT ON generations BEGIN UPDATE generations SET text='x'; END`, true, "triggers tally does not make (rewrite)"},
		{"a column more", `ALTER TABLE runs ADD COLUMN note TEXT`, true, "runs are not as tally makes them"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "x.db")
			if tc.fromStore {
				if err := os.WriteFile(db, sound, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			h, err := sql.Open("sqlite", db)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.Exec(tc.sql); err != nil {
				t.Fatal(err)
			}
			h.Close()
			before, err := os.ReadFile(db)
			if err != nil {
				t.Fatal(err)
			}
			for _, args := range storeCommands(db, src) {
				_, stderr, code := runStatus(t, args...)
				msg := strings.TrimSpace(stderr)
				if args[0] == "check" {
					msg = msg[strings.LastIndex(msg, "\n")+1:] // after its report
				}
				if code != 1 || !strings.Contains(msg, "not a tally store") || !strings.Contains(msg, tc.want) || !strings.Contains(msg, db) ||
					strings.Contains(msg, "\n") {
					t.Errorf("%v: status %d, %q; want one line saying %s is not a tally store (%s)", args, code, msg, db, tc.want)
				}
				if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
					t.Fatalf("%v changed %s", args, db)
				}
				for _, suffix := range []string{"-wal", "-shm", "-journal"} {
					if _, err := os.Stat(db + suffix); err == nil {
						t.Fatalf("%v left %s%s beside it", args, db, suffix)
					}
				}
			}
		})
	}
}

// TestStoreFIFORefused (issue 37, item 5): a --store that names a FIFO (or
// whose -wal does) is refused by every command, in one line saying what
// it is, before anything opens it; before, the open waited on the FIFO
// for good, through Ctrl-C.
func TestStoreFIFORefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src.db")
	runTally(t, built, "demo", "--store", src, "--limit", "2")
	fifo := filepath.Join(dir, "pipe.db")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	walStore := filepath.Join(dir, "wal.db")
	if b, err := os.ReadFile(src); err != nil || os.WriteFile(walStore, b, 0o644) != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(walStore+"-wal", 0o644); err != nil {
		t.Fatal(err)
	}
	for _, db := range []string{fifo, walStore} {
		for _, args := range storeCommands(db, src) {
			out, code := runGuarded(t, args...)
			msg := strings.TrimSpace(out)
			if code != 1 || !strings.Contains(msg, "named pipe (FIFO)") || !strings.Contains(msg, db) {
				t.Errorf("%v: status %d, %q; want one line refusing the FIFO", args, code, msg)
			}
		}
	}
}
