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
	if err := Check(root, path, followOut); err != nil {
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
	f, err := Open(root, path, followOut, max)
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
