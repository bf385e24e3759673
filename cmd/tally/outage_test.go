package main

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"tally/internal/pgtest"
)

// These tests cover issue 23, finding 4: a PostgreSQL outage made workers
// unstoppable (SIGINT and SIGTERM ignored for 400 s, commits retrying on
// a context no signal cancelled) and a lost server was given up on only
// after ~616 s. They run real processes on a PostgreSQL cluster of their
// own (pgtest.NewServer), which they stop.

// outageGuard is how long a test waits for a process that should have
// ended long before (it then kills it and fails): a guard against a hang,
// far above the few seconds the tests log.
const outageGuard = 90 * time.Second

// worker is a tally process started by a test, with its stderr collected.
type worker struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	stderr strings.Builder
	lines  chan string
	done   chan error
}

// startWorker starts tally with args and env, and returns once its stderr
// said want (a line containing it).
func startWorker(t *testing.T, env []string, want string, args ...string) *worker {
	t.Helper()
	w := &worker{cmd: exec.Command(built, args...), lines: make(chan string, 1024), done: make(chan error, 1)}
	w.cmd.Env = append(os.Environ(), env...)
	pipe, err := w.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.cmd.Process.Kill() })
	read := make(chan struct{})
	go func() {
		defer close(read)
		r := bufio.NewReader(pipe)
		for {
			line, err := r.ReadString('\n')
			w.mu.Lock()
			w.stderr.WriteString(line)
			w.mu.Unlock()
			select {
			case w.lines <- line:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		<-read
		w.done <- w.cmd.Wait()
	}()
	for {
		select {
		case line := <-w.lines:
			if strings.Contains(line, want) {
				return w
			}
		case err := <-w.done:
			t.Fatalf("tally %s ended before saying %q: %v\n%s", strings.Join(args, " "), want, err, w.output())
		case <-time.After(outageGuard):
			t.Fatalf("tally %s did not say %q in %s\n%s", strings.Join(args, " "), want, outageGuard, w.output())
		}
	}
}

func (w *worker) output() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stderr.String()
}

// wait waits (at most outageGuard, then kills it and fails) for the
// process to end, and returns its exit status and how long it took.
func (w *worker) wait(t *testing.T) (int, time.Duration) {
	t.Helper()
	t0 := time.Now()
	select {
	case err := <-w.done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), time.Since(t0)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, time.Since(t0)
	case <-time.After(outageGuard):
		w.cmd.Process.Kill()
		<-w.done
		t.Fatalf("still running %s later: killed\n%s", outageGuard, w.output())
		return 0, 0
	}
}

// outageWork is a worker's run long enough to outlast an outage.
var outageWork = []string{"demo", "--max-tokens", "400", "--concurrency", "1", "--stop", "never=@@@@", "--worker"}

// TestSignalDuringOutage: with the PostgreSQL server stopped in the middle
// of a run, SIGINT and SIGTERM each end the worker within seconds with
// exit status 130 (they were ignored while commits retried).
func TestSignalDuringOutage(t *testing.T) {
	srv := pgtest.NewServer(t)
	for i, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			if i > 0 {
				srv.Start(t)
			}
			dsn := srv.NewDatabase(t)
			w := startWorker(t, nil, "generating", slices.Concat(outageWork, []string{"--store", dsn})...)
			time.Sleep(time.Second) // some generations committed
			srv.Stop(t)
			time.Sleep(2 * time.Second) // the worker is now waiting for the server
			w.cmd.Process.Signal(sig)
			code, took := w.wait(t)
			t.Logf("%v during the outage: exit status %d %.1fs after the signal", sig, code, took.Seconds())
			if code != ExitInterrupted || !strings.Contains(w.output(), "interrupted") {
				t.Errorf("exit status %d, want %d and a message saying interrupted\n%s", code, ExitInterrupted, w.output())
			}
		})
	}
}

// TestOutageGivesUp: a PostgreSQL server that never comes back is given
// up on within the bound (TALLY_STORE_WAIT, shortened here from its 2m
// default), all operations together, with exit status 1 and a message
// naming the store, its password masked.
func TestOutageGivesUp(t *testing.T) {
	srv := pgtest.NewServer(t)
	u, err := url.Parse(srv.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	const pw = "outage-Pw7"
	q := u.Query()
	q.Set("password", pw) // trust authentication: accepted, unused
	u.RawQuery = q.Encode()
	const bound = 5 * time.Second
	w := startWorker(t, []string{"TALLY_STORE_WAIT=" + bound.String()}, "generating", slices.Concat(outageWork, []string{"--store", u.String()})...)
	time.Sleep(time.Second)
	srv.Stop(t)
	code, took := w.wait(t)
	out := w.output()
	last := out[strings.LastIndex(strings.TrimRight(out, "\n"), "\n")+1:]
	t.Logf("server lost, never back: exit status %d %.1fs after the server stopped (bound %s): %s", code, took.Seconds(), bound, last)
	if code != ExitError || !strings.Contains(last, "giving up") || !strings.Contains(last, "password=xxxxx") {
		t.Errorf("exit status %d, last line %q; want %d and a line naming the store (redacted) and giving up\n%s", code, last, ExitError, out)
	}
	if strings.Contains(out, pw) {
		t.Errorf("the password leaked:\n%s", out)
	}
}

// TestSignalWhileLocked: on SQLite, a store whose write lock another
// process holds (so every commit waits for it) does not delay SIGINT:
// tally exits with status 130 within seconds, while the lock is still
// held; a second SIGINT ends it at once, saying so.
func TestSignalWhileLocked(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	for _, signals := range []int{1, 2} {
		t.Run(fmt.Sprintf("%d signals", signals), func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "l.db")
			w := startWorker(t, nil, "generating", slices.Concat(outageWork, []string{"--store", db})...)
			time.Sleep(time.Second)
			h, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(60000)")
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			c, err := h.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := c.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
				t.Fatal(err)
			}
			defer c.ExecContext(context.Background(), "ROLLBACK")
			time.Sleep(2 * time.Second) // tally's commits now wait for the lock
			for range signals {
				w.cmd.Process.Signal(os.Interrupt)
				time.Sleep(100 * time.Millisecond)
			}
			code, took := w.wait(t)
			t.Logf("%d SIGINT with the store locked: exit status %d %.1fs after the first", signals, code, took.Seconds())
			again := strings.Contains(w.output(), "interrupted again")
			if code != ExitInterrupted || again != (signals == 2) {
				t.Errorf("exit status %d, want %d (and \"interrupted again\" only after two signals)\n%s", code, ExitInterrupted, w.output())
			}
		})
	}
}
