package jsonl

import (
	"errors"
	"strings"
	"testing"
)

// TestElements: a JSON array's elements and a JSON object's members, one
// at a time, whatever their strings hold; malformed arrays refused; an
// element past the bound refused (issue 37: a 100 MB element of a .json
// data file was read whole, 6 GB) with no more of it read.
func TestElements(t *testing.T) {
	tests := []struct {
		in   string
		want []string // raw elements, or "key=value" members
		err  string
	}{
		{`[]`, nil, ""},
		{` [ 1 , "a]b" ,{"x":[1,{"y":"}"}]}, null,true, -2.5e3 ] `, []string{`1`, `"a]b"`, `{"x":[1,{"y":"}"}]}`, `null`, `true`, `-2.5e3`}, ""},
		{`["a\"]", "b\\"]`, []string{`"a\"]"`, `"b\\"`}, ""},
		{`{}`, nil, ""},
		{`{"a": 1, "b\"": [2]}`, []string{`a=1`, `b"=[2]`}, ""},
		{`[1, 2`, []string{"1", "2"}, "ends before its closing ]"},
		{`[1 2]`, []string{"1"}, "where a comma or ] belongs"},
		{`[1] x`, []string{"1"}, "more after the closing ]"},
		{`{"a" 1}`, nil, "no colon after its key"},
		{`1`, nil, "not a JSON array"},
		{`["` + strings.Repeat("x", MaxLine) + `"]`, nil, "element 1: longer than 16 MiB"},
	}
	for _, tc := range tests {
		var got []string
		var err error
		if strings.HasPrefix(strings.TrimSpace(tc.in), "{") {
			err = Members(strings.NewReader(tc.in), "f.json", func(k string, v []byte, _ int) error {
				got = append(got, k+"="+string(v))
				return nil
			})
		} else {
			err = Elements(strings.NewReader(tc.in), "f.json", func(e []byte, _ int) error {
				got = append(got, string(e))
				return nil
			})
		}
		if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%.40q: error %v, want %q", tc.in, err, tc.err)
		}
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%.40q: got %q, want %q", tc.in, got, tc.want)
		}
	}
	err := Elements(strings.NewReader(`[1, "`+strings.Repeat("x", MaxLine)+`"]`), "f.json", func([]byte, int) error { return nil })
	var rt *RowTooLongError
	if !errors.As(err, &rt) || rt.Index != 2 || !errors.Is(err, ErrLineTooLong) {
		t.Errorf("an element past the bound: %v", err)
	}
}
