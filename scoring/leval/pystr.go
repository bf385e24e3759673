package leval

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file reproduces the few Python 3 str operations the L-Eval scripts
// rely on, with Python's Unicode rules (checked against CPython 3.11,
// Unicode 14; Go's tables are Unicode 15, so characters added in 15 may
// differ).

// isPySpace reports whether Python's str.isspace (and re's \s) holds for r:
// Go's unicode.IsSpace plus the separators U+001C..U+001F.
func isPySpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || r >= '\t' && r <= '\r' || r >= 0x1c && r <= 0x1f
	}
	return unicode.IsSpace(r)
}

// pySplit is Python's str.split() with no arguments.
func pySplit(s string) []string {
	var out []string
	start := -1
	for i := 0; i < len(s); {
		c := s[i]
		r, size := rune(c), 1
		if c >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		if isPySpace(r) {
			if start >= 0 {
				out = append(out, s[start:i])
				start = -1
			}
		} else if start < 0 {
			start = i
		}
		i += size
	}
	if start >= 0 {
		out = append(out, s[start:])
	}
	return out
}

// pyStrip is Python's str.strip() with no arguments.
func pyStrip(s string) string { return strings.TrimFunc(s, isPySpace) }

// pyReSplitSpace is re.split(r"\s+", s): the pieces between runs of
// whitespace, with empty pieces at either end when s starts or ends with
// whitespace.
func pyReSplitSpace(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !isPySpace(r) {
			i += size
			continue
		}
		out = append(out, s[start:i])
		j := i + size
		for j < len(s) {
			r2, size2 := utf8.DecodeRuneInString(s[j:])
			if !isPySpace(r2) {
				break
			}
			j += size2
		}
		i, start = j, j
	}
	return append(out, s[start:])
}

// pyReSubSpace is re.sub(r"\s+", repl, s).
func pyReSubSpace(s, repl string) string {
	var b strings.Builder
	b.Grow(len(s))
	runStart := 0 // start of the pending run of non-space text
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf && c > ' ' {
			i++
			continue
		}
		r, size := rune(c), 1
		if c >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		if !isPySpace(r) {
			i += size
			continue
		}
		b.WriteString(s[runStart:i])
		b.WriteString(repl)
		i += size
		for i < len(s) {
			r, size = rune(s[i]), 1
			if s[i] >= utf8.RuneSelf {
				r, size = utf8.DecodeRuneInString(s[i:])
			}
			if !isPySpace(r) {
				break
			}
			i += size
		}
		runStart = i
	}
	if runStart == 0 {
		return s
	}
	b.WriteString(s[runStart:])
	return b.String()
}

// pyReSplitSpaceLast returns the last n pieces of pyReSplitSpace(s)
// (all of them when there are fewer), scanning from the end.
func pyReSplitSpaceLast(s string, n int) []string {
	var rev []string
	end := len(s)
	i := len(s)
	for i > 0 && len(rev) < n-1 {
		r, size := utf8.DecodeLastRuneInString(s[:i])
		if !isPySpace(r) {
			i -= size
			continue
		}
		// i is just after a space: extend over the whole run.
		j := i - size
		for j > 0 {
			r2, size2 := utf8.DecodeLastRuneInString(s[:j])
			if !isPySpace(r2) {
				break
			}
			j -= size2
		}
		rev = append(rev, s[i:end])
		end, i = j, j
	}
	// The remaining prefix is either one piece or, when n-1 pieces were
	// taken, the start of the last wanted piece.
	if len(rev) < n {
		k := strings.LastIndexFunc(s[:end], isPySpace)
		if len(rev) == n-1 && k >= 0 {
			_, size := utf8.DecodeRuneInString(s[k:])
			rev = append(rev, s[k+size:end])
		} else {
			rev = append(rev, s[:end])
		}
	}
	out := make([]string, len(rev))
	for k := range rev {
		out[k] = rev[len(rev)-1-k]
	}
	return out
}

