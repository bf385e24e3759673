package jsonl

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// MaxLine is the longest line tally reads from a data file or an imported
// log: 16 MiB. That is several times the longest sample of any long-context
// benchmark (a one-million-token prompt is about 4 MB of text, and an
// lm-eval log line holds it twice). It bounds what one line costs: a
// longer line is an error naming the file and line, and no more of it is
// read than the bound.
const MaxLine = 16 << 20

// ErrLineTooLong is what the error for a line longer than the bound is
// (errors.Is).
var ErrLineTooLong = errors.New("line too long")

// LineTooLongError is the error for a line longer than the bound: it names
// the file and the line.
type LineTooLongError struct {
	Name      string
	Line, Max int
}

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("read %s line %d: longer than %s, the most tally reads in one line", e.Name, e.Line, sizeName(e.Max))
}

// Is makes errors.Is(err, ErrLineTooLong) hold.
func (e *LineTooLongError) Is(target error) bool { return target == ErrLineTooLong }

// Lines reads the lines of a file, each at most a bound long.
type Lines struct {
	br   *bufio.Reader
	name string
	max  int
	n    int
}

// NewLines reads the lines of r, of at most MaxLine bytes each; name (the
// file) is used in errors.
func NewLines(r io.Reader, name string) *Lines { return newLines(r, name, MaxLine) }

func newLines(r io.Reader, name string, max int) *Lines {
	return &Lines{br: bufio.NewReaderSize(r, min(max+1, 1<<20)), name: name, max: max}
}

// Next returns the next line, with its line ending ("\n" or "\r\n"), in a
// slice of its own; io.EOF once there is none. A line longer than the bound
// is a *LineTooLongError (errors.Is ErrLineTooLong); a read
// error names them too.
func (l *Lines) Next() ([]byte, error) {
	var line []byte
	for {
		frag, err := l.br.ReadSlice('\n')
		n := len(line) + len(frag)
		if len(frag) > 0 && frag[len(frag)-1] == '\n' {
			n-- // the newline is not part of the line
		}
		if n > l.max {
			l.n++
			return nil, &LineTooLongError{Name: l.name, Line: l.n, Max: l.max}
		}
		line = append(line, frag...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(line) == 0:
			return nil, io.EOF
		case err != nil && err != io.EOF:
			return nil, fmt.Errorf("read %s line %d: %w", l.name, l.n+1, err)
		}
		l.n++
		return line, nil
	}
}

// Line is the number (1-based) of the line Next returned last.
func (l *Lines) Line() int { return l.n }

// sizeName writes a byte count the way the documentation does (16 MiB).
func sizeName(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
