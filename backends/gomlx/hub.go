package gomlx

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"tally/internal/fsguard"
)

// ErrNotModel is wrapped by the errors for a model path that is neither a
// model directory, a GGUF file nor a Hugging Face cache name.
var ErrNotModel = errors.New("not a model")

// ResolveModelDir turns path into a model directory: an existing directory
// is returned as is; a Hugging Face name "org/name" is looked up in the local
// hub cache ($HF_HOME/hub, else ~/.cache/huggingface/hub) as
// models--org--name/snapshots/<rev>, rev from refs/main or else the only
// snapshot. There is no network access.
func ResolveModelDir(path string) (string, error) {
	if st, err := os.Stat(path); err == nil {
		if !st.IsDir() {
			if err := fsguard.Check("", path, true); err != nil {
				return "", fmt.Errorf("model path %s: %w", path, err)
			}
			return "", fmt.Errorf("model path %s: a file, but %w: not a GGUF file, and not a directory holding a Hugging Face model", path, ErrNotModel)
		}
		return path, nil
	}
	parts := strings.Split(path, "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" || strings.HasPrefix(path, ".") {
		return "", fmt.Errorf("model path %s: no such directory, and %w name org/name in the Hugging Face cache", path, ErrNotModel)
	}
	hub, err := hubDir()
	if err != nil {
		return "", err
	}
	repo := filepath.Join(hub, "models--"+parts[0]+"--"+parts[1])
	snaps := filepath.Join(repo, "snapshots")
	if ref, err := os.ReadFile(filepath.Join(repo, "refs", "main")); err == nil {
		rev := strings.TrimSpace(string(ref))
		dir := filepath.Join(snaps, rev)
		if rev != "" && !strings.ContainsAny(rev, `/\`) {
			if st, err := os.Stat(dir); err == nil && st.IsDir() {
				return dir, nil
			}
		}
		return "", fmt.Errorf("model %s: refs/main names snapshot %q, missing under %s", path, rev, snaps)
	}
	entries, err := os.ReadDir(snaps)
	if err != nil {
		return "", notCached(path, hub, err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	switch len(dirs) {
	case 1:
		return filepath.Join(snaps, dirs[0]), nil
	case 0:
		return "", fmt.Errorf("model %s: no snapshot under %s", path, snaps)
	default:
		return "", fmt.Errorf("model %s: %d snapshots under %s and no refs/main", path, len(dirs), snaps)
	}
}

// ErrNotCached is wrapped by the error for a Hugging Face name that is not
// in the local cache.
var ErrNotCached = errors.New("not in the Hugging Face cache")

// notCached is the error for model name org/name missing from the cache
// hub (err: why its snapshots could not be read): tally never downloads,
// so it says how to fetch the model.
func notCached(name, hub string, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("model %s: reading the Hugging Face cache %s: %w", name, hub, err)
	}
	return fmt.Errorf("model %s: %w %s; tally never downloads a model: fetch it with `hf download %s` "+
		"(or the older `huggingface-cli download %s`), or pass the model's directory", name, ErrNotCached, hub, name, name)
}

func hubDir() (string, error) {
	if h := os.Getenv("HF_HUB_CACHE"); h != "" {
		return h, nil
	}
	if h := os.Getenv("HF_HOME"); h != "" {
		return filepath.Join(h, "hub"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("locate Hugging Face cache: %w", err)
	}
	return filepath.Join(home, ".cache", "huggingface", "hub"), nil
}
