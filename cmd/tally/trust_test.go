package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tally/internal/demodata"
	"tally/store"
)

// These tests cover issue 11 ("no number that tally prints can be silently
// wrong"), findings 3 to 9, on the built binary.

// runStatus runs tally and returns stdout, stderr and the exit status.
func runStatus(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(built, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("tally %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), code
}

// TestSharedStore (finding 6): three `tally demo` started at once on a new
// store all exit 0, make one generation per demo question in total, and print the scores of
// a single run.
func TestSharedStore(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	ref, _ := runTally(t, built, "demo", "--store", filepath.Join(dir, "ref.db"), "--json")
	db := filepath.Join(dir, "shared.db")
	type res struct {
		s    summary
		new  int
		err  error
		errs string
	}
	out := make([]res, 3)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var o, e bytes.Buffer
			cmd := exec.Command(built, "demo", "--store", db, "--json")
			cmd.Stdout, cmd.Stderr = &o, &e
			out[i].err, out[i].errs = cmd.Run(), e.String()
			if out[i].err == nil {
				out[i].err = json.Unmarshal(o.Bytes(), &out[i].s)
			}
		}()
	}
	wg.Wait()
	total := 0
	for i, r := range out {
		if r.err != nil {
			t.Fatalf("process %d: %v\n%s", i, r.err, r.errs)
		}
		total += r.s.GenerationsNew
		if !reflect.DeepEqual(r.s.Scores, ref.Scores) {
			t.Errorf("process %d scores %v, want those of a single run %v", i, r.s.Scores, ref.Scores)
		}
	}
	if n := storeCounts(t, db); total != demodata.TaskQuestions || n["generations"] != demodata.TaskQuestions || n["claims"] != 0 {
		t.Errorf("%d generations made in total, store %v; want %d and no claims left", total, n, demodata.TaskQuestions)
	}
}

// TestClaimTakeover (finding 6): the claims of a process killed with
// SIGKILL are taken over once their lease expires, and the work is done
// once.
func TestClaimTakeover(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	db := filepath.Join(t.TempDir(), "k.db")
	args := []string{"demo", "--store", db, "--max-tokens", "400", "--concurrency", "1", "--lease", "1s"}
	victim := exec.Command(built, args...)
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until it holds claims, then kill it.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if time.Now().After(deadline) {
			victim.Process.Kill()
			t.Fatal("the first process never claimed work")
		}
		if claimsHeld(t, db) > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	victim.Process.Signal(syscall.SIGKILL)
	victim.Wait()
	left := claimsHeld(t, db)
	if left == 0 {
		t.Skip("the first process finished before it was killed")
	}
	var s struct {
		summary
		TakenOver int `json:"claims_taken_over"`
	}
	stdout, stderr, code := runStatus(t, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("second process: status %d\n%s", code, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	if s.TakenOver == 0 || !strings.Contains(stderr, "took over") {
		t.Errorf("claims taken over: %d (%d were left); stderr %q", s.TakenOver, left, stderr)
	}
	if n := storeCounts(t, db); n["generations"] != demodata.TaskQuestions || n["claims"] != 0 {
		t.Errorf("store %v, want %d generations and no claims", n, demodata.TaskQuestions)
	}
}

// claimsHeld counts the rows of the claims table of a store (0 when it
// does not exist yet).
func claimsHeld(t *testing.T, path string) int {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		return 0
	}
	st, err := store.OpenReadOnly(context.Background(), path)
	if err != nil {
		return 0 // not migrated yet
	}
	defer st.Close()
	n, err := st.Counts(context.Background())
	if err != nil {
		return 0
	}
	return n["claims"]
}

// TestReadOnlyCommands (finding 5): report, plan and compare never create
// a store (a missing one is a one-line error naming the path), and work on
// a read-only store in a read-only directory.
func TestReadOnlyCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	missing := filepath.Join(dir, "typo.db")
	base := []string{"--model", "demo", "--tasks", "demo", "--store"}
	for _, c := range []string{"report", "plan", "compare"} {
		_, stderr, code := runStatus(t, append([]string{c}, append(base, missing)...)...)
		if code != 1 || !strings.Contains(stderr, missing) || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
			t.Errorf("%s on a missing store: status %d, %q", c, code, stderr)
		}
		if _, err := os.Stat(missing); err == nil {
			t.Fatalf("%s created %s", c, missing)
		}
	}
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o755)
	db := filepath.Join(ro, "s.db")
	runTally(t, built, "demo", "--store", db)
	before, _ := os.ReadFile(db)
	os.Chmod(db, 0o444)
	os.Chmod(ro, 0o555)
	t.Cleanup(func() { os.Chmod(ro, 0o755) })
	for _, c := range []string{"report", "plan", "compare"} {
		stdout, stderr, code := runStatus(t, append([]string{c}, append(base, db)...)...)
		if code != 0 || !strings.Contains(stdout, "demo") {
			t.Errorf("%s on a read-only store: status %d\n%s%s", c, code, stdout, stderr)
		}
	}
	if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
		t.Error("a read-only command changed the store")
	}
	// Where the directory really is read-only (not for root), nothing can
	// have been made beside the store; otherwise SQLite may leave its WAL
	// index files there, which is not a change to the store.
	if f, err := os.Create(filepath.Join(ro, "probe")); err == nil {
		f.Close()
		os.Remove(f.Name())
		if os.Getuid() == 0 {
			asNobody(t, base)
		}
	}
}

