// Package pyref runs the project's small Python reference scripts from
// tests: a script reads one JSON document on standard input and writes one
// on standard output, and the test compares it with what the Go code
// computes. Where python3 (or a module a script needs) is absent, the test
// is skipped with a line saying what is missing, so a machine without
// Python still passes while .ci/run, which installs them, runs every check.
package pyref

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// candidates are the interpreters tried, in order: $TALLY_PYTHON, python3
// on the PATH, and the system's /usr/bin/python3 (where Debian's
// python3-jinja2 and python3-numpy install).
func candidates() []string {
	var out []string
	if p := os.Getenv("TALLY_PYTHON"); p != "" {
		out = append(out, p)
	}
	if p, err := exec.LookPath("python3"); err == nil {
		out = append(out, p)
	}
	return append(out, "/usr/bin/python3")
}

// Python returns a python3 that can import every module named, skipping
// the test when there is none.
func Python(tb testing.TB, modules ...string) string {
	tb.Helper()
	found := false
	for _, py := range candidates() {
		if _, err := os.Stat(py); err != nil {
			if _, err := exec.LookPath(py); err != nil {
				continue
			}
		}
		found = true
		args := []string{"-c", "import sys"}
		if len(modules) > 0 {
			args = []string{"-c", "import " + strings.Join(modules, ", ")}
		}
		if exec.Command(py, args...).Run() == nil {
			return py
		}
	}
	if !found {
		tb.Skip("python3 not found: the Python reference check is skipped (.ci/run has it)")
	}
	tb.Skipf("no python3 here can import %s: the Python reference check is skipped (apt-get install -y python3-%s)",
		strings.Join(modules, ", "), strings.Join(modules, " python3-"))
	return ""
}

// Run runs a python3 that has the modules named on script, with in as
// JSON on standard input, and decodes the JSON it prints into out. A
// script that fails fails the test with its standard error.
func Run(tb testing.TB, script string, in, out any, modules ...string) {
	tb.Helper()
	py := Python(tb, modules...)
	b, err := json.Marshal(in)
	if err != nil {
		tb.Fatalf("encode input for %s: %v", script, err)
	}
	cmd := exec.Command(py, script)
	cmd.Stdin = bytes.NewReader(b)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("%s %s: %v\n%s", py, script, err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		tb.Fatalf("decode output of %s: %v", script, err)
	}
}
