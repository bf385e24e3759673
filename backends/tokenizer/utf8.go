package tokenizer

import (
	"unicode/utf8"
)

// utf8SeqLen inspects the UTF-8 sequence at the start of b. It returns the
// number of bytes that form the longest valid prefix of a sequence (the
// "maximal subpart" of the Unicode standard, which is what Rust's
// String::from_utf8_lossy replaces with one U+FFFD) and whether that prefix
// is a complete, valid character. b must not be empty.
func utf8SeqLen(b []byte) (n int, complete bool) {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c < 0x80:
		return 1, true
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1, false
	}
	n = 1
	for k := 0; k < need; k++ {
		if n >= len(b) {
			return n, false
		}
		x := b[n]
		if x < lo || x > hi {
			return n, false
		}
		lo, hi = 0x80, 0xBF
		n++
	}
	return n, true
}

// lossyUTF8 converts b to a string exactly like Rust's
// String::from_utf8_lossy: every maximal invalid subpart becomes one U+FFFD.
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		n, ok := utf8SeqLen(b[i:])
		if ok {
			out = append(out, b[i:i+n]...)
		} else {
			out = append(out, "\uFFFD"...)
		}
		i += n
	}
	return string(out)
}

// validString returns s unchanged when it is valid UTF-8, else its lossy
// conversion.
func validString(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return lossyUTF8([]byte(s))
}
