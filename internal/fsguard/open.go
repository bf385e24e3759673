package fsguard

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTooLarge is wrapped by the error of a file larger than the bound it
// was read under.
var ErrTooLarge = errors.New("larger than tally reads")

// Open opens path for reading once Check(root, path, followOut) allows
// it, then checks the file it opened again (it may have been replaced
// between the check and the open): a regular file, of at most max bytes
// (max < 0: any size). The open itself never waits for a writer, so a
// FIFO swapped in at the last moment is refused rather than hung on.
func Open(root, path string, followOut bool, max int64) (*os.File, error) {
	return open(root, path, followOut, "", max)
}

func open(root, path string, followOut bool, hint string, max int64) (*os.File, error) {
	if err := check(root, path, followOut, hint); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openNoWait, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = regular(path, fi.Mode())
	}
	if err == nil {
		err = notPseudoFile(path, f)
	}
	if err == nil && max >= 0 && fi.Size() > max {
		err = tooLarge(path, fi.Size(), max)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile reads the whole of a file that Open allows, refusing one of
// more than max bytes before reading it (and one that grows past max
// while it is read).
func ReadFile(root, path string, followOut bool, max int64) ([]byte, error) {
	return readFile(root, path, followOut, "", max)
}

func readFile(root, path string, followOut bool, hint string, max int64) ([]byte, error) {
	f, err := open(root, path, followOut, hint, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	size := int64(0)
	if fi, err := f.Stat(); err == nil {
		size = fi.Size()
	}
	buf := make([]byte, 0, size+1)
	r := io.Reader(f)
	if max >= 0 {
		r = io.LimitReader(f, max+1)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
	}
	if max >= 0 && int64(len(buf)) > max {
		return nil, tooLarge(path, int64(len(buf)), max)
	}
	return buf, nil
}

func tooLarge(path string, size, max int64) error {
	return fmt.Errorf("%s is %d bytes, more than the %s tally reads from it: refused (%w)", path, size, Bytes(max), ErrTooLarge)
}

// Bytes writes a size in the unit that reads best: "512 bytes",
// "16 MiB", "1.5 GiB".
func Bytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	f, suffix := float64(n), ""
	for _, s := range []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"} {
		f /= unit
		suffix = s
		if f < unit {
			break
		}
	}
	if f == float64(int64(f)) {
		return fmt.Sprintf("%d %s", int64(f), suffix)
	}
	return fmt.Sprintf("%.1f %s", f, suffix)
}

// Folder is a folder a user named (a model's), whose files are read
// under Check's rules: regular files only, and no symbolic link that
// leads out of Root unless FollowOut. The zero Folder reads any regular
// file, through links that lead anywhere (a file named on its own).
type Folder struct {
	// Root is the folder links may lead into ("": anywhere).
	Root string
	// FollowOut allows links that lead out of Root.
	FollowOut bool
	// Hint says, in the error for a link out of Root, how to allow it
	// ("": pass --follow-symlinks).
	Hint string
}

// Check is Check(f.Root, path, f.FollowOut), with f's hint.
func (f Folder) Check(path string) error { return check(f.Root, path, f.FollowOut, f.Hint) }

// Open is Open(f.Root, path, f.FollowOut, max), with f's hint.
func (f Folder) Open(path string, max int64) (*os.File, error) {
	return open(f.Root, path, f.FollowOut, f.Hint, max)
}

// ReadFile is ReadFile(f.Root, path, f.FollowOut, max), with f's hint.
func (f Folder) ReadFile(path string, max int64) ([]byte, error) {
	return readFile(f.Root, path, f.FollowOut, f.Hint, max)
}
