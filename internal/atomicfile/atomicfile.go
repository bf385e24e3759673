// Package atomicfile replaces a file whole: data is written to a new file
// beside it, which is then renamed over it, so that a reader sees the old
// file or the new one, never half of one. tally's caches (prompt keys,
// task loads, model fingerprints) are written this way. It is written
// here rather than taken from github.com/google/renameio, which also
// syncs every file to disk: a cache that a crash loses is rebuilt, and a
// sync of a large one costs a plan time.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Write writes data to path, creating its directory when missing, by a
// new file beside it (named from pattern, as os.CreateTemp does) renamed
// over it; nothing is left beside it when it fails.
func Write(path, pattern string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), pattern)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	if err := errors.Join(werr, tmp.Close()); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