// pyLower is Python's str.lower(): Go's simple lowercase mapping except
// that U+0130 becomes "i̇" (two code points) and a capital sigma in
// final position becomes "ς" (CPython's Final_Sigma rule).
func pyLower(s string) string {
	ascii, upper := true, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
		if c >= 'A' && c <= 'Z' {
			upper = true
		}
	}
	if ascii {
		if !upper {
			return s
		}
		b := []byte(s)
		for i, c := range b {
			if c >= 'A' && c <= 'Z' {
				b[i] = c + 'a' - 'A'
			}
		}
		return string(b)
	}
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range s {
		switch {
		case r < utf8.RuneSelf:
			if r >= 'A' && r <= 'Z' {
				r += 'a' - 'A'
			}
			b.WriteByte(byte(r))
		case r == 0x130:
			b.WriteString("i\u0307")
		case r == 0x3a3:
			if finalSigma(s, i) {
				b.WriteRune(0x3c2)
			} else {
				b.WriteRune(0x3c3)
			}
		default:
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// finalSigma reports whether the capital sigma at byte offset i of s is in
// the Final_Sigma context: preceded by a cased letter (skipping
// case-ignorable characters) and not followed by one.
func finalSigma(s string, i int) bool {
	j := i
	found := false
	for j > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:j])
		j -= size
		if caseIgnorable(r) {
			continue
		}
		found = cased(r)
		break
	}
	if !found {
		return false
	}
	j = i + utf8.RuneLen(0x3a3)
	for j < len(s) {
		r, size := utf8.DecodeRuneInString(s[j:])
		j += size
		if caseIgnorable(r) {
			continue
		}
		return !cased(r)
	}
	return true
}

// cased is Unicode's Cased property.
func cased(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) ||
		unicode.Is(unicode.Other_Lowercase, r) || unicode.Is(unicode.Other_Uppercase, r)
}

// caseIgnorable is Unicode's Case_Ignorable property: categories Mn, Me,
// Cf, Lm, Sk and the Word_Break classes MidLetter, MidNumLet and
// Single_Quote.
func caseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', 0xB7, 0x387, 0x55F, 0x5F4, 0x2018, 0x2019, 0x2024, 0x2027,
		0xFE13, 0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// digitNotDecimal lists the characters for which Python's str.isdigit
// holds but which are not decimal digits (Nd): superscripts, circled and
// parenthesised digits and the like (Numeric_Type=Digit), from CPython
// 3.11.
var digitNotDecimal = &unicode.RangeTable{
	R16: []unicode.Range16{
		{Lo: 0x00b2, Hi: 0x00b3, Stride: 1}, {Lo: 0x00b9, Hi: 0x00b9, Stride: 1},
		{Lo: 0x1369, Hi: 0x1371, Stride: 1}, {Lo: 0x19da, Hi: 0x19da, Stride: 1},
		{Lo: 0x2070, Hi: 0x2070, Stride: 1}, {Lo: 0x2074, Hi: 0x2079, Stride: 1},
		{Lo: 0x2080, Hi: 0x2089, Stride: 1}, {Lo: 0x2460, Hi: 0x2468, Stride: 1},
		{Lo: 0x2474, Hi: 0x247c, Stride: 1}, {Lo: 0x2488, Hi: 0x2490, Stride: 1},
		{Lo: 0x24ea, Hi: 0x24ea, Stride: 1}, {Lo: 0x24f5, Hi: 0x24fd, Stride: 1},
		{Lo: 0x24ff, Hi: 0x24ff, Stride: 1}, {Lo: 0x2776, Hi: 0x277e, Stride: 1},
		{Lo: 0x2780, Hi: 0x2788, Stride: 1}, {Lo: 0x278a, Hi: 0x2792, Stride: 1},
	},
	R32: []unicode.Range32{
		{Lo: 0x10a40, Hi: 0x10a43, Stride: 1}, {Lo: 0x10e60, Hi: 0x10e68, Stride: 1},
		{Lo: 0x11052, Hi: 0x1105a, Stride: 1}, {Lo: 0x1f100, Hi: 0x1f10a, Stride: 1},
	},
	LatinOffset: 3,
}

