package pgtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Server is a throwaway PostgreSQL cluster of the test's own, started by
// scripts/postgres-server.sh: a test may stop it (an outage) and start it
// again without disturbing the shared server of TALLY_TEST_POSTGRES.
type Server struct {
	// Admin is a superuser URL of the cluster's "postgres" database.
	Admin string
	dir   string
	ctl   []string // pg_ctl -D DIR -w -t 60, run as the postgres user when root
}

// NewServer starts a cluster for the test and removes it when the test
// ends. It skips the test, saying why, when none can be started (no
// PostgreSQL installed, or -short).
func NewServer(tb testing.TB) *Server {
	tb.Helper()
	if testing.Short() {
		tb.Skip("starts a PostgreSQL cluster (-short)")
	}
	_, self, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(self), "..", "..", "scripts", "postgres-server.sh")
	// The script prints export lines with shell quoting: let a shell read them.
	cmd := exec.Command("bash", "-c", `eval "$("$0")" && printf '%s\n%s\n%s\n' "$TALLY_TEST_POSTGRES" "$TALLY_PG_DIR" "$TALLY_PG_CTL"`, script)
	cmd.Env = append(os.Environ(), "TALLY_PG_CTL=", "TALLY_PG_DIR=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err != nil || len(lines) != 3 {
		tb.Skipf("no PostgreSQL cluster of the test's own (scripts/postgres-server.sh: %v): %s", err, strings.TrimSpace(stderr.String()))
	}
	s := &Server{Admin: lines[0], dir: lines[1], ctl: strings.Fields(lines[2])}
	tb.Cleanup(func() {
		s.pgctl("-m", "immediate", "stop")
		if strings.Contains(filepath.Base(s.dir), "tally-pg.") {
			os.RemoveAll(s.dir)
		}
	})
	return s
}

// NewDatabase creates an empty database on the server for the test and
// returns its URL.
func (s *Server) NewDatabase(tb testing.TB) string {
	tb.Helper()
	return newDatabase(tb, s.Admin)
}

// Stop stops the server at once (pg_ctl -m immediate: connections cut,
// no checkpoint), as a crash or a lost machine would.
func (s *Server) Stop(tb testing.TB) {
	tb.Helper()
	if out, err := s.pgctl("-m", "immediate", "stop"); err != nil {
		tb.Fatalf("stop the test's PostgreSQL server: %v\n%s", err, out)
	}
}

// Start starts the stopped server again.
func (s *Server) Start(tb testing.TB) {
	tb.Helper()
	if out, err := s.pgctl("-l", filepath.Join(s.dir, "server.log"), "start"); err != nil {
		tb.Fatalf("start the test's PostgreSQL server: %v\n%s", err, out)
	}
}

// Restart restarts the server (pg_ctl -m fast restart: connections cut,
// then a checkpoint), as an administrator's restart would.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	if out, err := s.pgctl("-m", "fast", "-l", filepath.Join(s.dir, "server.log"), "restart"); err != nil {
		tb.Fatalf("restart the test's PostgreSQL server: %v\n%s", err, out)
	}
}

// pgctl runs pg_ctl on the cluster. Its output goes to a file, not a
// pipe: a server it starts inherits it and would hold a pipe open.
func (s *Server) pgctl(args ...string) (string, error) {
	log := filepath.Join(s.dir, "pgctl.log")
	f, err := os.Create(log)
	if err != nil {
		return "", err
	}
	defer f.Close()
	cmd := exec.Command(s.ctl[0], append(s.ctl[1:], args...)...)
	cmd.Stdout, cmd.Stderr = f, f
	err = cmd.Run()
	out, _ := os.ReadFile(log)
	return string(out), err
}