// asNobody repeats the read-only commands as user nobody (for whom the
// modes are enforced) on a read-only store in a read-only directory.
func asNobody(t *testing.T, base []string) {
	dir, err := os.MkdirTemp("", "tally-ro")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { os.Chmod(filepath.Join(dir, "ro"), 0o755); os.RemoveAll(dir) }()
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "tally")
	b, _ := os.ReadFile(built)
	os.WriteFile(bin, b, 0o755)
	ro := filepath.Join(dir, "ro")
	os.Mkdir(ro, 0o755)
	db := filepath.Join(ro, "s.db")
	runTally(t, bin, "demo", "--store", db)
	os.Chmod(db, 0o444)
	os.Chmod(ro, 0o555)
	for _, c := range []string{"report", "plan", "compare"} {
		cmd := exec.Command(bin, append([]string{c}, append(base, db)...)...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "demo") {
			t.Errorf("%s as nobody on a read-only store and directory: %v\n%s", c, err, out)
		}
	}
	if ents, _ := os.ReadDir(ro); len(ents) != 1 {
		t.Errorf("files made beside a read-only store: %v", ents)
	}
}

// TestScoresAreDerived: no command shows a score computed from inputs
// that have since changed. Data whose answers changed is another variant
// of the task (its data's digest makes it one): its scores are its own,
// computed from the stored generations with no model work, and the
// first data's stay the first variant's, never mixed with them. A change
// of the task's metrics makes the stored scores stale: a run recomputes
// and stores them, dropping the metric no longer named; report recomputes
// them in memory.
func TestScoresAreDerived(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "d.db")
	data := filepath.Join(dir, "qa.jsonl")
	task := filepath.Join(dir, "qa.yaml")
	writeTask := func(metrics string) {
		os.WriteFile(task, []byte("task: qa\nloader: jsonl\nid: \"{{.id}}\"\nprompt: \"Q: {{.prompt}}\\nA:\"\nreferences: answers\n"+
			"stop:\n  nl: [\"\\n\"]\nmax_tokens: 16\nmetrics: ["+metrics+"]\n"), 0o644)
	}
	writeData := func(gold string) {
		var b strings.Builder
		for i := 0; i < 4; i++ {
			a := "nothing"
			if i == 0 {
				a = gold
			}
			fmt.Fprintf(&b, "{\"id\":\"q%d\",\"prompt\":\"what is %d plus %d?\",\"answers\":[%q]}\n", i, i, i, a)
		}
		os.WriteFile(data, []byte(b.String()), 0o644)
	}
	writeTask("exact_match, f1")
	writeData("nothing")
	args := []string{"run", "--model", "demo", "--tasks", task, "--data", data, "--store", db, "--json"}
	first, _ := runTally(t, built, args...)
	if first.Scores["qa"]["nl"]["exact_match"] != 0 {
		t.Fatalf("first run %v", first.Scores)
	}
	// Make q0's gold answer what the model said: its exact match becomes
	// 1, in a second variant scored from the same generations.
	pred := storedPrediction(t, db, "q0")
	writeData(pred)
	second, out := runTally(t, built, args...)
	if got := second.Scores["qa"]["nl"]["exact_match"]; got != 0.25 {
		t.Errorf("after the gold answer changed: exact_match %v, want 0.25 (prediction %q)", got, pred)
	}
	if second.GenerationsNew != 0 || second.GenerationsReused != 4 {
		t.Errorf("second run: %+v\n%s", second, out)
	}
	variantMeans := func() map[string]float64 {
		t.Helper()
		var rows []struct {
			Task, Variant, Metric string
			Mean                  struct{ Estimate float64 }
		}
		if err := json.Unmarshal([]byte(tallyOut(t, "report", "--store", db, "--json")), &rows); err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, r := range rows {
			if r.Metric == "exact_match" {
				out[r.Task] = r.Mean.Estimate
			}
		}
		return out
	}
	if m := variantMeans(); len(m) != 2 || !slices.Contains(slices.Collect(maps.Values(m)), 0.0) || !slices.Contains(slices.Collect(maps.Values(m)), 0.25) {
		t.Errorf("store-only report: exact_match by task %v, want one variant at 0 and one at 0.25", m)
	}
	// Drop f1 from the task: the same variant (metrics do not make one),
	// whose stored exact_match scores are stale (the task's scoring
	// changed): recomputed and stored, f1 gone from run, report and the
	// variant's stored scores.
	writeTask("exact_match")
	third, out := runTally(t, built, args...)
	if _, ok := third.Scores["qa"]["nl"]["f1"]; ok || third.Scores["qa"]["nl"]["exact_match"] != 0.25 || !strings.Contains(out, "recomputed 4 stale scores") {
		t.Errorf("after f1 was removed: %v\n%s", third.Scores, out)
	}
	if n := metricRows(t, db, "f1"); n != 4 {
		t.Errorf("%d f1 scores left in the store, want the first variant's 4", n)
	}
	rep, _, _ := runStatus(t, "report", "--model", "demo", "--tasks", task, "--data", data, "--store", db, "--format", "text")
	if strings.Contains(rep, "f1") || !strings.Contains(rep, "exact_match") {
		t.Errorf("report after f1 was removed:\n%s", rep)
	}
	// report never writes: the first variant's stored scores, stale under
	// the task's new metrics, are recomputed in memory.
	writeData("nothing")
	_, stderr, _ := runStatus(t, "report", "--model", "demo", "--tasks", task, "--data", data, "--store", db, "--format", "json")
	if !strings.Contains(stderr, "recomputed 4 stale scores") || !strings.Contains(stderr, "in memory") {
		t.Errorf("report stderr %q", stderr)
	}
}

