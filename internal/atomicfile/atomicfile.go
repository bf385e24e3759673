// Package atomicfile replaces a file whole: data is written to a new file
// beside it, which is then renamed over it, so that a reader sees the old
// file or the new one, never half of one. tally's caches (prompt keys,
// task loads, model fingerprints) and the lm-eval files it writes
// (--output-path) are written this way. It is written
// here rather than taken from github.com/google/renameio, which also
// syncs every file to disk: a cache that a crash loses is rebuilt, and a
// sync of a large one costs a plan time.
package atomicfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
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

// File is a file being written whole into a folder (an os.Root): what is
// written goes to a new file beside its name, which Commit renames over
// the name, so that the name holds the old file or the whole new one,
// never part of one. Abort, or a process that ends first (RemovePending),
// leaves nothing beside it.
type File struct {
	*os.File
	root      *os.Root
	name, tmp string
}

// pending are the new files of the Files not yet committed or aborted.
var pending struct {
	sync.Mutex
	m map[*File]string // the new file's full path
}

// CreateIn starts writing the file name (a path inside root) whole.
func CreateIn(root *os.Root, name string) (*File, error) {
	dir, base := filepath.Split(name)
	for range 10 {
		var r [6]byte
		rand.Read(r[:])
		tmp := filepath.Join(dir, "."+base+".tmp-"+hex.EncodeToString(r[:]))
		f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("write %s: %w", name, err)
		}
		af := &File{File: f, root: root, name: name, tmp: tmp}
		pending.Lock()
		if pending.m == nil {
			pending.m = map[*File]string{}
		}
		pending.m[af] = filepath.Join(root.Name(), tmp)
		pending.Unlock()
		return af, nil
	}
	return nil, fmt.Errorf("write %s: no free name for its new file", name)
}

// Commit closes the new file and renames it over the name; when either
// fails, the new file is removed and the name left as it was.
func (f *File) Commit() error {
	f.forget()
	err := f.File.Close()
	if err == nil {
		err = f.root.Rename(f.tmp, f.name)
	}
	if err != nil {
		f.root.Remove(f.tmp)
		return fmt.Errorf("write %s: %w", f.name, err)
	}
	return nil
}

// Abort closes and removes the new file: the name is left as it was.
func (f *File) Abort() {
	f.forget()
	f.File.Close()
	f.root.Remove(f.tmp)
}

func (f *File) forget() {
	pending.Lock()
	delete(pending.m, f)
	pending.Unlock()
}

// WriteIn writes data to the file name inside root whole (CreateIn, then
// Commit).
func WriteIn(root *os.Root, name string, data []byte) error {
	f, err := CreateIn(root, name)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return fmt.Errorf("write %s: %w", name, err)
	}
	return f.Commit()
}

// RemovePending removes the new files of the Files not yet committed or
// aborted: what a process that is ending before its writes are done (an
// interrupt) calls last, so that it leaves no part of a file behind.
func RemovePending() {
	pending.Lock()
	defer pending.Unlock()
	for f, path := range pending.m {
		os.Remove(path)
		delete(pending.m, f)
	}
}
