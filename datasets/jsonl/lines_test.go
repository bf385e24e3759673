package jsonl

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestLines(t *testing.T) {
	long := strings.Repeat("x", 8)
	tests := []struct {
		name  string
		in    string
		lines []string
		err   string // the error after those lines
	}{
		{"empty", "", nil, ""},
		{"lines", "a\nbb\n", []string{"a\n", "bb\n"}, ""},
		{"no final newline", "a\nbb", []string{"a\n", "bb"}, ""},
		{"crlf", "a\r\n", []string{"a\r\n"}, ""},
		{"at the bound", long + "\n" + long, []string{long + "\n", long}, ""},
		{"past the bound", "a\n" + long + "y\nz\n", []string{"a\n"}, "read f line 2: longer than 8 bytes"},
		{"past the bound unterminated", long + "y", nil, "read f line 1: longer than 8 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newLines(strings.NewReader(tc.in), "f", 8)
			var got []string
			var err error
			for {
				var line []byte
				line, err = l.Next()
				if err != nil {
					break
				}
				got = append(got, string(line))
			}
			if strings.Join(got, "|") != strings.Join(tc.lines, "|") {
				t.Errorf("lines %q, want %q", got, tc.lines)
			}
			switch {
			case tc.err == "" && err != io.EOF:
				t.Errorf("error %v, want EOF", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrLineTooLong)):
				t.Errorf("error %v, want %q wrapping ErrLineTooLong", err, tc.err)
			}
		})
	}
}

// zeros is an endless stream of zero bytes (a symlink to /dev/zero).
type zeros struct{ n int }

func (z *zeros) Read(p []byte) (int, error) {
	clear(p)
	z.n += len(p)
	return len(p), nil
}

// TestLinesEndless: an endless line is refused once past the bound,
// having read no more than the bound and one buffer of it (the line
// reader had no bound and exhausted memory on /dev/zero).
func TestLinesEndless(t *testing.T) {
	z := &zeros{}
	_, err := newLines(z, "zero", 1<<20).Next()
	if !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("error %v", err)
	}
	if z.n > 3<<20 {
		t.Errorf("read %d bytes for a bound of 1 MiB", z.n)
	}
	if _, err := Read(&zeros{}, "zero", true); !errors.Is(err, ErrLineTooLong) || !strings.Contains(err.Error(), "zero line 1: longer than 16 MiB") {
		t.Errorf("Read: %v", err)
	}
}

// FuzzLines: lines under the bound come back as they were.
func FuzzLines(f *testing.F) {
	f.Add("a\nbb\r\n\nccc")
	f.Fuzz(func(t *testing.T, in string) {
		l := newLines(strings.NewReader(in), "f", 16)
		var out bytes.Buffer
		for {
			line, err := l.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				if !errors.Is(err, ErrLineTooLong) {
					t.Fatal(err)
				}
				return
			}
			if len(bytes.TrimSuffix(line, []byte("\n"))) > 16 || bytes.Contains(line[:len(line)-1], []byte("\n")) {
				t.Fatalf("line %q", line)
			}
			out.Write(line)
		}
		if out.String() != in {
			t.Fatalf("lines %q, input %q", out.String(), in)
		}
	})
}
