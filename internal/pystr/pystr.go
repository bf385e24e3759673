// Package pystr holds Python's str methods that lm-evaluation-harness's
// filters and metrics apply to model outputs, where Go's strings package
// differs: str.strip() (Python's white space includes U+001C..U+001F),
// str.lower() (full case mapping: U+0130 becomes two characters, and a
// capital sigma at the end of a word becomes a final sigma) and
// str.upper() (full case mapping: ß becomes SS).
package pystr

import (
	"strings"
	"unicode"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
)

// IsSpace is str.isspace for one character (Py_UNICODE_ISSPACE:
// bidirectional class WS, B or S, or category Zs): what \s matches and
// str.strip() removes. It differs from unicode.IsSpace in U+001C..U+001F.
func IsSpace(c rune) bool {
	if c < 128 {
		return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f)
	}
	return c == 0x85 || unicode.Is(unicode.Zs, c) || c == 0x2028 || c == 0x2029
}

// Strip is str.strip() with no argument.
func Strip(s string) string { return strings.TrimFunc(s, IsSpace) }

// Lower is str.lower().
func Lower(s string) string { return cases.Lower(language.Und).String(s) }

// Upper is str.upper().
func Upper(s string) string { return cases.Upper(language.Und).String(s) }

// IsPunct reports whether unicodedata.category(c) starts with "P" (Pc,
// Pd, Ps, Pe, Pi, Pf, Po) for a code point below sys.maxunicode, as
// lm-eval's MultiChoiceRegexFilter builds its punctuation table
// (range(sys.maxunicode) leaves U+10FFFF out, which is no punctuation
// anyway). Go's tables are of a later Unicode than Python 3.11's 14.0;
// they agree on every code point 14.0 assigns (TestAgainstPython).
func IsPunct(c rune) bool { return c < 0x10FFFF && unicode.IsPunct(c) }