// pyIsDigit is Python's str.isdigit for one character.
func pyIsDigit(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= '0' && r <= '9'
	}
	return unicode.IsDigit(r) || unicode.Is(digitNotDecimal, r)
}

// isWordChar is a word character for Python's re module on str patterns
// (\w, \b): alphanumeric (Unicode letters and numbers) or underscore.
func isWordChar(r rune) bool {
	if r < utf8.RuneSelf {
		return r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsNumber(r)
}

// decimalValue returns the digit value of a decimal digit (category Nd).
// Every Nd range in the Unicode tables is made of runs of ten starting at
// zero, so the offset in the range modulo ten is the value.
func decimalValue(r rune) (int, bool) {
	for _, rg := range unicode.Nd.R16 {
		if rune(rg.Lo) <= r && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10, true
		}
	}
	for _, rg := range unicode.Nd.R32 {
		if rune(rg.Lo) <= r && r <= rune(rg.Hi) {
			return int(r-rune(rg.Lo)) % 10, true
		}
	}
	return 0, false
}

// pyFloat is Python's float(s) for a str: ok is false where Python raises
// ValueError. It accepts surrounding whitespace, Unicode decimal digits,
// underscores between digits, an optional sign, decimal and exponent
// forms, and inf, infinity and nan in any case; not hexadecimal.
func pyFloat(s string) (float64, bool) {
	// Fast rejection: after leading whitespace a float starts with a sign,
	// a digit, ".", or the i/n of inf/nan (or a non-ASCII digit).
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c >= '\t' && c <= '\r' || c >= 0x1c && c <= 0x1f {
			continue
		}
		if !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.' || c == 'i' || c == 'I' ||
			c == 'n' || c == 'N' || c >= utf8.RuneSelf) {
			return 0, false
		}
		break
	}
	// _PyUnicode_TransformDecimalAndSpaceToASCII.
	b := make([]byte, 0, len(s))
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			if isPySpace(r) {
				r = ' '
			}
			b = append(b, byte(r))
		case isPySpace(r):
			b = append(b, ' ')
		default:
			v, ok := decimalValue(r)
			if !ok {
				return 0, false
			}
			b = append(b, byte('0'+v))
		}
	}
	// _Py_string_to_number_with_underscores.
	if strings.IndexByte(string(b), '_') >= 0 {
		out := b[:0:0]
		var prev byte
		for _, c := range b {
			if c == '_' {
				if !(prev >= '0' && prev <= '9') {
					return 0, false
				}
			} else {
				if prev == '_' && !(c >= '0' && c <= '9') {
					return 0, false
				}
				out = append(out, c)
			}
			prev = c
		}
		if prev == '_' {
			return 0, false
		}
		b = out
	}
	t := strings.Trim(string(b), " \t\n\v\f\r")
	if t == "" {
		return 0, false
	}
	body := t
	if body[0] == '+' || body[0] == '-' {
		body = body[1:]
	}
	switch strings.ToLower(body) {
	case "inf", "infinity", "nan":
		v, err := strconv.ParseFloat(t, 64)
		return v, err == nil
	}
	if !decimalLiteral(body) {
		return 0, false
	}
	// The syntax is valid; out-of-range values are ±Inf or 0 in both
	// languages (ParseFloat's ErrRange is not an error for Python).
	v, _ := strconv.ParseFloat(t, 64)
	return v, true
}

// decimalLiteral reports whether s is digits [. digits] or . digits,
// optionally followed by an exponent, in ASCII.
func decimalLiteral(s string) bool {
	i := 0
	digits := func() int {
		n := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			n++
		}
		return n
	}
	n := digits()
	if i < len(s) && s[i] == '.' {
		i++
		n += digits()
	}
	if n == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}

// pyRound is Python's round(x, ndigits) for a float: the correctly rounded
// decimal with ndigits places (ties to even on the exact binary value),
// read back as a float.
func pyRound(x float64, ndigits int) float64 {
	v, err := strconv.ParseFloat(strconv.FormatFloat(x, 'f', ndigits, 64), 64)
	if err != nil {
		return x // NaN and infinities round to themselves.
	}
	return v
}
