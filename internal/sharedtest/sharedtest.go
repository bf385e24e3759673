// Package sharedtest locates the project's read-only reference set for
// tests: golden fixtures (tokenizers, tiny models with the outputs Hugging
// Face gives, chat templates rendered by jinja2) and benchmark data copied
// from other projects, kept outside the repository. One setting names it:
// $TALLY_REFERENCE (a relative path is taken from the repository root),
// and without it ../shared beside the repository root.
//
// A clone without the reference set still tests cleanly: a test that needs
// it is skipped with one line naming what is missing and how to get it.
// Set TALLY_REQUIRE_SHARED=1 (as .ci/run does) to fail instead, so that a
// CI machine whose reference set went missing does not pass by skipping.
package sharedtest

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Env names the environment variable that locates the reference set: a
// directory, absolute or relative to the repository root. Unset or empty,
// the reference set is ../shared beside the repository root.
const Env = "TALLY_REFERENCE"

// RequireEnv names the environment variable that turns a missing
// reference set from a skip into a failure.
const RequireEnv = "TALLY_REQUIRE_SHARED"

// Hint says where the reference set comes from; it ends every skip line.
const Hint = "tests that need it skip without it; see README.md, \"Tests and reference data\""

// Dir returns the reference set's directory: $TALLY_REFERENCE, else
// ../shared next to the directory that holds go.mod (found by walking up
// from the working directory). The test is skipped when it is absent
// (failed under TALLY_REQUIRE_SHARED=1).
func Dir(tb testing.TB) string {
	tb.Helper()
	shared, err := locate()
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := os.Stat(shared); err != nil {
		missing(tb, shared)
	}
	return shared
}

// Path returns a path inside the shared directory. The test is skipped
// when the whole reference set is absent; a reference set that is there
// but lacks the file fails the test (an incomplete copy must not pass).
func Path(tb testing.TB, elem ...string) string {
	tb.Helper()
	p := filepath.Join(append([]string{Dir(tb)}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("shared file missing: %v (the reference set at %s is incomplete)", err, filepath.Dir(p))
	}
	return p
}

// Lookup returns a path inside the shared directory and whether it is
// there, without skipping or failing: for a test that runs its other parts
// without the reference set (and says which it left out, with Message).
func Lookup(elem ...string) (string, bool) {
	shared, err := locate()
	if err != nil {
		return "", false
	}
	p := filepath.Join(append([]string{shared}, elem...)...)
	_, err = os.Stat(p)
	return p, err == nil
}

// locate returns the path the reference set should have: $TALLY_REFERENCE
// (relative to the module root when not absolute), else ../shared beside
// the module root.
func locate() (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	if v := os.Getenv(Env); v != "" {
		if filepath.IsAbs(v) {
			return filepath.Clean(v), nil
		}
		return filepath.Join(root, v), nil
	}
	return filepath.Join(filepath.Dir(root), "shared"), nil
}

// moduleRoot is the directory holding go.mod, found by walking up from the
// working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("locating the reference set: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("locating the reference set: go.mod not found above the test directory")
		}
		dir = parent
	}
}

// missing skips (or, under TALLY_REQUIRE_SHARED=1, fails) the test with
// one line naming the missing directory.
func missing(tb testing.TB, shared string) {
	tb.Helper()
	msg := Message(shared)
	if os.Getenv(RequireEnv) == "1" {
		tb.Fatal(msg + " (" + RequireEnv + "=1)")
	}
	tb.Skip(msg)
}

// Message is the one line a test prints when the reference set at shared
// is absent.
func Message(shared string) string {
	return fmt.Sprintf("needs the reference set (fixtures and benchmark data outside the repository; $%s, default ../shared beside the checkout), missing: %s; %s",
		Env, shared, Hint)
}

// ReadLines calls fn with each line of a file (gunzipped when it ends in
// .gz), failing the test on any read error. Lines may be up to 16 MiB.
func ReadLines(tb testing.TB, path string, fn func(line []byte)) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatalf("opening %s: %v", path, err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			tb.Fatalf("gunzip %s: %v", path, err)
		}
		r = z
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<24)
	for sc.Scan() {
		fn(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("reading %s: %v", path, err)
	}
}
