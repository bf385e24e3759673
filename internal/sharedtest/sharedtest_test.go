package sharedtest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB that records how a helper ended the test
// instead of ending the real one.
type recorder struct {
	testing.TB
	ended string // "skip", "fatal" or "" (returned normally)
	msg   string
}

func (r *recorder) Helper() {}
func (r *recorder) Skip(args ...any) {
	r.ended, r.msg = "skip", fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *recorder) Fatal(args ...any) {
	r.ended, r.msg = "fatal", fmt.Sprint(args...)
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.ended, r.msg = "fatal", fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.ended, r.msg = "skip", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// call runs fn with a recorder in its own goroutine (Goexit ends it).
func call(t *testing.T, fn func(tb testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	return r
}

// TestMissingSharedSkips: in a clone with no ../shared beside it, Dir and
// Path skip the test with one line naming the missing folder and where to
// read about it; under TALLY_REQUIRE_SHARED=1 they fail instead. A
// reference set that is present but lacks a file fails.
func TestMissingSharedSkips(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "tally")
	if err := os.MkdirAll(filepath.Join(repo, "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module tally\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(repo, "pkg"))
	t.Setenv(Env, "")

	t.Setenv(RequireEnv, "")
	for name, fn := range map[string]func(testing.TB){
		"Dir":  func(tb testing.TB) { Dir(tb) },
		"Path": func(tb testing.TB) { Path(tb, "data", "drop") },
	} {
		r := call(t, fn)
		if r.ended != "skip" {
			t.Errorf("%s without ../shared: ended %q (%s), want a skip", name, r.ended, r.msg)
		}
		want := filepath.Join(root, "shared")
		if !strings.Contains(r.msg, want) || !strings.Contains(r.msg, "README.md") || strings.Contains(r.msg, "\n") {
			t.Errorf("%s: skip line %q should name %s and README.md on one line", name, r.msg, want)
		}
	}

	t.Setenv(RequireEnv, "1")
	if r := call(t, func(tb testing.TB) { Dir(tb) }); r.ended != "fatal" {
		t.Errorf("Dir with %s=1: ended %q, want a failure", RequireEnv, r.ended)
	}

	t.Setenv(RequireEnv, "")
	if err := os.Mkdir(filepath.Join(root, "shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	if r := call(t, func(tb testing.TB) { Path(tb, "data", "drop") }); r.ended != "fatal" {
		t.Errorf("Path of a file missing from a present reference set: ended %q, want a failure", r.ended)
	}
	if r := call(t, func(tb testing.TB) { Dir(tb) }); r.ended != "" {
		t.Errorf("Dir with ../shared present: ended %q (%s)", r.ended, r.msg)
	}
}

// TestLookup: Lookup neither skips nor fails, and says whether the
// reference set has the path.
func TestLookup(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "tally")
	os.MkdirAll(filepath.Join(repo, "pkg"), 0o755)
	os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module tally\n"), 0o644)
	t.Chdir(filepath.Join(repo, "pkg"))
	t.Setenv(Env, "")
	if p, ok := Lookup("data", "drop"); ok || p != filepath.Join(root, "shared", "data", "drop") {
		t.Errorf("Lookup without ../shared: %q %v", p, ok)
	}
	os.MkdirAll(filepath.Join(root, "shared", "data", "drop"), 0o755)
	if _, ok := Lookup("data", "drop"); !ok {
		t.Error("Lookup with ../shared/data/drop: not found")
	}
}

// TestReferenceEnv is item 2 of issue 34: the reference set is found
// through one setting, $TALLY_REFERENCE (absolute, or relative to the
// repository root), and ../shared beside the repository only when it is
// unset; the skip line names the setting.
func TestReferenceEnv(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "tally")
	ref := filepath.Join(root, "elsewhere", "reference")
	for _, d := range []string{filepath.Join(repo, "pkg"), filepath.Join(ref, "data", "drop"), filepath.Join(repo, "ref", "data")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module tally\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(repo, "pkg"))
	t.Setenv(RequireEnv, "")
	for _, tc := range []struct {
		env, want string
	}{
		{ref, ref},
		{"ref", filepath.Join(repo, "ref")},
		{"", filepath.Join(root, "shared")},
	} {
		t.Setenv(Env, tc.env)
		r := call(t, func(tb testing.TB) {
			if got := Dir(tb); got != tc.want {
				t.Errorf("%s=%q: Dir = %s, want %s", Env, tc.env, got, tc.want)
			}
		})
		switch {
		case tc.env == "" && r.ended != "skip":
			t.Errorf("%s unset and no ../shared: ended %q, want a skip", Env, r.ended)
		case tc.env == "" && !strings.Contains(r.msg, Env):
			t.Errorf("skip line %q does not name %s", r.msg, Env)
		case tc.env != "" && r.ended != "":
			t.Errorf("%s=%q: ended %q (%s)", Env, tc.env, r.ended, r.msg)
		}
	}
	t.Setenv(Env, ref)
	if p, ok := Lookup("data", "drop"); !ok || p != filepath.Join(ref, "data", "drop") {
		t.Errorf("Lookup under %s=%s: %q %v", Env, ref, p, ok)
	}
}
