package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// These tests cover issue 23 ("nothing lost, nothing leaked, nothing
// written where it was not asked"), the store's findings, on the built
// binary.

// runJSONInto runs tally with --json, wants the exit status code, and decodes
// stdout into v.
func runJSONInto(t *testing.T, v any, code int, args ...string) string {
	t.Helper()
	stdout, stderr, got := runStatus(t, append(args, "--json")...)
	if got != code {
		t.Fatalf("tally %s: status %d, want %d\n%s%s", strings.Join(args, " "), got, code, stdout, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), v); err != nil {
		t.Fatalf("tally %s: bad JSON %q: %v", strings.Join(args, " "), stdout, err)
	}
	return stderr
}

// runSummary is what the tests read of `tally run --json`.
type runSummary struct {
	GenerationsNew       int                                      `json:"generations_new"`
	GenerationsContinued int                                      `json:"generations_continued"`
	Errors               int                                      `json:"errors"`
	Scores               map[string]map[string]map[string]float64 `json:"scores"`
	Counts               map[string]map[string]struct {
		Scored int `json:"n_scored"`
		Failed int `json:"n_failed"`
	} `json:"counts"`
}

// planSummaryJSON is what the tests read of `tally plan --json`.
type planSummaryJSON struct {
	Counts           map[string]int `json:"counts"`
	Requests         int            `json:"requests"`
	TokensToGenerate int            `json:"tokens_to_generate"`
}

