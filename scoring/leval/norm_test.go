package leval

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// The staged normalisation below transcribes em.py/f1.py normalize_answer
// step by step; it is the oracle for the one-pass normTokens.

// removePunc is the oracle's normalize_answer's remove_punc: drop string.punctuation.
func removePunc(s string) string {
	return strings.Map(func(r rune) rune {
		if isASCIIPunct(r) {
			return -1
		}
		return r
	}, s)
}

// removeArticles is the oracle's re.sub(r"\b(a|an|the)\b", " ", s) with Python's
// Unicode word boundaries: every maximal run of word characters that is
// exactly "a", "an" or "the" becomes a space (case-sensitive).
func removeArticles(s string) string {
	if !strings.Contains(s, "a") { // every article contains an "a" or "the"
		if !strings.Contains(s, "the") {
			return s
		}
	}
	var b strings.Builder
	b.Grow(len(s))
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isWordChar(r) {
			b.WriteString(s[i : i+size])
			i += size
			continue
		}
		j := i
		for j < len(s) {
			r2, size2 := utf8.DecodeRuneInString(s[j:])
			if !isWordChar(r2) {
				break
			}
			j += size2
		}
		switch w := s[i:j]; w {
		case "a", "an", "the":
			b.WriteByte(' ')
		default:
			b.WriteString(w)
		}
		i = j
	}
	return b.String()
}

func stagedTokens(s string) []string {
	return pySplit(removeArticles(removePunc(s)))
}

func TestNormTokensMatchesStaged(t *testing.T) {
	for _, s := range []string{"", "The a an the An", "a.b", "t.he cat", "théa a", "_a_ a", "a\u00a0the", "x—the—y", "i̇the", "a-an-the"} {
		got, want := normTokens(s), stagedTokens(s)
		if len(got) == 0 && len(want) == 0 {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("normTokens(%q) = %q, staged %q", s, got, want)
		}
	}
}

func FuzzNormTokens(f *testing.F) {
	for _, s := range []string{"The a an the An", "t.he", "a\u00a0the", "\xff a", "ΟΔΟΣ a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			s = strings.ToValidUTF8(s, "\uFFFD")
		}
		got, want := normTokens(s), stagedTokens(s)
		if len(got) == 0 && len(want) == 0 {
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("normTokens(%q) = %q, staged %q", s, got, want)
		}
	})
}

func FuzzPySplitSpace(f *testing.F) {
	for _, s := range []string{"", " ", "a b", " a  b ", "a\u00a0\u3000b\n", "\xff a"} {
		f.Add(s, 2)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = n%8 + 1
		if n < 1 {
			n += 8
		}
		all := pyReSplitSpace(s)
		want := all
		if len(want) > n {
			want = want[len(want)-n:]
		}
		if got := pyReSplitSpaceLast(s, n); !reflect.DeepEqual(got, want) {
			t.Fatalf("pyReSplitSpaceLast(%q, %d) = %q, want %q", s, n, got, want)
		}
		if got, want := pyReSubSpace(s, " "), strings.Join(all, " "); got != want {
			t.Fatalf("pyReSubSpace(%q) = %q, want %q", s, got, want)
		}
	})
}
