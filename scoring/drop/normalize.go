package drop

import (
	"strings"
	"unicode/utf8"
)

// asciiPunct marks Python's string.punctuation: !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~.
var asciiPunct = func() (t [128]bool) {
	for _, c := range "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~" {
		t[c] = true
	}
	return t
}()

// Normalize is the reference _normalize: the text is split on every ' '
// and '-' (and nothing else), and each piece is lowercased (str.lower),
// stripped of ASCII punctuation unless it parses as a Python float,
// rewritten as repr(float(piece)) if it (then) parses as one, stripped of
// the words "a", "an", "the" (re \b(a|an|the)\b with Unicode word
// boundaries) and whitespace-collapsed; non-blank pieces are joined with
// single spaces.
func Normalize(text string) string { return normalize(text, false) }

// NormalizeFixed is Normalize with the drop-fixed tokenisation: the text is
// split on any Python whitespace (str.isspace, the set str.split uses) and
// on '-', so a number followed by a newline or tab is still normalised as a
// number.
func NormalizeFixed(text string) string { return normalize(text, true) }

// Bag is the token set _answer_to_bags makes of one span: the distinct
// whitespace-separated words of Normalize(text), in order of first
// occurrence.
func Bag(text string) []string { return bagOf(Normalize(text)) }

// BagFixed is Bag under the drop-fixed normalisation (NormalizeFixed).
func BagFixed(text string) []string { return bagOf(NormalizeFixed(text)) }

// bagOf splits a normalised span on whitespace and deduplicates, keeping
// the first occurrence.
func bagOf(normalized string) []string { return appendBag(nil, normalized) }

// appendBag appends the distinct words of a normalised span (words are
// separated by single spaces there) to dst in order of first occurrence.
func appendBag(dst []string, normalized string) []string {
	start := len(dst)
	var seen map[string]struct{}
	for normalized != "" {
		w := normalized
		if k := strings.IndexByte(normalized, ' '); k >= 0 {
			w, normalized = normalized[:k], normalized[k+1:]
		} else {
			normalized = ""
		}
		if w == "" {
			continue
		}
		if seen != nil {
			if _, dup := seen[w]; dup {
				continue
			}
			seen[w] = struct{}{}
			dst = append(dst, w)
			continue
		}
		dup := false
		for _, o := range dst[start:] {
			if o == w {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		dst = append(dst, w)
		if len(dst)-start > 32 {
			seen = make(map[string]struct{}, 64)
			for _, o := range dst[start:] {
				seen[o] = struct{}{}
			}
		}
	}
	return dst
}

// normalize implements Normalize (fixed=false) and NormalizeFixed.
func normalize(text string, fixed bool) string {
	var buf [128]byte
	return string(appendNormalized(buf[:0], text, fixed))
}

// appendNormalized appends the normalisation of text to dst.
func appendNormalized(dst []byte, text string, fixed bool) []byte {
	base := len(dst)
	start := 0
	for i := 0; i < len(text); {
		c := text[i]
		size := 1
		split := c == ' ' || c == '-'
		if fixed && !split {
			if c < utf8.RuneSelf {
				split = isPySpace(rune(c))
			} else {
				var r rune
				r, size = utf8.DecodeRuneInString(text[i:])
				split = isPySpace(r)
			}
		}
		if split {
			dst = appendToken(dst, base, text[start:i])
			start = i + size
		}
		i += size
	}
	return appendToken(dst, base, text[start:])
}

// appendToken appends the normalisation of one token (the body of the
// reference's list comprehension) to dst, preceded by a space when the
// span begun at dst[base] is not empty; blank results append nothing.
func appendToken(dst []byte, base int, tok string) []byte {
	if tok == "" {
		return dst
	}
	mark := len(dst)
	if mark > base {
		dst = append(dst, ' ')
	}
	begin := len(dst)
	// Fast path: printable ASCII without spaces. Lowercasing is ASCII, the
	// token holds no whitespace, and once punctuation is gone only letters
	// and digits remain, so \b can hold only at the token's ends: the token
	// is a number, an article or itself.
	punct := false
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case c >= 'A' && c <= 'Z':
			dst = append(dst, c+32)
		case c > ' ' && c < 0x7F:
			punct = punct || asciiPunct[c]
			dst = append(dst, c)
		default:
			return appendSlow(dst, mark, base, tok)
		}
	}
	low := dst[begin:]
	if punct {
		if mayBeNumber(low) {
			if f, ok := pyFloat(string(low)); ok {
				return appendRepr(dst[:begin], f)
			}
		}
		// _remove_punc, in place.
		k := begin
		for _, c := range low {
			if !asciiPunct[c] {
				dst[k] = c
				k++
			}
		}
		dst = dst[:k]
		low = dst[begin:]
		if len(low) == 0 {
			return dst[:mark]
		}
	}
	if mayBeNumber(low) {
		if f, ok := pyFloat(string(low)); ok {
			return appendRepr(dst[:begin], f)
		}
	}
	switch string(low) {
	case "a", "an", "the":
		return dst[:mark]
	}
	return dst
}

