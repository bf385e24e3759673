// Package pyref runs the project's small Python reference scripts from
// tests: a script reads one JSON document on standard input and writes one
// on standard output, and the test compares it with what the Go code
// computes. Where python3 (or a module a script needs) is absent, the test
// is skipped with a line saying what is missing, so a machine without
// Python still passes while .ci/run, which has it, runs every check.
package pyref

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"
)

// Python returns the path of python3, skipping the test when there is none.
func Python(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		tb.Skip("python3 not found: the Python reference check is skipped (.ci/run has it)")
	}
	return p
}

// Require skips the test unless python3 can import every module named.
func Require(tb testing.TB, modules ...string) {
	tb.Helper()
	py := Python(tb)
	for _, m := range modules {
		if err := exec.Command(py, "-c", "import "+m).Run(); err != nil {
			tb.Skipf("python3 cannot import %s: the Python reference check is skipped (apt-get install -y python3-%s)", m, m)
		}
	}
}

// Run runs python3 SCRIPT with in as JSON on standard input and decodes
// the JSON it prints into out. A script that fails fails the test with its
// standard error.
func Run(tb testing.TB, script string, in, out any) {
	tb.Helper()
	py := Python(tb)
	b, err := json.Marshal(in)
	if err != nil {
		tb.Fatalf("encode input for %s: %v", script, err)
	}
	cmd := exec.Command(py, script)
	cmd.Stdin = bytes.NewReader(b)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		tb.Fatalf("python3 %s: %v\n%s", script, err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		tb.Fatalf("decode output of %s: %v", script, err)
	}
}
