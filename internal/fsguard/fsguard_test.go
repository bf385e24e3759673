package fsguard

import (
	"errors"
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

// TestReadFile: regular files only, refused before they are opened (a
// FIFO would block the open, /dev/zero never end), and no more than the
// bound read.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.yaml")
	must(t, os.WriteFile(ok, []byte("0123456789"), 0o644))
	must(t, os.Symlink("/dev/zero", filepath.Join(dir, "zero.yaml")))
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644))
	must(t, os.Symlink(ok, filepath.Join(dir, "link.yaml")))
	must(t, os.Symlink("/proc/self/status", filepath.Join(dir, "proc.yaml")))
	tests := []struct {
		name string
		max  int64
		err  string
	}{
		{"ok.yaml", 10, ""},
		{"ok.yaml", -1, ""},
		{"link.yaml", 10, ""},
		{"ok.yaml", 9, "is 10 bytes, more than the 9 bytes tally reads"},
		{"zero.yaml", 1 << 20, "is a device"},
		{"fifo.yaml", 1 << 20, "named pipe"},
		{"proc.yaml", 1 << 20, "a file of /proc"},
		{"missing.yaml", 10, "no such file"},
		{".", 10, "directory"},
	}
	for _, tc := range tests {
		got, err := ReadFile("", filepath.Join(dir, tc.name), true, tc.max)
		if tc.err == "" {
			if err != nil || string(got) != "0123456789" {
				t.Errorf("ReadFile(%s, %d) = %q, %v", tc.name, tc.max, got, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ReadFile(%s, %d) error %v, want %q", tc.name, tc.max, err, tc.err)
		}
	}
	if _, err := ReadFile("", ok, true, 9); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a file over the bound: %v, want ErrTooLarge", err)
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 1023: "1023 bytes", 1024: "1 KiB", 16 << 20: "16 MiB", 1536 << 20: "1.5 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}