// mayBeNumber is a quick filter before pyFloat: every string Python's
// float() accepts begins with one of these bytes (after no whitespace).
func mayBeNumber[S ~string | ~[]byte](w S) bool {
	if len(w) == 0 {
		return false
	}
	switch c := w[0]; {
	case c >= '0' && c <= '9', c >= utf8.RuneSelf:
		return true
	case c == '.', c == '+', c == '-', c == 'i', c == 'n', c == 'I', c == 'N':
		return true
	}
	return false
}

// appendSlow appends the normalisation of tok to dst[:mark] (preceded by
// a space when the span begun at dst[base] is not empty), following the
// reference step by step: lower, _remove_punc, _fix_number,
// _remove_articles, _white_space_fix. Each step after lowercasing only
// shortens the token, so they work in place.
func appendSlow(dst []byte, mark, base int, tok string) []byte {
	dst = dst[:mark]
	if mark > base {
		dst = append(dst, ' ')
	}
	begin := len(dst)
	dst = appendLower(dst, tok)
	low := dst[begin:]
	f, isNum := pyFloat(string(low)) // _remove_punc's test
	if !isNum {
		low = removePunc(low)
		dst = dst[:begin+len(low)]
		f, isNum = pyFloat(string(low)) // _fix_number's test
	}
	if isNum {
		dst = appendRepr(dst[:begin], f)
		low = dst[begin:]
	}
	low = whiteSpaceFix(removeArticles(low))
	if len(low) == 0 {
		return dst[:mark]
	}
	return dst[:begin+len(low)]
}

// removePunc is the removal step of _remove_punc: ASCII punctuation is
// dropped, in place (the caller has checked the token is not a number).
func removePunc(b []byte) []byte {
	w := 0
	for _, c := range b {
		if c >= 0x80 || !asciiPunct[c] {
			b[w] = c
			w++
		}
	}
	return b[:w]
}

// removeArticles is _remove_articles, in place: re.sub(r"\b(a|an|the)\b",
// " ", s) with Python's Unicode word characters (str.isalnum or '_').
func removeArticles(b []byte) []byte {
	w := 0
	prevWord := false
	for i := 0; i < len(b); {
		c := b[i]
		if (c == 'a' || c == 't') && !prevWord {
			n := 0
			switch {
			case c == 'a' && wordEnds(b, i+1):
				n = 1
			case c == 'a' && i+1 < len(b) && b[i+1] == 'n' && wordEnds(b, i+2):
				n = 2
			case c == 't' && i+2 < len(b) && b[i+1] == 'h' && b[i+2] == 'e' && wordEnds(b, i+3):
				n = 3
			}
			if n > 0 {
				b[w] = ' '
				w++
				i += n
				prevWord = true
				continue
			}
		}
		r, size := rune(c), 1
		if c >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b[i:])
		}
		prevWord = isPyWord(r)
		copy(b[w:], b[i:i+size])
		w += size
		i += size
	}
	return b[:w]
}

// wordEnds reports whether a \b holds at byte offset i of b after a word
// character: i is the end or the next code point is not a word character.
func wordEnds(b []byte, i int) bool {
	if i >= len(b) {
		return true
	}
	r, _ := utf8.DecodeRune(b[i:])
	return !isPyWord(r)
}

// whiteSpaceFix is _white_space_fix, in place: " ".join(s.split()), where
// split() splits on runs of Python whitespace (str.isspace).
func whiteSpaceFix(b []byte) []byte {
	w := 0
	pending := false
	for i := 0; i < len(b); {
		r, size := rune(b[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b[i:])
		}
		if isPySpace(r) {
			pending = w > 0
		} else {
			if pending {
				b[w] = ' '
				w++
				pending = false
			}
			copy(b[w:], b[i:i+size])
			w += size
		}
		i += size
	}
	return b[:w]
}

// pyStrip is Python's str.strip() with no arguments.
func pyStrip(s string) string {
	return strings.TrimFunc(s, isPySpace)
}
