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

// TestCreateIn (issue 37, item 5): a file written whole into a folder
// replaces its name only when committed; aborted, or left pending when
// the process ends (RemovePending), it leaves the name as it was and
// nothing beside it; a name out of the folder is refused.
func TestCreateIn(t *testing.T) {
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	os.Mkdir(filepath.Join(dir, "m"), 0o755)
	name := filepath.Join("m", "samples.jsonl")
	if err := WriteIn(root, name, []byte("old\n")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		end  func(f *File) error
		want string
	}{
		{"committed", func(f *File) error { return f.Commit() }, "new, half\nand the rest\n"},
		{"aborted", func(f *File) error { f.Abort(); return nil }, "old\n"},
		{"pending at the end", func(*File) error { RemovePending(); return nil }, "old\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := WriteIn(root, name, []byte("old\n")); err != nil {
				t.Fatal(err)
			}
			f, err := CreateIn(root, name)
			if err != nil {
				t.Fatal(err)
			}
			f.Write([]byte("new, half\n"))
			if got, _ := os.ReadFile(filepath.Join(dir, name)); string(got) != "old\n" {
				t.Fatalf("while written: %q", got)
			}
			f.Write([]byte("and the rest\n"))
			if err := tc.end(f); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, name)); string(got) != tc.want {
				t.Errorf("%q, want %q", got, tc.want)
			}
			if ents, _ := os.ReadDir(filepath.Join(dir, "m")); len(ents) != 1 {
				t.Errorf("%d files in the folder, want the one", len(ents))
			}
		})
	}
	if _, err := CreateIn(root, filepath.Join("..", "out")); err == nil {
		t.Error("a name out of the folder was created")
	}
}