// finishes counts a SQLite store's generations by finish reason, and
// returns the largest prompt plus generated tokens.
func finishes(t *testing.T, path string) (map[string]int, int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT finish, COUNT(*), MAX(prompt_tokens + n_tokens) FROM generations GROUP BY finish`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out, most := map[string]int{}, 0
	for rows.Next() {
		var f string
		var n, m int
		if err := rows.Scan(&f, &n, &m); err != nil {
			t.Fatal(err)
		}
		out[f], most = n, max(most, m)
	}
	return out, most
}

// TestBudgetPastContext (finding 1): a token budget past the demo model's
// 1,024-token context is capped by it: the generations that reach the
// context end with finish "context-full" and are scored like any other;
// plan then shows nothing to do, rerun changes nothing, and a plain run
// reuses every generation. A store whose capped generations an earlier
// tally recorded as "length" is read the same way. Realistic prompts (~890
// tokens with a budget of 200) likewise.
func TestBudgetPastContext(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "f.db")
	base := []string{"--model", "demo", "--tasks", "demo", "--store", db}
	var first, long, again runSummary
	runJSONInto(t, &first, 0, append([]string{"run"}, base...)...)
	nl := first.Scores["demo"]["nl"]["drop.f1"]
	if nl < 0.9 {
		t.Fatalf("demo: nl drop.f1 %.3f", nl)
	}
	runJSONInto(t, &long, 0, append([]string{"run", "--max-tokens", "1000"}, base...)...)
	for _, set := range []string{"nl", "dot", "none"} {
		if c := long.Counts["demo"][set]; c.Scored != 40 || c.Failed != 0 {
			t.Errorf("--max-tokens 1000: setting %s scored %d, failed %d; want 40, 0", set, c.Scored, c.Failed)
		}
	}
	if long.Errors != 0 || long.Scores["demo"]["nl"]["drop.f1"] != nl {
		t.Errorf("--max-tokens 1000: %d errors, nl drop.f1 %v (was %v)", long.Errors, long.Scores["demo"]["nl"]["drop.f1"], nl)
	}
	fin, most := finishes(t, db)
	if fin["context-full"] != 40 || most != 1024 {
		t.Errorf("generations by finish %v, longest prompt+output %d; want 40 context-full filling the 1024-token context", fin, most)
	}
	checkNothingToDo := func(when string) {
		t.Helper()
		var p planSummaryJSON
		runJSONInto(t, &p, 0, append([]string{"plan", "--max-tokens", "1000"}, base...)...)
		if p.Requests != 0 || p.TokensToGenerate != 0 || p.Counts["continue"] != 0 || p.Counts["failed"] != 0 {
			t.Errorf("%s: plan --max-tokens 1000: %+v; want nothing to do", when, p)
		}
		var r runSummary
		runJSONInto(t, &r, 0, append([]string{"rerun", "--max-tokens", "1000"}, base...)...)
		if r.GenerationsNew+r.GenerationsContinued != 0 || r.Counts["demo"]["nl"].Failed != 0 || r.Scores["demo"]["nl"]["drop.f1"] != nl {
			t.Errorf("%s: rerun --max-tokens 1000: %+v; want no work and nl drop.f1 %v", when, r, nl)
		}
		if fin, _ := finishes(t, db); fin["context"] != 0 || fin["error"] != 0 {
			t.Errorf("%s: rerun stored failures: %v", when, fin)
		}
	}
	checkNothingToDo("after the run")
	// An earlier tally recorded a capped generation as "length" (and
	// wrote no seal: the stop record's last member, `,"seal":"…"`).
	sdb, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sdb.Exec(`UPDATE generations SET finish='length', stops=substr(stops, 1, length(stops)-27) || '}' WHERE finish='context-full'`); err != nil {
		t.Fatal(err)
	}
	sdb.Close()
	checkNothingToDo("generations recorded as length")
	runJSONInto(t, &again, 0, append([]string{"run"}, base...)...)
	if again.GenerationsNew+again.GenerationsContinued != 0 || again.Scores["demo"]["nl"]["drop.f1"] != nl {
		t.Errorf("plain run after: %d generated, %d continued, nl drop.f1 %v; want 0, 0, %v",
			again.GenerationsNew, again.GenerationsContinued, again.Scores["demo"]["nl"]["drop.f1"], nl)
	}

	// Prompts of ~890 tokens and a budget of 200.
	data := filepath.Join(dir, "long.jsonl")
	var lines strings.Builder
	prompt := strings.Repeat("Passage: the team scored 21 points in the second quarter. ", 40) + "Question: how many points?\nAnswer:"
	for i := range 3 {
		fmt.Fprintf(&lines, "{\"id\":\"s%d\",\"prompt\":%q,\"answers\":\"21\"}\n", i, prompt+strings.Repeat(" ", i))
	}
	if err := os.WriteFile(data, []byte(lines.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ldb := filepath.Join(dir, "l.db")
	largs := []string{"--model", "demo", "--tasks", "jsonl", "--data", data, "--max-tokens", "200", "--stop", "none=", "--stop", `nl=\n`, "--store", ldb}
	var lr runSummary
	runJSONInto(t, &lr, 0, append([]string{"run"}, largs...)...)
	if c := lr.Counts["jsonl"]["none"]; c.Scored != 3 || c.Failed != 0 || lr.Errors != 0 {
		t.Errorf("long prompts: %+v", lr)
	}
	if fin, most := finishes(t, ldb); fin["context-full"] != 3 || most != 1024 {
		t.Errorf("long prompts: generations by finish %v, longest %d", fin, most)
	}
	var lp planSummaryJSON
	runJSONInto(t, &lp, 0, append([]string{"plan"}, largs...)...)
	if lp.Requests != 0 {
		t.Errorf("long prompts: plan %+v; want nothing to do", lp)
	}
}

// TestBudgetOverflowRefused (finding 1): budgets and sizes that overflow
// are refused in one line, by every command that plans, before anything is
// written; the task's own budget (--set max_tokens) too.
func TestBudgetOverflowRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	db := filepath.Join(t.TempDir(), "o.db")
	runTally(t, built, "demo", "--store", db)
	before := storeCounts(t, db)
	base := []string{"--model", "demo", "--tasks", "demo", "--store", db}
	for _, tc := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"plan", []string{"--max-tokens", "9223372036854775807"}, "--max-tokens 9223372036854775807: want"},
		{"rerun", []string{"--max-tokens", "9223372036854775807"}, "--max-tokens 9223372036854775807: want"},
		{"run", []string{"--max-tokens", "1073741825"}, "--max-tokens 1073741825: want"},
		{"run", []string{"--max-tokens", "99999999999999999999"}, "--max-tokens"},
		{"run", []string{"--concurrency", "9223372036854775807"}, "--concurrency 9223372036854775807: want"},
		{"run", []string{"--set", "max_tokens=9223372036854775807"}, "token budget 9223372036854775807"},
		{"plan", []string{"--set", "max_tokens=9223372036854775807"}, "token budget 9223372036854775807"},
	} {
		stdout, stderr, code := runStatus(t, append(append([]string{tc.cmd}, base...), tc.args...)...)
		msg := strings.TrimSpace(stderr)
		if code != 1 || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") || strings.Contains(stdout, "-") {
			t.Errorf("%s %v: status %d, %q%s; want one line with %q", tc.cmd, tc.args, code, msg, stdout, tc.want)
		}
	}
	if after := storeCounts(t, db); after["generations"] != before["generations"] || after["runs"] != before["runs"] {
		t.Errorf("refused commands wrote the store: %v, then %v", before, after)
	}
}

// storedRuns reads a SQLite store's runs table as recorded: status by id.
func storedRuns(t *testing.T, path string) map[int64]string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT id, status FROM runs`)
	if err != nil {
		return nil // not created yet
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var st string
		if err := rows.Scan(&id, &st); err != nil {
			t.Fatal(err)
		}
		out[id] = st
	}
	return out
}

