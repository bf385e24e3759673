package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// pyDumpsIndent writes a JSON value as Python's json.dumps(value,
// indent=2, ensure_ascii=False) writes the value Python's json.loads
// reads from it: object members in their order, numbers as they are
// written (Python's own repr of a float, as tally/tasks/lmeval stores a
// document's floats), strings escaped as Python's encoder escapes them
// (", \ and control characters only), "[]" and "{}" when empty, two
// spaces of indent, ", " never (indent makes the item separator ",").
// lm-eval's doc_hash is the SHA-256 of this text.
func pyDumpsIndent(raw []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b strings.Builder
	if err := pyDumpValue(dec, &b, 0); err != nil {
		return "", err
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", fmt.Errorf("python json: trailing data")
	}
	return b.String(), nil
}

func pyDumpValue(dec *json.Decoder, b *strings.Builder, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("python json: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		open, close := t, json.Delim(']')
		if t == '{' {
			close = '}'
		}
		if !dec.More() {
			if _, err := dec.Token(); err != nil {
				return err
			}
			b.WriteString(string(open) + string(close))
			return nil
		}
		b.WriteByte(byte(open))
		for first := true; dec.More(); first = false {
			if !first {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
			b.WriteString(strings.Repeat("  ", depth+1))
			if open == '{' {
				k, err := dec.Token()
				if err != nil {
					return fmt.Errorf("python json: %w", err)
				}
				key, _ := k.(string)
				pyString(b, key)
				b.WriteString(": ")
			}
			if err := pyDumpValue(dec, b, depth+1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return fmt.Errorf("python json: %w", err)
		}
		b.WriteByte('\n')
		b.WriteString(strings.Repeat("  ", depth))
		b.WriteByte(byte(close))
	case string:
		pyString(b, t)
	case json.Number:
		b.WriteString(t.String())
	case bool:
		if t {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case nil:
		b.WriteString("null")
	}
	return nil
}

// pyString writes s as Python's JSON encoder does with ensure_ascii=False:
// in quotes, with ", \, \b, \f, \n, \r, \t escaped by name and the other
// control characters below U+0020 as \u00XX (lowercase hex); every other
// character as it is.
func pyString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	b.WriteByte('"')
}
