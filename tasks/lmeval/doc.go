package lmeval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"

	"tally/internal/pyliteral"
)

// Map is a Python dict with string keys, in insertion order: a dataset
// row, or a mapping of a task file. Values are nil, bool, int64, float64,
// string, []any, *Map, or (in task files only) Function.
type Map struct {
	Keys []string
	Vals map[string]any
}

// NewMap returns an empty Map.
func NewMap() *Map { return &Map{Vals: map[string]any{}} }

// Get returns the value of key.
func (m *Map) Get(key string) (any, bool) {
	if m == nil {
		return nil, false
	}
	v, ok := m.Vals[key]
	return v, ok
}

// Set sets key, appending it when new (a Python dict keeps the first
// position of a key).
func (m *Map) Set(key string, v any) {
	if _, ok := m.Vals[key]; !ok {
		m.Keys = append(m.Keys, key)
	}
	m.Vals[key] = v
}

// Delete removes key.
func (m *Map) Delete(key string) {
	if _, ok := m.Vals[key]; !ok {
		return
	}
	delete(m.Vals, key)
	for i, k := range m.Keys {
		if k == key {
			m.Keys = append(m.Keys[:i:i], m.Keys[i+1:]...)
			break
		}
	}
}

// Len is the number of keys.
func (m *Map) Len() int {
	if m == nil {
		return 0
	}
	return len(m.Keys)
}

// Clone copies the map and, recursively, the maps and lists in it.
func (m *Map) Clone() *Map {
	out := &Map{Keys: append([]string(nil), m.Keys...), Vals: make(map[string]any, len(m.Vals))}
	for k, v := range m.Vals {
		out.Vals[k] = cloneValue(v)
	}
	return out
}

func cloneValue(v any) any {
	switch x := v.(type) {
	case *Map:
		return x.Clone()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneValue(e)
		}
		return out
	}
	return v
}

// MarshalJSON writes the map as a JSON object in key order.
func (m *Map) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range m.Keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := marshalValue(m.Vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func marshalValue(v any) ([]byte, error) {
	switch x := v.(type) {
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return json.Marshal(pyliteral.FloatRepr(x)) // JSON has no NaN
		}
		// As Python's json writes a float (float.__repr__: 1.0, 1e-05),
		// so that a document's text is the one lm-eval hashes.
		return []byte(pyliteral.FloatRepr(x)), nil
	case []any:
		var b bytes.Buffer
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			eb, err := marshalValue(e)
			if err != nil {
				return nil, err
			}
			b.Write(eb)
		}
		b.WriteByte(']')
		return b.Bytes(), nil
	case Function:
		return json.Marshal("!function " + x.Name)
	}
	return json.Marshal(v)
}

// Function is a YAML "!function module.name" value: Python code, which
// tally runs only where it has a port of it (hooks.go). Dir is the folder
// of the YAML file that names it, where lm-eval looks for the module
// first ("" when it came from elsewhere: --set).
type Function struct {
	Name, Dir string
}

// String is the YAML's spelling, "!function module.name".
func (f Function) String() string { return "!function " + f.Name }

// decodeJSON reads one JSON value into the types a Map holds, keeping
// object key order, ints as int64 and other numbers as float64 (as
// Python's json module reads them).
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeJSONValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// maxJSONDepth bounds the nesting of a JSON value decoded here, as
// encoding/json bounds its own (a data row nested millions deep overflowed
// the goroutine's stack: a crash).
const maxJSONDepth = 10000

func decodeJSONValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("JSON nested more than %d deep", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			m := NewMap()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeJSONValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				m.Set(kt.(string), v)
			}
			_, err := dec.Token()
			return m, err
		case '[':
			out := []any{}
			for dec.More() {
				v, err := decodeJSONValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			}
			_, err := dec.Token()
			return out, err
		}
	case json.Number:
		s := string(t)
		if !strings.ContainsAny(s, ".eE") {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("integer %s does not fit 64 bits", s)
			}
			return n, nil
		}
		return strconv.ParseFloat(s, 64)
	case string, bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// toJinja converts a value for the template engine.
