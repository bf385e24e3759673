// Package fsguard vets the files a command reads from a folder it was
// given (tally import), or that a file it was given names (a task file's
// includes, a model folder's files): regular files only, never a FIFO, a
// device, a socket or a file of /proc or /sys (opening or reading one can
// block for good or never end), and no symbolic link that leads out of
// the folder unless the caller allows it; sizes bounded before reading.
package fsguard

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Check returns nil when path may be read as a file of the folder root: a
// regular file, or a symbolic link to one inside root (anywhere, with
// followOut). With root "", path was named on its own: a link may lead
// anywhere, but to a regular file. Otherwise the error says what path is
// and why it is refused.
func Check(root, path string, followOut bool) error {
	return check(root, path, followOut, "")
}

// check is Check, hint saying how to allow a link out of root ("": pass
// --follow-symlinks, as tally import takes it).
func check(root, path string, followOut bool, hint string) error {
	li, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if li.Mode()&fs.ModeSymlink == 0 {
		if err := regular(path, li.Mode()); err != nil {
			return err
		}
		return notPseudo(path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("%s: a symbolic link to nothing readable: %w", path, err)
	}
	if err := regular(path, fi.Mode()); err != nil {
		return err
	}
	if err := notPseudo(path); err != nil {
		return err
	}
	if root == "" || followOut {
		return nil
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	inside, err := within(root, target)
	if err != nil {
		return err
	}
	if !inside {
		if hint == "" {
			hint = "pass --follow-symlinks to read it"
		}
		return fmt.Errorf("%s is a symbolic link to %s, outside %s: refused (%s)", path, target, root, hint)
	}
	return nil
}

// regular says why a file of mode m is not a regular file (nil when it is).
func regular(path string, m fs.FileMode) error {
	what := ""
	switch {
	case m.IsRegular():
		return nil
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeDevice != 0, m&fs.ModeCharDevice != 0:
		what = "a device"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m.IsDir():
		what = "a directory"
	default:
		what = "not a regular file (" + m.Type().String() + ")"
	}
	return fmt.Errorf("%s is %s: refused, only regular files are read", path, what)
}

// within reports whether target (a resolved path) lies inside the folder
// root (resolved too).
func within(root, target string) (bool, error) {
	r, err := filepath.EvalSymlinks(root)
	if err != nil {
		return false, err
	}
	if r, err = filepath.Abs(r); err != nil {
		return false, err
	}
	if target, err = filepath.Abs(target); err != nil {
		return false, err
	}
	rel, err := filepath.Rel(r, target)
	if err != nil {
		return false, nil
	}
	return rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel), nil
}
