package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"tally/internal/lmevalref"
	"tally/store"
)

// built is the tally binary TestMain builds for the tests that run it.
var built string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tally-test")
	if err != nil {
		panic(err)
	}
	built = filepath.Join(dir, "tally")
	if out, err := exec.Command("go", "build", "-o", built, ".").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// The caches tally keeps (weight digests, prompt keys) go to the
	// test's folder, not the user's (after the build: go's own cache
	// stays where it is).
	if os.Getenv("GOCACHE") == "" {
		if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
			os.Setenv("GOCACHE", strings.TrimSpace(string(out)))
		}
	}
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	code := m.Run()
	lmevalref.Cleanup()
	os.RemoveAll(dir)
	os.Exit(code)
}

func buildTally(t *testing.T) string { return built }

type summary struct {
	Samples              int                                      `json:"samples"`
	GenerationsNew       int                                      `json:"generations_new"`
	GenerationsReused    int                                      `json:"generations_reused"`
	GenerationsContinued int                                      `json:"generations_continued"`
	GeneratedTokens      int                                      `json:"generated_tokens"`
	Errors               int                                      `json:"errors"`
	GenerationsByPeers   int                                      `json:"generations_by_peers"`
	ClaimsTakenOver      int                                      `json:"claims_taken_over"`
	Worker               string                                   `json:"worker"`
	Scores               map[string]map[string]map[string]float64 `json:"scores"`
}

func runTally(t *testing.T, bin string, args ...string) (summary, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("tally %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	var s summary
	if strings.Contains(strings.Join(args, " "), "--json") {
		if err := json.Unmarshal(out.Bytes(), &s); err != nil {
			t.Fatalf("tally %s: bad JSON %q: %v", strings.Join(args, " "), out.String(), err)
		}
	}
	return s, out.String() + errb.String()
}

// runTallyErr runs tally and returns its combined output and error.
func runTallyErr(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}

func storeCounts(t *testing.T, path string) map[string]int {
	t.Helper()
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n, err := st.Counts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestKillAndResume kills a real `tally demo` child with SIGKILL at 20
// random instants over one run; started again with the same flags, it ends
// with the scores and record counts of an uninterrupted run.
func TestKillAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary 20+ times")
	}
	bin := buildTally(t)
	dir := t.TempDir()
	args := func(db string) []string {
		return []string{"demo", "--store", filepath.Join(dir, db), "--max-tokens", "96", "--stop", "dot=.", "--stop", "nl=\\n", "--json"}
	}
	start := time.Now()
	ref, _ := runTally(t, bin, args("ref.db")...)
	full := time.Since(start)
	if ref.Samples == 0 || ref.GeneratedTokens == 0 {
		t.Fatalf("reference run did nothing: %+v", ref)
	}

	r := rand.New(rand.NewPCG(7, 11))
	kills, progressed := 0, 0
	for kills < 20 {
		cmd := exec.Command(bin, args("killed.db")...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(r.Float64() * float64(full)))
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
			kills++
			if _, err := os.Stat(filepath.Join(dir, "killed.db")); err == nil && storeCounts(t, filepath.Join(dir, "killed.db"))["generations"] > 0 {
				progressed++
			}
		}
	}
	got, _ := runTally(t, bin, args("killed.db")...)
	if !reflect.DeepEqual(got.Scores, ref.Scores) {
		t.Errorf("scores after %d kills:\n got %v\nwant %v", kills, got.Scores, ref.Scores)
	}
	gotN, refN := storeCounts(t, filepath.Join(dir, "killed.db")), storeCounts(t, filepath.Join(dir, "ref.db"))
	for _, table := range []string{"samples", "generations", "scores"} {
		if gotN[table] != refN[table] {
			t.Errorf("%s: %d records after kills, %d uninterrupted", table, gotN[table], refN[table])
		}
	}
	t.Logf("%d kills (%d after some generations were stored); final run: %d new, %d reused", kills, progressed, got.GenerationsNew, got.GenerationsReused)
}

// TestInterruptCommits sends SIGINT (Ctrl-C) mid-run: tally exits with
// status 130 after committing, and the same command then completes.
func TestInterruptCommits(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildTally(t)
	db := filepath.Join(t.TempDir(), "i.db")
	args := []string{"demo", "--store", db, "--max-tokens", "400", "--concurrency", "2", "--json"}
	cmd := exec.Command(bin, args...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var ee *exec.ExitError
	if err == nil {
		t.Skip("run finished before the interrupt; machine too fast for this timing")
	}
	if !errors.As(err, &ee) || ee.ExitCode() != 130 || !strings.Contains(errb.String(), "interrupted") {
		t.Fatalf("interrupted run: %v, stderr %q", err, errb.String())
	}
	s, _ := runTally(t, bin, args...)
	if s.GenerationsReused+s.GenerationsNew+s.GenerationsContinued != s.Samples {
		t.Errorf("resume summary %+v", s)
	}
}

// TestBadInput checks one-line errors for bad flags, tasks and data, and
// that nothing stored is lost.
func TestBadInput(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildTally(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "b.db")
	runTally(t, bin, "demo", "--store", db, "--limit", "4")
	before := storeCounts(t, db)
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"id\":\"1\",\"prompt\":\"p\",\"answers\":\"a\"}\n{\"id\":\"2\",\"prompt\":\n"), 0o644)
	badUTF := filepath.Join(dir, "badutf.jsonl")
	os.WriteFile(badUTF, []byte("{\"id\":\"1\",\"prompt\":\"\xff\",\"answers\":\"a\"}\n"), 0o644)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--store", db, "--stop", `x=\q`}, `unknown escape \q`},
		{[]string{"run", "--store", db, "--model", "demo", "--tasks", "nope"}, `unknown task "nope"`},
		{[]string{"run", "--store", db, "--model", "/no/such/model", "--tasks", "demo"}, "/no/such/model"},
		{[]string{"run", "--store", db, "--model", "demo", "--tasks", "jsonl", "--data", bad}, "bad.jsonl line 2"},
		{[]string{"run", "--store", db, "--model", "demo", "--tasks", "jsonl", "--data", badUTF}, "badutf.jsonl line 1: invalid UTF-8"},
		{[]string{"metric", "no-such-metric"}, `unknown metric "no-such-metric"`},
		{[]string{"run", "--store", db, "--model", sharedPath(t, "fixtures/models/llama-tiny"), "--tasks", "demo"}, "has no tokenizer.json"},
		{[]string{"demo", "--store", db, "--set", "max_tokens"}, "want KEY=VALUE"},
	}
	for _, tc := range tests {
		cmd := exec.Command(bin, tc.args...)
		out, err := cmd.CombinedOutput()
		msg := strings.TrimSpace(string(out))
		if err == nil || !strings.Contains(msg, tc.want) || strings.Count(msg, "\n") > 0 {
			t.Errorf("tally %s: err %v, output %q; want one line containing %q", strings.Join(tc.args, " "), err, msg, tc.want)
		}
	}
	// --skip-bad loads the good line and counts the bad one.
	_, out := runTally(t, bin, "run", "--store", db, "--model", "demo", "--tasks", "jsonl", "--data", bad, "--skip-bad")
	if !strings.Contains(out, "skipped 1 bad line\n") {
		t.Errorf("skip-bad output %q", out)
	}
	after := storeCounts(t, db)
	if after["generations"] < before["generations"] || after["scores"] < before["scores"] {
		t.Errorf("records lost: before %v after %v", before, after)
	}
}
