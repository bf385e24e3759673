// Package sharedtest locates the project's read-only reference material
// (../shared beside the repository root: fixtures and benchmark data) for
// tests, failing the test when it is missing rather than skipping.
package sharedtest

import (
	"bufio"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Dir returns the shared directory: ../shared next to the directory that
// holds go.mod, found by walking up from the working directory.
func Dir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatalf("getwd: %v", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			shared := filepath.Join(dir, "..", "shared")
			if _, err := os.Stat(shared); err != nil {
				tb.Fatalf("shared reference directory: %v", err)
			}
			return shared
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// Path returns a path inside the shared directory, failing the test when
// it does not exist.
func Path(tb testing.TB, elem ...string) string {
	tb.Helper()
	p := filepath.Join(append([]string{Dir(tb)}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		tb.Fatalf("shared file missing: %v", err)
	}
	return p
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
