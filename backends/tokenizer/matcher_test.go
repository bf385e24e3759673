package tokenizer

import (
	"slices"
	"testing"

	"github.com/dlclark/regexp2"
)

// regexp2Find runs the pattern through regexp2 (ECMAScript-free .NET
// syntax, with look-ahead) as an independent reference.
func regexp2Find(t testing.TB, pattern, s string) [][2]int {
	t.Helper()
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		t.Fatalf("compile %q: %v", pattern, err)
	}
	return regexMatches(re, s)
}

var matcherPatterns = []string{patternGPT2, patternQwen2, patternLlama3}

func TestGPTMatcherTable(t *testing.T) {
	tests := []struct {
		pattern string
		in      string
		want    []string
	}{
		{patternGPT2, "Hello world's  end\n\n", []string{"Hello", " world", "'s", " ", " end", "\n\n"}},
		{patternGPT2, "x  123 !!", []string{"x", " ", " 123", " !!"}},
		{patternQwen2, "I'M 12345 ok", []string{"I", "'M", " ", "1", "2", "3", "4", "5", " ok"}},
		{patternLlama3, "12345  \n\nfoo", []string{"123", "45", "  \n\n", "foo"}},
		{patternLlama3, "\"quoted\" a\u00a0b", []string{"\"quoted", "\"", " a", "\u00a0b"}},
		{patternLlama3, "end.\r\n  x", []string{"end", ".\r\n", " ", " x"}},
		{patternLlama3, "'ſ'S 'LL", []string{"'ſ", "'S", " '", "LL"}},
		{patternQwen2, "\t\t", []string{"\t\t"}},
		{patternQwen2, "", nil},
	}
	for _, tc := range tests {
		m, ok := knownMatcher(tc.pattern)
		if !ok {
			t.Fatalf("pattern not known")
		}
		var got []string
		for _, r := range m.findAll(tc.in, nil) {
			got = append(got, tc.in[r[0]:r[1]])
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestGPTMatcherVsRegexp2 checks the hand-written matcher against regexp2
// on the parity corpus. regexp2 has no case folding of U+017F, so strings
// containing it are skipped.
func TestGPTMatcherVsRegexp2(t *testing.T) {
	_, lines := loadFixture(t, "qwen3")
	bad := 0
	for _, p := range matcherPatterns {
		m, _ := knownMatcher(p)
		re := regexp2.MustCompile(p, regexp2.None)
		for i, l := range lines {
			if i%4 != 0 {
				continue // a quarter of the corpus keeps the test fast
			}
			got := m.findAll(l.Text, nil)
			want := regexMatches(re, l.Text)
			if !slices.Equal(got, want) {
				bad++
				if bad < 5 {
					t.Errorf("line %d %q: matcher and regexp2 differ", l.I, trunc(l.Text))
				}
			}
		}
	}
}

func FuzzGPTMatcher(f *testing.F) {
	for _, s := range []string{"Hello world's  end\n\n", "12345  \n\nfoo", "a\u00a0\u3000b\u2028", "'S'll'VE", " !!\r\n", "\x00\x85"} {
		f.Add(s)
	}
	res := make([]*regexp2.Regexp, len(matcherPatterns))
	for i, p := range matcherPatterns {
		res[i] = regexp2.MustCompile(p, regexp2.None)
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = validString(s)
		for i, p := range matcherPatterns {
			m, _ := knownMatcher(p)
			got := m.findAll(s, nil)
			// The matches must tile the string.
			end := 0
			for _, r := range got {
				if r[0] != end || r[1] <= r[0] {
					t.Fatalf("%q: matches do not tile: %v", s, got)
				}
				end = r[1]
			}
			if end != len(s) && i > 0 {
				t.Fatalf("%q: matches end at %d of %d", s, end, len(s))
			}
			if containsRune(s, 0x17F) {
				continue
			}
			if want := regexMatches(res[i], s); !slices.Equal(got, want) {
				t.Fatalf("%q pattern %d: got %v, regexp2 %v", s, i, got, want)
			}
		}
	})
}

func containsRune(s string, r rune) bool {
	for _, c := range s {
		if c == r {
			return true
		}
	}
	return false
}

// regexMatches returns the byte ranges of the non-empty matches of re in
// s, as a tokenizer.json regex is searched.
func regexMatches(re *regexp2.Regexp, s string) [][2]int {
	m, _ := (&boundedRegexp{re: re}).matches(s)
	return m
}
