package pystr

import (
	"testing"

	"tally/internal/pyref"
)

// contextStrings exercise the final sigma rule and strip's white space.
var contextStrings = []string{
	"ΣΑΣ", "ΟΔΟΣ ΟΔΟΣ.", "Σ", "ΑΣ'Α", "ΑΣ'", "ΑΣ\u0301", "ΑΣ\u0301Β", "İstanbul", "ß", "ﬁnal", "ŉ",
	"  \t\n x \x1c\x1f", "\u00a0\u2028y\u3000", "\u200bz\u200b", "Ǆǅǆ", "ΐ", "The Answer Is 42.",
}

type ref struct {
	Python     string            `json:"python"`
	Unicode    string            `json:"unicode"`
	Lower      map[string]string `json:"lower"`
	Upper      map[string]string `json:"upper"`
	Unassigned []int             `json:"unassigned"`
	Punct      []int             `json:"punct"`
	Strings    [][3]string       `json:"strings"`
}

// TestAgainstPython compares Lower and Upper with Python on every code
// point assigned in Python's Unicode database, and Lower, Upper and Strip
// on strings that need context (final sigma, white space).
func TestAgainstPython(t *testing.T) {
	var r ref
	pyref.Run(t, "testdata/reference.py", map[string]any{"strings": contextStrings}, &r)
	unassigned := map[int]bool{}
	for _, c := range r.Unassigned {
		unassigned[c] = true
	}
	bad := 0
	for c := 0; c <= 0x10FFFF; c++ {
		if unassigned[c] || (c >= 0xD800 && c <= 0xDFFF) {
			continue
		}
		ch := string(rune(c))
		key := itoa(c)
		wantL, ok := r.Lower[key]
		if !ok {
			wantL = ch
		}
		wantU, ok := r.Upper[key]
		if !ok {
			wantU = ch
		}
		if got := Lower(ch); got != wantL {
			bad++
			if bad < 20 {
				t.Errorf("lower(U+%04X): Go %q, Python %q (Unicode %s)", c, got, wantL, r.Unicode)
			}
		}
		if got := Upper(ch); got != wantU {
			bad++
			if bad < 20 {
				t.Errorf("upper(U+%04X): Go %q, Python %q (Unicode %s)", c, got, wantU, r.Unicode)
			}
		}
	}
	punct := map[int]bool{}
	for _, c := range r.Punct {
		punct[c] = true
	}
	for c := 0; c <= 0x10FFFF; c++ {
		if unassigned[c] || (c >= 0xD800 && c <= 0xDFFF) {
			continue
		}
		if IsPunct(rune(c)) != punct[c] {
			bad++
			if bad < 20 {
				t.Errorf("IsPunct(U+%04X): Go %v, Python %v (Unicode %s)", c, IsPunct(rune(c)), punct[c], r.Unicode)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d code points differ", bad)
	}
	for i, s := range contextStrings {
		want := r.Strings[i]
		if got := Lower(s); got != want[0] {
			t.Errorf("lower(%q): Go %q, Python %q", s, got, want[0])
		}
		if got := Upper(s); got != want[1] {
			t.Errorf("upper(%q): Go %q, Python %q", s, got, want[1])
		}
		if got := Strip(s); got != want[2] {
			t.Errorf("strip(%q): Go %q, Python %q", s, got, want[2])
		}
	}
}

func itoa(c int) string {
	if c == 0 {
		return "0"
	}
	var b []byte
	for ; c > 0; c /= 10 {
		b = append([]byte{byte('0' + c%10)}, b...)
	}
	return string(b)
}

// TestKnown checks the cases where Python and Go's strings package differ,
// without Python.
func TestKnown(t *testing.T) {
	for _, c := range []struct {
		f        func(string) string
		in, want string
	}{
		{Lower, "İ", "i\u0307"}, {Lower, "ΟΔΟΣ ΟΔΟΣ.", "οδος οδος."}, {Lower, "Σ", "σ"},
		{Upper, "ß", "SS"}, {Upper, "ﬁ", "FI"},
		{Strip, "\x1c x \x1f", "x"}, {Strip, "\u3000y\u00a0", "y"}, {Strip, "\u200bz", "\u200bz"},
	} {
		if got := c.f(c.in); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}
