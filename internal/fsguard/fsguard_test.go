package fsguard

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "import")
	outside := filepath.Join(dir, "outside.jsonl")
	must(t, os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	must(t, os.WriteFile(outside, []byte("{}\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "ok.jsonl"), []byte("{}\n"), 0o644))
	must(t, os.Symlink("ok.jsonl", filepath.Join(root, "sub", "..", "in.jsonl")))
	must(t, os.Symlink(filepath.Join("..", "ok.jsonl"), filepath.Join(root, "sub", "up.jsonl")))
	must(t, os.Symlink(outside, filepath.Join(root, "out.jsonl")))
	must(t, os.Symlink("/dev/zero", filepath.Join(root, "zero.jsonl")))
	must(t, os.Symlink("nowhere", filepath.Join(root, "dangling.jsonl")))
	must(t, syscall.Mkfifo(filepath.Join(root, "fifo.jsonl"), 0o644))
	tests := []struct {
		root, path string
		follow     bool
		err        string // "" for none
	}{
		{root, "ok.jsonl", false, ""},
		{root, "in.jsonl", false, ""},
		{root, "sub/up.jsonl", false, ""},
		{root, "out.jsonl", false, "outside"},
		{root, "out.jsonl", true, ""},
		{"", "out.jsonl", false, ""}, // named on its own
		{root, "zero.jsonl", true, "is a device"},
		{"", "zero.jsonl", false, "is a device"},
		{root, "fifo.jsonl", false, "named pipe"},
		{root, "dangling.jsonl", false, "symbolic link to nothing"},
		{root, "sub", false, "directory"},
	}
	for _, tc := range tests {
		err := Check(tc.root, filepath.Join(root, tc.path), tc.follow)
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("Check(%q, %s, follow %v) = %v, want %q", tc.root, tc.path, tc.follow, err, tc.err)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
