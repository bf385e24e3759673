package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"tally/internal/pyliteral"
	"tally/tasks/lmeval"
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

// pyObject is a JSON object whose members keep the order they were set
// in, as a Python dict does: the lm-eval files are written in the order
// lm-eval's writer builds its dicts.
type pyObject struct {
	keys []string
	vals map[string]any
}

func newPyObject() *pyObject { return &pyObject{vals: map[string]any{}} }

// set sets a member, appending it when new.
func (o *pyObject) set(k string, v any) *pyObject {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
	return o
}

// get returns a member.
func (o *pyObject) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

// pyFloat is a Python float: written as Python's repr writes it (1.0,
// 1e-05, 1e+16), where Go writes 1, 1e-05, 10000000000000000.
type pyFloat float64

// pyEncode writes a value as Python's json.dumps(value,
// ensure_ascii=False) writes the value Python holds: with indent=2 when
// indent is set (lm-eval's results file), else with its default
// separators ", " and ": " (a samples file's line). Values: nil, bool, Go
// ints (Python ints), float64 and pyFloat (Python floats: repr; NaN and
// infinities as Python's NaN, Infinity, -Infinity), strings (Python's
// escapes), slices, *pyObject and *lmeval.Map (in order), map[string]V
// (keys sorted), json.RawMessage (its members in order, its numbers as
// written) and anything else as encoding/json writes it, read back in
// order.
func pyEncode(v any, indent bool) ([]byte, error) {
	var b strings.Builder
	if err := pyEncodeValue(&b, v, indent, 0); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

func pyFloatText(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return pyliteral.FloatRepr(f)
}

// pyContainer writes n items between open and close in Python's layout.
func pyContainer(b *strings.Builder, open, close byte, n int, indent bool, depth int, item func(i int) error) error {
	if n == 0 {
		b.WriteByte(open)
		b.WriteByte(close)
		return nil
	}
	b.WriteByte(open)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
			if !indent {
				b.WriteByte(' ')
			}
		}
		if indent {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat("  ", depth+1))
		}
		if err := item(i); err != nil {
			return err
		}
	}
	if indent {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat("  ", depth))
	}
	b.WriteByte(close)
	return nil
}

func pyEncodeValue(b *strings.Builder, v any, indent bool, depth int) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case float64:
		b.WriteString(pyFloatText(x))
	case pyFloat:
		b.WriteString(pyFloatText(float64(x)))
	case string:
		pyString(b, x)
	case lmeval.Function:
		pyString(b, x.String())
	case json.Number:
		b.WriteString(x.String())
	case []string:
		return pyContainer(b, '[', ']', len(x), indent, depth, func(i int) error { pyString(b, x[i]); return nil })
	case []any:
		return pyContainer(b, '[', ']', len(x), indent, depth, func(i int) error { return pyEncodeValue(b, x[i], indent, depth+1) })
	case *pyObject:
		return pyContainer(b, '{', '}', len(x.keys), indent, depth, func(i int) error {
			pyString(b, x.keys[i])
			b.WriteString(": ")
			return pyEncodeValue(b, x.vals[x.keys[i]], indent, depth+1)
		})
	case *lmeval.Map:
		return pyContainer(b, '{', '}', len(x.Keys), indent, depth, func(i int) error {
			pyString(b, x.Keys[i])
			b.WriteString(": ")
			return pyEncodeValue(b, x.Vals[x.Keys[i]], indent, depth+1)
		})
	case json.RawMessage:
		tree, err := decodeOrdered(x)
		if err != nil {
			return err
		}
		return pyEncodeValue(b, tree, indent, depth)
	default:
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.Slice, reflect.Array:
			if rv.Kind() == reflect.Slice && rv.IsNil() {
				b.WriteString("null")
				return nil
			}
			return pyContainer(b, '[', ']', rv.Len(), indent, depth, func(i int) error {
				return pyEncodeValue(b, rv.Index(i).Interface(), indent, depth+1)
			})
		case reflect.Map:
			if rv.Type().Key().Kind() == reflect.String {
				if rv.IsNil() {
					b.WriteString("null")
					return nil
				}
				keys := make([]string, 0, rv.Len())
				for _, k := range rv.MapKeys() {
					keys = append(keys, k.String())
				}
				slices.Sort(keys)
				return pyContainer(b, '{', '}', len(keys), indent, depth, func(i int) error {
					pyString(b, keys[i])
					b.WriteString(": ")
					return pyEncodeValue(b, rv.MapIndex(reflect.ValueOf(keys[i]).Convert(rv.Type().Key())).Interface(), indent, depth+1)
				})
			}
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			b.WriteString(fmt.Sprint(v))
			return nil
		case reflect.Float32:
			b.WriteString(pyFloatText(rv.Float()))
			return nil
		case reflect.Pointer:
			if rv.IsNil() {
				b.WriteString("null")
				return nil
			}
			return pyEncodeValue(b, rv.Elem().Interface(), indent, depth)
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return pyEncodeValue(b, json.RawMessage(raw), indent, depth)
	}
	return nil
}

// decodeOrdered reads JSON into pyObjects (members in order), []any,
// json.Number (a number's text as written), strings, bools and nil.
func decodeOrdered(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := decodeOrderedValue(dec)
	if err != nil {
		return nil, fmt.Errorf("python json: %w", err)
	}
	return v, nil
}

func decodeOrderedValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			o := newPyObject()
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				e, err := decodeOrderedValue(dec)
				if err != nil {
					return nil, err
				}
				o.set(k.(string), e)
			}
			_, err := dec.Token()
			return o, err
		}
		out := []any{}
		for dec.More() {
			e, err := decodeOrderedValue(dec)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		_, err := dec.Token()
		return out, err
	}
	return tok, nil
}