// startRun starts tally in the background and waits until it has recorded
// run id in the store.
func startRun(t *testing.T, path string, id int64, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(built, args...)
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if _, ok := storedRuns(t, path)[id]; ok {
			return cmd
		}
	}
	t.Fatalf("tally %s recorded no run %d:\n%s", strings.Join(args, " "), id, errb.String())
	return nil
}

// lsRuns is what `tally ls --json` says of the runs: the counts by status
// and the last run's status.
func lsRuns(t *testing.T, path string) (map[string]int, string) {
	t.Helper()
	var inv struct {
		Runs    map[string]int                     `json:"runs"`
		LastRun map[string]struct{ Status string } `json:"last_run"`
	}
	runJSONInto(t, &inv, 0, "ls", "--store", path)
	last := ""
	for _, r := range inv.LastRun {
		last = r.Status
	}
	return inv.Runs, last
}

// TestRunRecordsClosed (finding 6): a run record is always closed: a run
// interrupted by a signal is recorded as interrupted, and one whose store
// write failed (a full disk) as failed, not interrupted; a killed run, whose
// record stays "running", is shown as dead by ls once its heartbeat lapses
// (and as running while it lives).
func TestRunRecordsClosed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	killed := filepath.Join(dir, "k.db")
	cmd := startRun(t, killed, 1, "demo", "--store", killed, "--max-tokens", "1000", "--lease", "3s")
	if counts, last := lsRuns(t, killed); last != "running" || counts["running"] != 1 {
		t.Errorf("live run: ls says %v, last %q; want it running", counts, last)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	time.Sleep(3500 * time.Millisecond)
	if counts, last := lsRuns(t, killed); last != "dead" || counts["dead"] != 1 {
		t.Errorf("killed run: ls says %v, last %q; want it dead", counts, last)
	}
	if out := tallyOut(t, "ls", "--store", killed); !strings.Contains(out, "runs: 1 dead") {
		t.Errorf("ls does not count the dead run:\n%s", out)
	}

	interrupted := filepath.Join(dir, "i.db")
	cmd = startRun(t, interrupted, 1, "demo", "--store", interrupted, "--max-tokens", "1000")
	cmd.Process.Signal(os.Interrupt)
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != ExitInterrupted {
		t.Fatalf("interrupted run: %v", err)
	}
	if got := storedRuns(t, interrupted)[1]; got != "interrupted" {
		t.Errorf("interrupted run recorded as %q", got)
	}

	full, ok := smallDisk(t, filepath.Join(dir, "full"), 2<<20)
	if !ok {
		return
	}
	db := filepath.Join(full, "d.db")
	runTally(t, built, "demo", "--store", db)
	fill(t, full, 150<<10)
	_, stderr, code := runStatus(t, "demo", "--store", db, "--max-tokens", "1000")
	if code != 1 {
		t.Fatalf("run on a full disk: status %d\n%s", code, stderr)
	}
	if got := storedRuns(t, db)[2]; got != "failed" {
		t.Errorf("run that hit a full disk recorded as %q, want failed (stderr %q)", got, stderr)
	}
}

// smallDisk mounts a tmpfs of size bytes at dir (unmounted when the test
// ends), or says why it cannot (not root, no mount permission) and
// returns false.
func smallDisk(t *testing.T, dir string, size int) (string, bool) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Logf("skipping the full-disk part: cannot mount a small tmpfs (needs root): %v %s", err, out)
		return "", false
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir, true
}

