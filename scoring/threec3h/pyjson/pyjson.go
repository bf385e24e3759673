// Package pyjson decodes JSON text the way CPython's json.loads does (the C
// scanner of Modules/_json.c in strict mode), for metrics whose reference
// parses judge or model output with json.loads.
//
// Differences from encoding/json that matter for those references: the
// literals NaN, Infinity and -Infinity are accepted; a float literal too
// large for float64 becomes ±Inf instead of failing. Values decode to
// map[string]any, []any, string, float64, bool and nil.
//
// Known gaps: Python integers are unbounded, here every number is a float64
// (integers beyond 2^53 are rounded, beyond the float range become ±Inf);
// a lone UTF-16 surrogate escape decodes to U+FFFD instead of a surrogate
// code point; nesting deeper than MaxDepth is an error where Python raises
// RecursionError at about 1000 levels.
package pyjson

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth bounds the nesting of arrays and objects.
const MaxDepth = 10000

// SyntaxError is a json.JSONDecodeError: the text is not valid JSON for
// Python. Pos is the byte offset where decoding failed.
type SyntaxError struct {
	Msg string
	Pos int
}

// Error describes the failure.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("pyjson: %s at byte %d", e.Msg, e.Pos)
}

// ErrTooDeep is returned for nesting beyond MaxDepth (Python raises
// RecursionError, not JSONDecodeError).
var ErrTooDeep = errors.New("pyjson: nesting too deep")

// Loads decodes s as json.loads(s) does: one value with optional JSON
// whitespace around it.
func Loads(s string) (any, error) {
	d := decoder{s: s}
	d.ws()
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	d.ws()
	if d.i != len(s) {
		return nil, &SyntaxError{"Extra data", d.i}
	}
	return v, nil
}

type decoder struct {
	s    string
	i    int
	ints bool // decode integer literals that fit as int64
}

// RawDecode is json.JSONDecoder().raw_decode(s): it decodes the one value
// that starts at s[0] (no leading whitespace allowed) and returns it with
// the byte offset where it ends. Unlike Loads, integer literals that fit
// decode to int64 (Python int), others to float64, so callers can tell 1
// from 1.0 as Python's type() does.
func RawDecode(s string) (any, int, error) {
	d := decoder{s: s, ints: true}
	v, err := d.value(0)
	if err != nil {
		return nil, 0, err
	}
	return v, d.i, nil
}

func (d *decoder) ws() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) fail(msg string) error { return &SyntaxError{msg, d.i} }

