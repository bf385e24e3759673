package report

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file writes the sample browser's data chunks as JSON by hand: the
// bytes encoding/json writes for them (a test holds the two equal), at a
// fraction of the cost and with no map per evaluation.

// metricValue is one metric's value under one column.
type metricValue struct {
	name  string
	value float64
}

// evalValues are an evaluation's finite values, sorted by metric name
// (written as the JSON object encoding/json writes for a map).
type evalValues []metricValue

// finiteValues returns the finite values of sc, sorted by name.
func finiteValues(sc *Scored) evalValues {
	out := make(evalValues, 0, len(sc.values))
	for k, v := range sc.Values() {
		if finite(v) {
			out = append(out, metricValue{k, v})
		}
	}
	slices.SortFunc(out, func(a, b metricValue) int { return strings.Compare(a.name, b.name) })
	return out
}

// appendChunkJSON appends c as json.NewEncoder(w).Encode writes it (with
// its newline).
func appendChunkJSON(b []byte, c *browserChunk) []byte {
	b = append(b, `{"p":`...)
	b = appendStrings(b, c.Prompts)
	b = append(b, `,"i":`...)
	b = appendArray(b, c.Items, appendItemJSON)
	return append(b, "}\n"...)
}

func appendItemJSON(b []byte, it *browserItem) []byte {
	b = append(b, `{"p":`...)
	b = strconv.AppendInt(b, int64(it.Prompt), 10)
	b = append(b, `,"g":`...)
	b = appendStrings(b, it.Gold)
	b = append(b, `,"x":`...)
	b = appendJSONString(b, it.Text)
	b = append(b, `,"f":`...)
	b = appendJSONString(b, it.Finish)
	if it.Error != "" {
		b = append(b, `,"e":`...)
		b = appendJSONString(b, it.Error)
	}
	if it.Failed != "" {
		b = append(b, `,"fr":`...)
		b = appendJSONString(b, it.Failed)
	}
	if it.Cut {
		b = append(b, `,"imp":true`...)
	}
	b = append(b, `,"u":`...)
	b = appendArray(b, it.Under, appendEvalJSON)
	return append(b, '}')
}

func appendEvalJSON(b []byte, e *browserEval) []byte {
	b = append(b, `{"c":`...)
	b = strconv.AppendInt(b, int64(e.Col), 10)
	b = append(b, `,"cut":`...)
	b = strconv.AppendInt(b, int64(e.Cut), 10)
	if e.Seq != "" {
		b = append(b, `,"seq":`...)
		b = appendJSONString(b, e.Seq)
	}
	b = append(b, `,"pred":`...)
	b = appendJSONString(b, e.Prediction)
	b = append(b, `,"v":`...)
	b = e.Values.appendJSON(b)
	return append(b, '}')
}

// appendJSON appends the values as the JSON object of a map of them.
func (vs evalValues) appendJSON(b []byte) []byte {
	b = append(b, '{')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, v.name)
		b = append(b, ':')
		b = appendJSONFloat(b, v.value)
	}
	return append(b, '}')
}

// MarshalJSON writes the values as the JSON object of a map of them.
func (vs evalValues) MarshalJSON() ([]byte, error) { return vs.appendJSON(nil), nil }

// appendStrings appends a list of strings (null when nil).
func appendStrings(b []byte, ss []string) []byte {
	return appendArray(b, ss, func(b []byte, s *string) []byte { return appendJSONString(b, *s) })
}

// appendArray appends xs as encoding/json writes a slice (null when nil),
// each element by appendElem.
func appendArray[T any](b []byte, xs []T, appendElem func([]byte, *T) []byte) []byte {
	if xs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendElem(b, &xs[i])
	}
	return append(b, ']')
}

// appendJSONFloat appends a finite float64 as encoding/json writes it:
// the shortest decimal that reads back, in exponent form below 1e-6 and
// from 1e21 on (its exponent without a leading zero).
func appendJSONFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// appendJSONString appends s quoted as encoding/json writes strings:
// HTML-safe (<, > and & escaped), control characters escaped, invalid
// UTF-8 as U+FFFD, and U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