// fill writes a file in dir that leaves about room bytes free on its disk.
func fill(t *testing.T, dir string, room int64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	if free <= room {
		return
	}
	if err := os.WriteFile(filepath.Join(dir, "filler"), make([]byte, free-room), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestForeignSQLiteRefused (finding 7): every writing command refuses, in
// one line, a SQLite file holding tables tally does not make, and leaves
// it byte for byte as it was (not even switched to WAL mode); read-only
// commands refuse it too.
func TestForeignSQLiteRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT); INSERT INTO users(name) VALUES('ada')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	before, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "src.db")
	runTally(t, built, "demo", "--store", src, "--limit", "2")
	base := []string{"--model", "demo", "--tasks", "demo", "--limit", "2", "--store", other}
	for _, args := range [][]string{
		{"demo", "--store", other},
		append([]string{"run"}, base...),
		append([]string{"rerun"}, base...),
		append([]string{"rescore"}, base...),
		{"export", "--store", src, "--to", other},
		append([]string{"plan"}, base...),
		append([]string{"report"}, base...),
		{"ls", "--store", other},
	} {
		_, stderr, code := runStatus(t, args...)
		msg := strings.TrimSpace(stderr)
		if code != 1 || !strings.Contains(msg, "not a tally store") || !strings.Contains(msg, other) || strings.Contains(msg, "\n") {
			t.Errorf("%v: status %d, %q; want one line saying %s is not a tally store", args, code, msg, other)
		}
		if after, _ := os.ReadFile(other); !bytes.Equal(before, after) {
			t.Fatalf("%v changed %s", args, other)
		}
		for _, suffix := range []string{"-wal", "-shm", "-journal"} {
			if _, err := os.Stat(other + suffix); err == nil {
				t.Errorf("%v left %s%s beside it", args, other, suffix)
			}
		}
	}
}

// TestStoreErrorsNameTheStore (finding 8): a directory given as --store,
// a store in a missing directory, a store whose disk is full, and one on
// a read-only file system are each reported naming the store and what is
// wrong with it.
func TestStoreErrorsNameTheStore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	_, stderr, code := runStatus(t, "demo", "--store", dir)
	if msg := strings.TrimSpace(stderr); code != 1 || !strings.Contains(msg, "store "+dir+" is a directory") || strings.Contains(msg, "\n") {
		t.Errorf("a directory as --store: status %d, %q", code, msg)
	}
	missing := filepath.Join(dir, "no", "such", "s.db")
	if _, stderr, code := runStatus(t, "demo", "--store", missing); code != 1 || !strings.Contains(stderr, "its directory "+filepath.Dir(missing)+" does not exist") {
		t.Errorf("a store in a missing directory: status %d, %q", code, stderr)
	}

	disk, ok := smallDisk(t, filepath.Join(dir, "disk"), 2<<20)
	if !ok {
		return
	}
	db := filepath.Join(disk, "d.db")
	runTally(t, built, "demo", "--store", db)
	fill(t, disk, 150<<10)
	_, stderr, code = runStatus(t, "demo", "--store", db, "--max-tokens", "1000")
	if code != 1 || !strings.Contains(stderr, "store "+db+" is full") {
		t.Errorf("a full disk: status %d, stderr %q; want it to say store %s is full", code, stderr, db)
	}
	os.Remove(filepath.Join(disk, "filler"))
	remount := func(mode string) {
		t.Helper()
		if out, err := exec.Command("mount", "-o", "remount,"+mode, disk).CombinedOutput(); err != nil {
			t.Fatalf("remount %s: %v %s", mode, err, out)
		}
	}
	remount("ro")
	_, stderr, code = runStatus(t, "demo", "--store", db, "--max-tokens", "1000")
	if msg := strings.TrimSpace(stderr); code != 1 || !strings.Contains(msg, "store "+db+" is read-only") || strings.Contains(msg, "\n") {
		t.Errorf("a read-only file system: status %d, %q; want one line saying store %s is read-only", code, msg, db)
	}
	remount("rw")
	// A store made read-only while a run writes to it (a file system
	// cannot be remounted read-only while a file on it is open for
	// writing): TestStorageErrorsNamed, in package store.
}
