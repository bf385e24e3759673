package lmevalref

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Value is a JSON value as Python's json.loads reads it: objects keep
// their members' order, and a number keeps its text (1 and 1.0 are an int
// and a float to Python; 0.30000000000000004 is not 0.3).
type Value struct {
	// Kind is "object", "array", "string", "number", "bool" or "null".
	Kind string
	// Text is a string's value, a number's text, "true"/"false".
	Text string
	Keys []string
	Obj  map[string]*Value
	Arr  []*Value
}

// Parse reads one JSON document.
func Parse(data []byte) (*Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder) (*Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			v := &Value{Kind: "object", Obj: map[string]*Value{}}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				e, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				key := k.(string)
				if _, dup := v.Obj[key]; !dup {
					v.Keys = append(v.Keys, key)
				}
				v.Obj[key] = e
			}
			_, err := dec.Token()
			return v, err
		}
		v := &Value{Kind: "array"}
		for dec.More() {
			e, err := parseValue(dec)
			if err != nil {
				return nil, err
			}
			v.Arr = append(v.Arr, e)
		}
		_, err := dec.Token()
		return v, err
	case json.Number:
		return &Value{Kind: "number", Text: string(t)}, nil
	case string:
		return &Value{Kind: "string", Text: t}, nil
	case bool:
		return &Value{Kind: "bool", Text: fmt.Sprint(t)}, nil
	case nil:
		return &Value{Kind: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// String is the value as compact JSON (for messages).
func (v *Value) String() string {
	var b strings.Builder
	v.write(&b)
	s := b.String()
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func (v *Value) write(b *strings.Builder) {
	switch v.Kind {
	case "object":
		b.WriteByte('{')
		for i, k := range v.Keys {
			if i > 0 {
				b.WriteString(", ")
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteString(": ")
			v.Obj[k].write(b)
		}
		b.WriteByte('}')
	case "array":
		b.WriteByte('[')
		for i, e := range v.Arr {
			if i > 0 {
				b.WriteString(", ")
			}
			e.write(b)
		}
		b.WriteByte(']')
	case "string":
		sb, _ := json.Marshal(v.Text)
		b.Write(sb)
	case "null":
		b.WriteString("null")
	default:
		b.WriteString(v.Text)
	}
}

// Rules say how Diff compares: paths are slash-separated member names
// ("configs/gsm8k/metadata/pretrained"), where "*" matches one member.
type Rules struct {
	// Env are fields lm-eval fills from its environment (dates, timings,
	// git, versions, the model's name and arguments): each must be present
	// on both sides, with the same kind of value unless one side is null.
	Env []string
	// Extra are members only the tally side may have (its "tally" object).
	Extra []string
	// Addresses compares strings with the memory addresses of Python's
	// reprs ("<function f at 0x7f3a...>") taken out.
	Addresses bool
}

var address = regexp.MustCompile(` at 0x[0-9a-f]+>`)

func matches(patterns []string, p string) bool {
	for _, pat := range patterns {
		if ok, _ := path.Match(pat, p); ok {
			return true
		}
	}
	return false
}

// Diff lists where got differs from want: a member missing or extra, the
// members' order, a kind, a number's text, a string, an array's length.
func Diff(want, got *Value, rules Rules) []string {
	var out []string
	diff(want, got, "", rules, &out)
	return out
}

func join(p, k string) string {
	if p == "" {
		return k
	}
	return p + "/" + k
}

func diff(want, got *Value, p string, rules Rules, out *[]string) {
	if matches(rules.Env, p) {
		if want.Kind != got.Kind && want.Kind != "null" && got.Kind != "null" {
			*out = append(*out, fmt.Sprintf("%s: a %s (%s), lm-eval has a %s (%s)", p, got.Kind, got, want.Kind, want))
		}
		return
	}
	if want.Kind != got.Kind {
		*out = append(*out, fmt.Sprintf("%s: %s, lm-eval %s", p, got, want))
		return
	}
	switch want.Kind {
	case "object":
		var wantKeys, gotKeys []string
		for _, k := range want.Keys {
			wantKeys = append(wantKeys, k)
			if _, ok := got.Obj[k]; !ok {
				*out = append(*out, fmt.Sprintf("%s: missing (lm-eval: %s)", join(p, k), want.Obj[k]))
			}
		}
		for _, k := range got.Keys {
			if _, ok := want.Obj[k]; !ok {
				if !matches(rules.Extra, join(p, k)) {
					*out = append(*out, fmt.Sprintf("%s: not in lm-eval's file (%s)", join(p, k), got.Obj[k]))
				}
				continue
			}
			gotKeys = append(gotKeys, k)
		}
		common := []string{}
		for _, k := range wantKeys {
			if _, ok := got.Obj[k]; ok {
				common = append(common, k)
			}
		}
		if strings.Join(common, "\x00") != strings.Join(gotKeys, "\x00") {
			*out = append(*out, fmt.Sprintf("%s: members in the order %q, lm-eval %q", p, gotKeys, common))
		}
		for _, k := range common {
			diff(want.Obj[k], got.Obj[k], join(p, k), rules, out)
		}
	case "array":
		if len(want.Arr) != len(got.Arr) {
			*out = append(*out, fmt.Sprintf("%s: %d items (%s), lm-eval %d (%s)", p, len(got.Arr), got, len(want.Arr), want))
			return
		}
		for i := range want.Arr {
			diff(want.Arr[i], got.Arr[i], join(p, fmt.Sprint(i)), rules, out)
		}
	default:
		if want.Kind == "string" && rules.Addresses {
			if address.ReplaceAllString(want.Text, " at 0x…>") == address.ReplaceAllString(got.Text, " at 0x…>") {
				return
			}
		}
		if want.Text != got.Text {
			*out = append(*out, fmt.Sprintf("%s: %s, lm-eval %s", p, got, want))
		}
	}
}