// storedPrediction reads the prediction stored for a sample.
func storedPrediction(t *testing.T, path, id string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var p string
	if err := db.QueryRow(`SELECT prediction FROM scores WHERE sample_id=? LIMIT 1`, id).Scan(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

// metricRows counts a metric's stored scores.
func metricRows(t *testing.T, path, metric string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM scores WHERE metric=?`, metric).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFailedSamplesVisible (finding 4): a prompt beyond the context is
// counted as failed beside the mean, counts as 0, makes tally exit 3, and
// `tally plan` lists it as failed with its reason and prints no Inf/NaN.
func TestFailedSamplesVisible(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "f.db")
	data := filepath.Join(dir, "long.jsonl")
	var long strings.Builder
	for i := 0; long.Len() < 20000; i++ {
		fmt.Fprintf(&long, "%d ", i*7919%10007)
	}
	os.WriteFile(data, []byte(fmt.Sprintf("{\"id\":\"short\",\"prompt\":\"hi\",\"answers\":\"x\"}\n{\"id\":\"long\",\"prompt\":%q,\"answers\":\"x\"}\n", long.String())), 0o644)
	args := []string{"--model", "demo", "--tasks", "jsonl", "--data", data, "--store", db}
	// A run of only the overflowing sample measures no throughput (no
	// token generated): plan then says "unknown", never +Inf.
	if _, stderr, code := runStatus(t, append([]string{"run", "--samples", "long"}, args...)...); code != 3 {
		t.Fatalf("run of the long sample: status %d\n%s", code, stderr)
	}
	stdout, _, _ := runStatus(t, append([]string{"plan"}, args...)...)
	if !strings.Contains(stdout, "time: unknown") || strings.Contains(stdout, "Inf") || strings.Contains(stdout, "NaN") {
		t.Errorf("plan with no throughput known:\n%s", stdout)
	}
	stdout, stderr, code := runStatus(t, append([]string{"run", "--json"}, args...)...)
	if code != 3 || !strings.Contains(stderr, "failed") {
		t.Fatalf("run with a failed sample: status %d, stderr %q", code, stderr)
	}
	var s struct {
		Counts map[string]map[string]struct {
			Scored int `json:"n_scored"`
			Failed int `json:"n_failed"`
		} `json:"counts"`
		FailedSamples string `json:"failed_samples"`
	}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	if c := s.Counts["jsonl"]["nl"]; c.Scored != 1 || c.Failed != 1 || !strings.Contains(s.FailedSamples, "as 0") {
		t.Errorf("counts %+v, %q", s.Counts, s.FailedSamples)
	}
	stdout, stderr, code = runStatus(t, append([]string{"run"}, args...)...)
	if code != 3 || !strings.Contains(stdout, "failed") || !strings.Contains(stdout, "count as 0") {
		t.Errorf("table: status %d\n%s%s", code, stdout, stderr)
	}
	stdout, _, _ = runStatus(t, append([]string{"plan"}, args...)...)
	if !strings.Contains(stdout, "failed: jsonl/long: prompt") || strings.Contains(stdout, "Inf") || strings.Contains(stdout, "NaN") {
		t.Errorf("plan:\n%s", stdout)
	}
	stdout, _, _ = runStatus(t, append([]string{"plan", "--json"}, args...)...)
	var pj struct {
		Counts map[string]int `json:"counts"`
		Failed []struct{ ID, Reason string }
	}
	if err := json.Unmarshal([]byte(stdout), &pj); err != nil || pj.Counts["failed"] != 1 || pj.Counts["complete"] != 1 || len(pj.Failed) != 1 {
		t.Errorf("plan JSON %s: %v", stdout, err)
	}
	for _, f := range []string{"json", "text", "markdown", "html"} {
		stdout, stderr, code := runStatus(t, append([]string{"report", "--format", f}, args...)...)
		if code != 3 || strings.Contains(stdout, "NaN") {
			t.Errorf("report --format %s: status %d\n%s%s", f, code, stdout, stderr)
		}
	}
}

// TestFlagsValidated (finding 7): non-positive limits, budgets and
// concurrency, and unknown sample ids, are one-line errors naming the flag.
func TestFlagsValidated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	db := filepath.Join(t.TempDir(), "v.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--limit", "-1"}, "--limit -1"},
		{[]string{"--limit", "0"}, "--limit 0"},
		{[]string{"--max-tokens", "-5"}, "--max-tokens -5"},
		{[]string{"--max-tokens", "0"}, "--max-tokens 0"},
		{[]string{"--concurrency", "0"}, "--concurrency 0"},
		{[]string{"--samples", "demo-2026-0000,zzz"}, "--samples: unknown sample ids zzz"},
		{[]string{"--worker", "gpu0"}, "to name the worker, write --worker=gpu0"},
		{[]string{"stray"}, `unexpected argument "stray"`},
	} {
		_, stderr, code := runStatus(t, append([]string{"demo", "--store", db}, tc.args...)...)
		msg := strings.TrimSpace(stderr)
		if code != 1 || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
			t.Errorf("demo %v: status %d, %q; want one line with %q", tc.args, code, msg, tc.want)
		}
	}
	if _, err := os.Stat(db); err == nil {
		if n := storeCounts(t, db); n["generations"] != 0 {
			t.Errorf("bad flags made generations: %v", n)
		}
	}
}

// TestHelpReadable: every command's help prints flag types and defaults a
// user can read (no control characters, no prose taken for a type name).
func TestHelpReadable(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	for _, c := range []string{"run", "rerun", "demo", "plan", "report", "compare", "ls", "export", "import", "rescore", "metric", "tokenize", "generate"} {
		stdout, stderr, code := runStatus(t, c, "--help")
		if code != 0 {
			t.Errorf("%s --help: status %d: %s", c, code, stderr)
			continue
		}
		if i := strings.IndexFunc(stdout, func(r rune) bool { return r < ' ' && r != '\n' && r != '\t' }); i >= 0 {
			t.Errorf("%s --help: control character %q in %q", c, stdout[i], stdout[max(i-40, 0):min(i+40, len(stdout))])
		}
		for _, line := range strings.Split(stdout, "\n") {
			if strings.Contains(line, "--tasks tally") {
				t.Errorf("%s --help: %q", c, line)
			}
		}
	}
	stdout, _, _ := runStatus(t, "run", "--help")
	if !strings.Contains(stdout, `--worker string[="$HOSTNAME"]`) {
		t.Errorf("run --help does not show a bare --worker's default:\n%s", stdout)
	}
}
