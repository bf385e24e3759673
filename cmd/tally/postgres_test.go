package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tally/internal/pgtest"
)

// These tests cover issue 15 (one run shared by many workers on a
// PostgreSQL store) on the built binary and a real PostgreSQL server
// (TALLY_TEST_POSTGRES; .ci/run starts one, and they skip saying so
// otherwise).

// pgWork is a demo run long enough to be interrupted: no stop fires, so
// every sample spends its whole budget, one request at a time.
var pgWork = []string{"demo", "--max-tokens", "200", "--concurrency", "1", "--stop", "never=@@@@", "--lease", "1s"}

// workers runs n copies of tally with args at once and returns their JSON
// summaries, failing the test if any exits non-zero.
func workers(t *testing.T, n int, env []string, args ...string) []summary {
	t.Helper()
	out, err := runWorkers(n, env, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runWorkers is workers for any goroutine: it returns the first failure.
func runWorkers(n int, env []string, args ...string) ([]summary, error) {
	out := make([]summary, n)
	errs := make([]error, n)
	stderr := make([]string, n)
	var wg sync.WaitGroup
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var o, e bytes.Buffer
			cmd := exec.Command(built, args...)
			cmd.Env = append(os.Environ(), env...)
			cmd.Stdout, cmd.Stderr = &o, &e
			errs[i], stderr[i] = cmd.Run(), e.String()
			if errs[i] == nil {
				errs[i] = json.Unmarshal(o.Bytes(), &out[i])
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("worker %d: %v\n%s", i, err, stderr[i])
		}
	}
	return out, nil
}

// TestPostgresWorkers: four workers on one PostgreSQL store (pointed at it
// by TALLY_STORE, as deploy/ does) finish a run together, each sample
// generated once, with the scores of a single-process SQLite run.
func TestPostgresWorkers(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	ref, _ := runTally(t, built, append(pgWork, "--store", filepath.Join(t.TempDir(), "ref.db"), "--json")...)
	res := workers(t, 4, []string{"TALLY_STORE=" + dsn}, append(pgWork, "--json")...)
	total := 0
	for i, r := range res {
		total += r.GenerationsNew
		if !reflect.DeepEqual(r.Scores, ref.Scores) {
			t.Errorf("worker %d scores %v, want those of one SQLite run %v", i, r.Scores, ref.Scores)
		}
	}
	if n := storeCounts(t, dsn); total != 16 || n["generations"] != 16 || n["claims"] != 0 {
		t.Errorf("%d generations made in total, store %v; want 16, each once, and no claims left", total, n)
	}
}

// TestPostgresKilledWorker: a worker SIGKILLed at ten random instants of a
// run, each time started again (as a Job's pod or an array task is) with
// another worker beside it, leaves a store that a last worker completes:
// nothing lost or duplicated, the scores of an uninterrupted run.
func TestPostgresKilledWorker(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	ref, _ := runTally(t, built, append(pgWork, "--store", filepath.Join(t.TempDir(), "ref.db"), "--json")...)
	args := append(pgWork, "--store", dsn)
	r := rand.New(rand.NewPCG(15, 1))
	peer := exec.Command(built, args...)
	if err := peer.Start(); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		victim := exec.Command(built, args...)
		if err := victim.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(50+r.IntN(400)) * time.Millisecond)
		victim.Process.Signal(syscall.SIGKILL)
		victim.Wait()
		t.Logf("kill %d: store %v", i+1, storeCounts(t, dsn))
	}
	if err := peer.Wait(); err != nil {
		t.Fatalf("the worker beside the killed ones: %v", err)
	}
	last, logs := runTally(t, built, append(args, "--json")...)
	if !reflect.DeepEqual(last.Scores, ref.Scores) {
		t.Errorf("scores %v, want those of an uninterrupted run %v\n%s", last.Scores, ref.Scores, logs)
	}
	if n := storeCounts(t, dsn); n["generations"] != 16 || n["claims"] != 0 {
		t.Errorf("store %v, want 16 generations and no claims", n)
	}
}

// TestPostgresRestart: the PostgreSQL server restarted in the middle of a
// run; the workers wait for it with back-off and finish with the scores of
// an uninterrupted run. (The default lease, so that a short outage does
// not let one worker take over another's claims.)
func TestPostgresRestart(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	ctl := os.Getenv("TALLY_PG_CTL")
	if ctl == "" {
		t.Skip("TALLY_PG_CTL not set: scripts/postgres-server.sh prints it")
	}
	work := []string{"demo", "--max-tokens", "400", "--concurrency", "1", "--stop", "never=@@@@", "--json"}
	ref, _ := runTally(t, built, append(work, "--store", filepath.Join(t.TempDir(), "ref.db"))...)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	type result struct {
		out, err string
		code     error
	}
	done := make(chan result, 2)
	for range 2 {
		go func() {
			var o, e bytes.Buffer
			cmd := exec.CommandContext(ctx, built, work...)
			cmd.Env = append(os.Environ(), "TALLY_STORE="+dsn)
			cmd.Stdout, cmd.Stderr = &o, &e
			err := cmd.Run()
			done <- result{o.String(), e.String(), err}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	if n := storeCounts(t, dsn); n["generations"] >= 16 {
		t.Fatalf("the run finished before the restart (store %v): nothing tested", n)
	} else {
		t.Logf("restarting the server with the store at %v", n)
	}
	f := strings.Fields(ctl)
	// The restarted server inherits pg_ctl's output: a file, not a pipe,
	// so that waiting for pg_ctl does not wait for the server to exit.
	logPath := filepath.Join(t.TempDir(), "restart.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	restart := exec.Command(f[0], append(f[1:], "-m", "fast", "restart")...)
	restart.Stdout, restart.Stderr = logFile, logFile
	if err := restart.Run(); err != nil {
		out, _ := os.ReadFile(logPath)
		t.Fatalf("restart: %v\n%s", err, out)
	}
	for range 2 {
		r := <-done
		if r.code != nil {
			t.Fatalf("worker after a server restart: %v\n%s", r.code, r.err)
		}
		var s summary
		if err := json.Unmarshal([]byte(r.out), &s); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(s.Scores, ref.Scores) {
			t.Errorf("scores %v, want %v", s.Scores, ref.Scores)
		}
	}
	if n := storeCounts(t, dsn); n["generations"] != 16 || n["claims"] != 0 {
		t.Errorf("store %v, want 16 generations and no claims", n)
	}
}