func toJinja(v any) jinja.Value {
	switch x := v.(type) {
	case nil:
		return jinja.None()
	case bool:
		return jinja.NewBool(x)
	case int64:
		return jinja.NewInt(x)
	case float64:
		return jinja.NewFloat(x)
	case string:
		return jinja.NewString(x)
	case []any:
		items := make([]jinja.Value, len(x))
		for i, e := range x {
			items[i] = toJinja(e)
		}
		return jinja.NewList(items)
	case *Map:
		d := jinja.NewDict()
		for _, k := range x.Keys {
			d.AsDict().Set(k, toJinja(x.Vals[k]))
		}
		return d
	}
	return jinja.NewString(fmt.Sprint(v))
}

// toPy converts a value for Python's repr and comparisons.
func toPy(v any) pyliteral.Value {
	switch x := v.(type) {
	case nil:
		return pyliteral.Value{Kind: pyliteral.None}
	case bool:
		return pyliteral.Value{Kind: pyliteral.Bool, Bool: x}
	case int64:
		return pyliteral.Value{Kind: pyliteral.Int, Int: big.NewInt(x)}
	case float64:
		return pyliteral.Value{Kind: pyliteral.Float, Float: x}
	case string:
		return pyliteral.Value{Kind: pyliteral.Str, Str: x}
	case []any:
		out := pyliteral.Value{Kind: pyliteral.List}
		for _, e := range x {
			out.Items = append(out.Items, toPy(e))
		}
		return out
	case *Map:
		out := pyliteral.Value{Kind: pyliteral.Dict}
		for _, k := range x.Keys {
			out.Items = append(out.Items, pyliteral.Value{Kind: pyliteral.Str, Str: k})
			out.Vals = append(out.Vals, toPy(x.Vals[k]))
		}
		return out
	}
	return pyliteral.Value{Kind: pyliteral.Str, Str: fmt.Sprint(v)}
}

// fromPy converts a literal_eval result back (tuples and sets as lists,
// ints beyond 64 bits refused).
func fromPy(v pyliteral.Value) (any, error) {
	switch v.Kind {
	case pyliteral.None:
		return nil, nil
	case pyliteral.Bool:
		return v.Bool, nil
	case pyliteral.Int:
		if !v.Int.IsInt64() {
			return nil, fmt.Errorf("integer %s does not fit 64 bits", v.Int)
		}
		return v.Int.Int64(), nil
	case pyliteral.Float:
		return v.Float, nil
	case pyliteral.Str:
		return v.Str, nil
	case pyliteral.List, pyliteral.Tuple:
		out := make([]any, len(v.Items))
		for i, e := range v.Items {
			x, err := fromPy(e)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case pyliteral.Dict:
		m := NewMap()
		for i, k := range v.Items {
			if k.Kind != pyliteral.Str {
				return nil, fmt.Errorf("dict key %s is not a str", k.Repr())
			}
			x, err := fromPy(v.Vals[i])
			if err != nil {
				return nil, err
			}
			m.Set(k.Str, x)
		}
		return m, nil
	}
	return nil, fmt.Errorf("%s values are not supported", v.Repr())
}

// pyStr is Python's str() of a value.
func pyStr(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case lenientUndefined:
		return ""
	}
	return toPy(v).Repr()
}

// pyEqual is Python's == on two values (1 == 1.0 == True; dicts compare
// regardless of order).
func pyEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool, int64, float64:
		fa, oka := number(a)
		fb, okb := number(b)
		return oka && okb && fa == fb
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !pyEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case *Map:
		y, ok := b.(*Map)
		if !ok || x.Len() != y.Len() {
			return false
		}
		for _, k := range x.Keys {
			yv, ok := y.Vals[k]
			if !ok || !pyEqual(x.Vals[k], yv) {
				return false
			}
		}
		return true
	}
	return false
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}
