// Package sharedtest locates the project's read-only reference material
// (../shared beside the repository root: fixtures and benchmark data) for
// tests, failing the test when it is missing rather than skipping.
package sharedtest

import (
	"os"
	"path/filepath"
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
