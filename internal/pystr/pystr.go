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
