package textmatch

import "testing"

func TestTokenF1(t *testing.T) {
	tests := []struct {
		pred string
		refs []string
		want float64
	}{
		{"The cat sat.", []string{"cat sat"}, 1},
		{"a dog", []string{"the cat"}, 0},
		{"cat dog", []string{"cat"}, 2.0 / 3},
		{"", []string{""}, 0},
	}
	for _, tc := range tests {
		if got := TokenF1(tc.pred, tc.refs); got != tc.want {
			t.Errorf("TokenF1(%q, %q) = %v, want %v", tc.pred, tc.refs, got, tc.want)
		}
	}
}

func TestExactMatch(t *testing.T) {
	tests := []struct {
		pred string
		refs []string
		want float64
	}{
		{" 4 ", []string{"4"}, 1},
		{"4.", []string{"4"}, 0},
		{"Paris", []string{"paris", "Paris\n"}, 1},
		{"x", nil, 0},
	}
	for _, tc := range tests {
		if got := ExactMatch(tc.pred, tc.refs); got != tc.want {
			t.Errorf("ExactMatch(%q, %q) = %v, want %v", tc.pred, tc.refs, got, tc.want)
		}
	}
}

func FuzzTokenF1(f *testing.F) {
	for _, s := range []string{"The cat", "a an the", "", "x, y!"} {
		f.Add(s, "the cat sat")
	}
	f.Fuzz(func(t *testing.T, pred, ref string) {
		v := TokenF1(pred, []string{ref})
		if v < 0 || v > 1 || v != v {
			t.Fatalf("TokenF1(%q, %q) = %v", pred, ref, v)
		}
		if ExactMatch(pred, []string{pred}) != 1 {
			t.Fatalf("ExactMatch(%q, itself) != 1", pred)
		}
	})
}
