package gomlx

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNotCachedSaysHowToFetch is item 6 of issue 34: a Hugging Face name
// missing from the cache is one line saying that tally never downloads and
// naming the command that fetches it (it was the bare "…/snapshots: no
// such file or directory").
func TestNotCachedSaysHowToFetch(t *testing.T) {
	hub := t.TempDir()
	t.Setenv("HF_HUB_CACHE", hub)
	// A repository folder without snapshots is missing too.
	if err := os.MkdirAll(filepath.Join(hub, "models--org--half"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"Qwen/Qwen2.5-0.5B", "org/half"} {
		_, err := ResolveModelDir(name)
		if err == nil || !errors.Is(err, ErrNotCached) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("%s: %v", name, err)
		}
		for _, want := range []string{"tally never downloads", "hf download " + name, "huggingface-cli download " + name, hub} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q lacks %q", name, err, want)
			}
		}
	}
}
