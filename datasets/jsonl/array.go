package jsonl

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// RowTooLongError is the error for an element of a JSON array (or a
// member of a JSON object) longer than the bound: it names the file and
// the element, as LineTooLongError names a line.
type RowTooLongError struct {
	Name  string
	Index int // 1-based
	Max   int
}

func (e *RowTooLongError) Error() string {
	return fmt.Sprintf("read %s element %d: longer than %s, the most tally reads in one row", e.Name, e.Index, sizeName(e.Max))
}

// Is makes errors.Is(err, ErrLineTooLong) hold: the bound is the line's.
func (e *RowTooLongError) Is(target error) bool { return target == ErrLineTooLong }

// Elements calls f with the raw bytes of each element of the JSON array
// that r holds (white space around it trimmed; valid until f returns) and
// its 1-based index, one at a time: a data file of one JSON array is read as JSON Lines are, each
// element at most MaxLine long (no more of a longer one is read) rather
// than the whole file at once. The array's syntax around the elements is
// checked here; each element's is f's to check.
func Elements(r io.Reader, name string, f func(elem []byte, index int) error) error {
	return elements(r, name, MaxLine, '[', func(_ string, elem []byte, index int) error { return f(elem, index) })
}

// Members is Elements for a JSON object: f gets each member's key and the
// raw bytes of its value (at most MaxLine long).
func Members(r io.Reader, name string, f func(key string, value []byte, index int) error) error {
	return elements(r, name, MaxLine, '{', f)
}

func elements(r io.Reader, name string, max int, open byte, f func(key string, elem []byte, index int) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	fail := func(format string, args ...any) error {
		return fmt.Errorf("read %s: %s", name, fmt.Sprintf(format, args...))
	}
	c, err := skipSpace(br)
	if err != nil || c != open {
		return fail("not a JSON %s", map[byte]string{'[': "array", '{': "object"}[open])
	}
	close := map[byte]byte{'[': ']', '{': '}'}[open]
	var buf []byte
	for index := 1; ; index++ {
		c, err := skipSpace(br)
		if err != nil {
			return fail("the JSON ends before its closing %c", close)
		}
		if c == close && index == 1 {
			break
		}
		key := ""
		if open == '{' {
			if c != '"' {
				return fail("member %d: a key is not a string", index)
			}
			buf, err = scanValue(br, c, buf[:0], max)
			if err != nil {
				return memberErr(name, index, max, err)
			}
			if err := json.Unmarshal(buf, &key); err != nil {
				return fail("member %d: %v", index, err)
			}
			if c, err = skipSpace(br); err != nil || c != ':' {
				return fail("member %d: no colon after its key", index)
			}
			if c, err = skipSpace(br); err != nil {
				return fail("the JSON ends in member %d", index)
			}
		}
		buf, err = scanValue(br, c, buf[:0], max)
		if err != nil {
			return memberErr(name, index, max, err)
		}
		if err := f(key, buf, index); err != nil {
			return err
		}
		c, err = skipSpace(br)
		switch {
		case err != nil:
			return fail("the JSON ends before its closing %c", close)
		case c == close:
			if c, err := skipSpace(br); err != io.EOF {
				_ = c
				return fail("more after the closing %c", close)
			}
			return nil
		case c != ',':
			return fail("element %d: %q where a comma or %c belongs", index, c, close)
		}
	}
	if _, err := skipSpace(br); err != io.EOF {
		return fail("more after the closing %c", close)
	}
	return nil
}

var errTooLong = errors.New("too long")

func memberErr(name string, index, max int, err error) error {
	if errors.Is(err, errTooLong) {
		return &RowTooLongError{Name: name, Index: index, Max: max}
	}
	return fmt.Errorf("read %s element %d: %w", name, index, err)
}

// skipSpace returns the next byte that is not JSON white space.
func skipSpace(br *bufio.Reader) (byte, error) {
	for {
		c, err := br.ReadByte()
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c, nil
		}
	}
}

// scanValue appends to buf the JSON value that starts with c and goes on
// in br (a string, an array or object, or a scalar), at most max bytes;
// it finds the value's end without checking more of its syntax.
func scanValue(br *bufio.Reader, c byte, buf []byte, max int) ([]byte, error) {
	add := func(c byte) error {
		if len(buf) >= max {
			return errTooLong
		}
		buf = append(buf, c)
		return nil
	}
	if err := add(c); err != nil {
		return nil, err
	}
	depth, inString, escaped := 0, c == '"', false
	switch c {
	case '[', '{':
		depth = 1
	case '"':
	default:
		// A scalar: up to the next delimiter, which is left unread.
		for {
			b, err := br.Peek(1)
			if err == io.EOF {
				return buf, nil
			}
			if err != nil {
				return nil, err
			}
			switch b[0] {
			case ',', ']', '}', ' ', '\t', '\n', '\r':
				return buf, nil
			}
			br.ReadByte()
			if err := add(b[0]); err != nil {
				return nil, err
			}
		}
	}
	for inString || depth > 0 {
		c, err := br.ReadByte()
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		if err != nil {
			return nil, err
		}
		if err := add(c); err != nil {
			return nil, err
		}
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		}
	}
	return buf, nil
}
