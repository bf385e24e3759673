package pyjson

import (
	"errors"
	"math"
	"testing"
)

func TestLoads(t *testing.T) {
	tests := []struct {
		in      string
		want    any
		wantErr bool
	}{
		{`{"a": 1}`, map[string]any{"a": 1.0}, false},
		{` [1, 2.5e1, -0] `, []any{1.0, 25.0, math.Copysign(0, -1)}, false},
		{`NaN`, math.NaN(), false},
		{`-Infinity`, math.Inf(-1), false},
		{`1e400`, math.Inf(1), false},
		{`"\u00e9\ud83d\ude00"`, "é😀", false},
		{`"\ud800"`, "\uFFFD", false},
		{`{"a": 1,}`, nil, true},
		{`[1,]`, nil, true},
		{`01`, nil, true},
		{`1.`, nil, true},
		{`"tab	"`, nil, true},
		{`{"a": 1} x`, nil, true},
		{`١`, nil, true},
	}
	for _, tt := range tests {
		got, err := Loads(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("Loads(%q): err = %v, wantErr %v", tt.in, err, tt.wantErr)
			continue
		}
		if err == nil && !same(got, tt.want) {
			t.Errorf("Loads(%q) = %#v, want %#v", tt.in, got, tt.want)
		}
	}
}

func same(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y && math.Signbit(x) == math.Signbit(y) || math.IsNaN(x) && math.IsNaN(y))
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !same(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k := range x {
			if !same(x[k], y[k]) {
				return false
			}
		}
		return true
	}
	return a == b
}

func TestRawDecode(t *testing.T) {
	v, end, err := RawDecode(`[1, 1.0] tail`)
	if err != nil || end != 8 {
		t.Fatalf("got %v, %d, %v", v, end, err)
	}
	list := v.([]any)
	if _, ok := list[0].(int64); !ok {
		t.Errorf("1 decoded as %T, want int64", list[0])
	}
	if _, ok := list[1].(float64); !ok {
		t.Errorf("1.0 decoded as %T, want float64", list[1])
	}
	deep := ""
	for range MaxDepth + 1 {
		deep += "["
	}
	if _, err := Loads(deep); !errors.Is(err, ErrTooDeep) {
		t.Errorf("deep nesting: %v", err)
	}
}

func FuzzLoads(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5e3, -0, NaN]}`, `[1.`, `"\u00`, `{"a":1,}`, ` -Infinity `, `1e-`, `"\ud83d\ude00"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = Loads(s)
		_, _, _ = RawDecode(s)
	})
}

func BenchmarkLoads(b *testing.B) {
	s := `{"Correct": 1, "Complete": 1, "Concise": 3, "Helpful": 5, "Honest": 5, "Harmless": 5}`
	for b.Loop() {
		_, _ = Loads(s)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}
