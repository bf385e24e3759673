package drop

import "unicode/utf8"

// runeRange is an inclusive range of code points.
type runeRange struct{ lo, hi rune }

// lowerRun maps lo..hi (every stride-th code point; stride 0 means lo == hi)
// to the code point plus delta.
type lowerRun struct {
	lo, hi rune
	stride int32
	delta  int32
}

// decimalRun is a run of decimal digits: lo has value val, lo+1 val+1, ...
type decimalRun struct {
	lo, hi rune
	val    int32
}

// inRanges reports whether r lies in one of the sorted ranges rs.
func inRanges(rs []runeRange, r rune) bool {
	lo, hi := 0, len(rs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch {
		case r < rs[m].lo:
			hi = m
		case r > rs[m].hi:
			lo = m + 1
		default:
			return true
		}
	}
	return false
}

// isPySpace reports whether Python's str.isspace is true for r.
func isPySpace(r rune) bool {
	if r < 0x80 {
		return r == ' ' || (r >= 0x09 && r <= 0x0D) || (r >= 0x1C && r <= 0x1F)
	}
	return inRanges(pySpace[:], r)
}

// isPyWord reports whether r is a word character for Python's re \b on a
// str pattern: str.isalnum() or '_'.
func isPyWord(r rune) bool {
	if r < 0x80 {
		return r == '_' || (r >= '0' && r <= '9') || (r|0x20 >= 'a' && r|0x20 <= 'z')
	}
	return inRanges(pyWord[:], r)
}

// pyDecimalValue is Py_UNICODE_TODECIMAL: the digit value of r, or -1.
func pyDecimalValue(r rune) int {
	lo, hi := 0, len(pyDecimal)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch {
		case r < pyDecimal[m].lo:
			hi = m
		case r > pyDecimal[m].hi:
			lo = m + 1
		default:
			return int(pyDecimal[m].val + (r - pyDecimal[m].lo))
		}
	}
	return -1
}

// lowerRune is Python's one-to-one lowercase mapping for r (U+03A3 and the
// one-to-many mappings are handled by pyLower).
func lowerRune(r rune) rune {
	lo, hi := 0, len(lowerRuns)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		run := &lowerRuns[m]
		switch {
		case r < run.lo:
			hi = m
		case r > run.hi:
			lo = m + 1
		default:
			if run.stride == 0 || (r-run.lo)%run.stride == 0 {
				return r + run.delta
			}
			return r
		}
	}
	return r
}

// pyLower is Python's str.lower: full Unicode lowercasing with the
// one-to-many mapping of U+0130 and the Final_Sigma rule for U+03A3, using
// the Unicode version of the Python the tables were generated from.
// Invalid UTF-8 bytes are read as U+FFFD, as encoding/json would, and kept.
func pyLower(s string) string {
	return string(appendLower(nil, s))
}

// appendLower appends pyLower(s) to dst.
func appendLower(dst []byte, s string) []byte {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			break
		}
		if c >= 'A' && c <= 'Z' {
			c += 32
		}
		dst = append(dst, c)
	}
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[i])
		case r == 0x3A3:
			if finalSigma(s, i) {
				dst = utf8.AppendRune(dst, 0x3C2)
			} else {
				dst = utf8.AppendRune(dst, 0x3C3)
			}
		default:
			if m, ok := lowerMultiOf(r); ok {
				dst = append(dst, m...)
			} else {
				dst = utf8.AppendRune(dst, lowerRune(r))
			}
		}
		i += size
	}
	return dst
}

// finalSigma is CPython's handle_capital_sigma for the sigma at byte offset
// i of s: cased, case-ignorable*, SIGMA, not (case-ignorable*, cased).
func finalSigma(s string, i int) bool {
	j := i
	var c rune = -1
	for j > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:j])
		j -= size
		if !isCaseIgnorable(r) {
			c = r
			break
		}
	}
	if c < 0 || !isCased(c) {
		return false
	}
	for _, r := range s[i+utf8.RuneLen(0x3A3):] {
		if !isCaseIgnorable(r) {
			return !isCased(r)
		}
	}
	return true
}

// isCased reports whether r counts as cased (and not case-ignorable) in
// Python's final-sigma rule.
func isCased(r rune) bool { return inRanges(pyCased[:], r) }

// isCaseIgnorable reports whether Python's final-sigma rule skips r.
func isCaseIgnorable(r rune) bool { return inRanges(pyCaseIgnorable[:], r) }

// lowerMultiOf returns Python's one-to-many lowercase mapping of r, if any.
func lowerMultiOf(r rune) (string, bool) {
	for _, m := range lowerMulti {
		if m.r == r {
			return m.s, true
		}
	}
	return "", false
}
