package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWrite: a file is written (its directory made), replaced whole, and
// a write that cannot be made leaves nothing beside the path.
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a", "b", "cache")
	for _, data := range []string{"first", "second, longer"} {
		if err := Write(path, ".tmp-*", []byte(data)); err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(path); err != nil || string(got) != data {
			t.Fatalf("read %q, %v; want %q", got, err, data)
		}
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("%d files beside the cache, want none", len(ents)-1)
	}
	// A directory where the file should be: the rename fails.
	blocked := filepath.Join(dir, "blocked")
	os.MkdirAll(filepath.Join(blocked, "x"), 0o755)
	if err := Write(blocked, ".tmp-*", []byte("x")); err == nil {
		t.Fatal("replaced a non-empty directory")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Errorf("%d entries in %s, want a and blocked only", len(ents), dir)
	}
}
