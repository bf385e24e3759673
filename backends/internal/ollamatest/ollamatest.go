//go:build unix

// Package ollamatest runs the real Ollama server for the integration tests
// of the server backends (ollama, openai): the model the script
// scripts/ollama-server.sh created, and servers a test starts, kills and
// restarts on its own port.
package ollamatest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// SkipMsg says how to run the integration tests.
const SkipMsg = "no Ollama server: set TALLY_OLLAMA_MODEL (and OLLAMA_HOST) as printed by `eval \"$(scripts/ollama-server.sh)\"` to run"

// Model returns the model name of the running server, or skips.
func Model(tb testing.TB) string {
	tb.Helper()
	m := os.Getenv("TALLY_OLLAMA_MODEL")
	if m == "" || os.Getenv("OLLAMA_HOST") == "" {
		tb.Skip(SkipMsg)
	}
	return m
}

// Server is an `ollama serve` a test starts (and restarts) on its own
// port, sharing the models directory of the script's server.
type Server struct {
	// Host is the server's host:port.
	Host        string
	tb          testing.TB
	bin, models string
	logDir      string
	cmd         *exec.Cmd
	starts      int
}

// Start starts a server, or skips when there is none to copy; it is killed
// when the test ends.
func Start(tb testing.TB) *Server {
	tb.Helper()
	Model(tb)
	bin, models := os.Getenv("TALLY_OLLAMA_BIN"), os.Getenv("TALLY_OLLAMA_MODELS")
	if bin == "" || models == "" {
		tb.Skip("set TALLY_OLLAMA_BIN and TALLY_OLLAMA_MODELS (printed by scripts/ollama-server.sh) to run")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	host := l.Addr().String()
	l.Close()
	s := &Server{tb: tb, bin: bin, models: models, Host: host, logDir: tb.TempDir()}
	s.Restart()
	tb.Cleanup(s.Kill)
	return s
}

// Restart starts the server (again) and waits until it answers.
func (s *Server) Restart() {
	s.tb.Helper()
	s.starts++
	logf, err := os.Create(filepath.Join(s.logDir, fmt.Sprintf("serve%d.log", s.starts)))
	if err != nil {
		s.tb.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(s.bin, "serve")
	cmd.Env = append(os.Environ(), "OLLAMA_HOST="+s.Host, "OLLAMA_MODELS="+s.models, "OLLAMA_NUM_PARALLEL=4")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the runner child dies with it
	if err := cmd.Start(); err != nil {
		s.tb.Fatalf("start ollama serve: %v", err)
	}
	s.cmd = cmd
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Host+"/api/version", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-ctx.Done():
			s.tb.Fatalf("ollama serve on %s did not answer; see %s", s.Host, s.logDir)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Kill kills the server and its runner (SIGKILL to the process group).
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	s.cmd.Wait()
	s.cmd = nil
}