func (d *decoder) value(depth int) (any, error) {
	if d.i >= len(d.s) {
		return nil, d.fail("Expecting value")
	}
	rest := d.s[d.i:]
	switch c := d.s[d.i]; {
	case c == '"':
		return d.str()
	case c == '{':
		if depth >= MaxDepth {
			return nil, ErrTooDeep
		}
		return d.object(depth + 1)
	case c == '[':
		if depth >= MaxDepth {
			return nil, ErrTooDeep
		}
		return d.array(depth + 1)
	case strings.HasPrefix(rest, "null"):
		d.i += 4
		return nil, nil
	case strings.HasPrefix(rest, "true"):
		d.i += 4
		return true, nil
	case strings.HasPrefix(rest, "false"):
		d.i += 5
		return false, nil
	case strings.HasPrefix(rest, "NaN"):
		d.i += 3
		return math.NaN(), nil
	case strings.HasPrefix(rest, "Infinity"):
		d.i += 8
		return math.Inf(1), nil
	case strings.HasPrefix(rest, "-Infinity"):
		d.i += 9
		return math.Inf(-1), nil
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	}
	return nil, d.fail("Expecting value")
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// number matches -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?, taking
// the fraction and exponent only when complete, as the C scanner does.
func (d *decoder) number() (any, error) {
	start := d.i
	j := d.i
	if j < len(d.s) && d.s[j] == '-' {
		j++
	}
	switch {
	case j < len(d.s) && d.s[j] == '0':
		j++
	case j < len(d.s) && d.s[j] >= '1' && d.s[j] <= '9':
		for j < len(d.s) && isDigit(d.s[j]) {
			j++
		}
	default:
		return nil, d.fail("Expecting value")
	}
	if j+1 < len(d.s) && d.s[j] == '.' && isDigit(d.s[j+1]) {
		j += 2
		for j < len(d.s) && isDigit(d.s[j]) {
			j++
		}
	}
	if j < len(d.s) && (d.s[j] == 'e' || d.s[j] == 'E') {
		k := j + 1
		if k < len(d.s) && (d.s[k] == '+' || d.s[k] == '-') {
			k++
		}
		if k < len(d.s) && isDigit(d.s[k]) {
			for k < len(d.s) && isDigit(d.s[k]) {
				k++
			}
			j = k
		}
	}
	d.i = j
	if d.ints && !strings.ContainsAny(d.s[start:j], ".eE") {
		if n, err := strconv.ParseInt(d.s[start:j], 10, 64); err == nil {
			return n, nil
		}
	}
	f, err := strconv.ParseFloat(d.s[start:j], 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, &SyntaxError{"bad number", start}
	}
	return f, nil
}

func (d *decoder) str() (string, error) {
	d.i++ // opening quote
	var b strings.Builder
	for {
		if d.i >= len(d.s) {
			return "", d.fail("Unterminated string starting")
		}
		c := d.s[d.i]
		switch {
		case c == '"':
			d.i++
			return b.String(), nil
		case c < 0x20:
			return "", d.fail("Invalid control character")
		case c == '\\':
			if d.i+1 >= len(d.s) {
				return "", d.fail("Unterminated string starting")
			}
			e := d.s[d.i+1]
			d.i += 2
			switch e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return "", d.fail("Invalid \\uXXXX escape")
				}
				if utf16.IsSurrogate(r) && r < 0xdc00 && strings.HasPrefix(d.s[d.i:], "\\u") {
					save := d.i
					d.i += 2
					if r2, ok := d.hex4(); ok && r2 >= 0xdc00 && r2 <= 0xdfff {
						r = utf16.DecodeRune(r, r2)
					} else {
						d.i = save
					}
				}
				if utf16.IsSurrogate(r) {
					r = utf8.RuneError
				}
				b.WriteRune(r)
			default:
				return "", d.fail("Invalid \\escape")
			}
		default:
			r, size := utf8.DecodeRuneInString(d.s[d.i:])
			b.WriteRune(r)
			d.i += size
		}
	}
}

func (d *decoder) hex4() (rune, bool) {
	if d.i+4 > len(d.s) {
		return 0, false
	}
	v, err := strconv.ParseUint(d.s[d.i:d.i+4], 16, 32)
	if err != nil || strings.ContainsAny(d.s[d.i:d.i+4], "+-_xX") {
		return 0, false
	}
	d.i += 4
	return rune(v), true
}

func (d *decoder) object(depth int) (any, error) {
	d.i++
	m := map[string]any{}
	d.ws()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return m, nil
	}
	for {
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			return nil, d.fail("Expecting property name enclosed in double quotes")
		}
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		d.ws()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			return nil, d.fail("Expecting ':' delimiter")
		}
		d.i++
		d.ws()
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		m[k] = v
		d.ws()
		if d.i < len(d.s) && d.s[d.i] == '}' {
			d.i++
			return m, nil
		}
		if d.i >= len(d.s) || d.s[d.i] != ',' {
			return nil, d.fail("Expecting ',' delimiter")
		}
		d.i++
		d.ws()
	}
}

func (d *decoder) array(depth int) (any, error) {
	d.i++
	a := []any{}
	d.ws()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return a, nil
	}
	for {
		v, err := d.value(depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		d.ws()
		if d.i < len(d.s) && d.s[d.i] == ']' {
			d.i++
			return a, nil
		}
		if d.i >= len(d.s) || d.s[d.i] != ',' {
			return nil, d.fail("Expecting ',' delimiter")
		}
		d.i++
		d.ws()
	}
}
