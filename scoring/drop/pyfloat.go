package drop

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// pyFloat parses s as CPython 3.11's float(str) does (PyFloat_FromString),
// reporting whether it would succeed:
//   - every code point below U+007F is kept, Unicode whitespace
//     (str.isspace) becomes ' ', a decimal digit of any script (str.isdecimal)
//     becomes its ASCII digit, and anything else makes the string invalid;
//   - underscores are allowed only between two ASCII digits (PEP 515),
//     checked on the whole transformed string, whitespace included;
//   - leading and trailing ASCII whitespace (" \t\n\v\f\r") is stripped;
//   - what is left must be [+-]? (digits [. digits?] | . digits)
//     ([eE] [+-]? digits)?, or [+-]? ("inf" | "infinity" | "nan") in any case;
//   - overflow gives ±inf and underflow ±0, never an error; NUL is invalid.
func pyFloat(s string) (float64, bool) { return pyNumber(s, true) }

// isPyNumber is _is_number: whether float(s) succeeds.
func isPyNumber(s string) bool {
	_, ok := pyNumber(s, false)
	return ok
}

// pyNumber implements pyFloat; without needValue it only checks syntax
// and returns 0 for decimal literals.
func pyNumber(s string, needValue bool) (float64, bool) {
	var buf [64]byte
	b := buf[:0]
	hasUnderscore := false
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == 0x7F || c == 0 {
				return 0, false
			}
			if c == '_' {
				hasUnderscore = true
			}
			b = append(b, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if isPySpace(r) {
			b = append(b, ' ')
		} else if d := pyDecimalValue(r); d >= 0 {
			b = append(b, byte('0'+d))
		} else {
			return 0, false
		}
	}
	if hasUnderscore {
		var ok bool
		if b, ok = removeUnderscores(b); !ok {
			return 0, false
		}
	}
	// Strip ASCII whitespace (Py_ISSPACE).
	start, end := 0, len(b)
	for start < end && isASCIISpace(b[start]) {
		start++
	}
	for end > start && isASCIISpace(b[end-1]) {
		end--
	}
	b = b[start:end]
	if len(b) == 0 {
		return 0, false
	}
	plain, ok := validDecimal(b)
	if !ok {
		return parseInfNaN(b)
	}
	if !needValue {
		return 0, true
	}
	if plain && len(b) <= 15 {
		// Digits only: an integer below 1e15, exact in a float64.
		var n int64
		for _, c := range b {
			n = n*10 + int64(c-'0')
		}
		return float64(n), true
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		// Only a range error can remain: ParseFloat then returns ±Inf (or
		// ±0), as CPython does without raising.
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, false
		}
	}
	return f, true
}

// isASCIISpace is CPython's Py_ISSPACE.
func isASCIISpace(c byte) bool {
	return c == ' ' || (c >= '\t' && c <= '\r')
}

// removeUnderscores applies _Py_string_to_number_with_underscores: each
// underscore must follow and precede an ASCII digit; they are then dropped.
func removeUnderscores(b []byte) ([]byte, bool) {
	out := make([]byte, 0, len(b))
	var prev byte
	for _, c := range b {
		if c == '_' {
			if prev < '0' || prev > '9' {
				return nil, false
			}
		} else {
			if prev == '_' && (c < '0' || c > '9') {
				return nil, false
			}
			out = append(out, c)
		}
		prev = c
	}
	if prev == '_' {
		return nil, false
	}
	return out, true
}

// parseInfNaN is CPython's _Py_parse_inf_or_nan on the whole of b.
func parseInfNaN(b []byte) (float64, bool) {
	neg := false
	if b[0] == '+' || b[0] == '-' {
		neg = b[0] == '-'
		b = b[1:]
	}
	switch {
	case equalFoldASCII(b, "inf"), equalFoldASCII(b, "infinity"):
		if neg {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case equalFoldASCII(b, "nan"):
		return math.NaN(), true
	}
	return 0, false
}

// equalFoldASCII reports whether b equals the lowercase ASCII word w,
// ignoring ASCII case.
func equalFoldASCII(b []byte, w string) bool {
	if len(b) != len(w) {
		return false
	}
	for i := range b {
		if b[i]|0x20 != w[i] {
			return false
		}
	}
	return true
}

// validDecimal reports whether b is, in full, the decimal syntax
// _Py_dg_strtod accepts, and whether it is plain ASCII digits.
func validDecimal(b []byte) (plain, ok bool) {
	i := 0
	if b[i] == '+' || b[i] == '-' {
		i++
	}
	digits := 0
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
		digits++
	}
	if i < len(b) && b[i] == '.' {
		i++
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			digits++
		}
	}
	if digits == 0 {
		return false, false
	}
	if i == len(b) {
		return digits == len(b), true
	}
	if b[i] == 'e' || b[i] == 'E' {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		exp := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			exp++
		}
		if exp == 0 {
			return false, false
		}
	}
	return false, i == len(b)
}

// pyRepr is CPython's repr(float): the shortest string that round-trips,
// in fixed notation when the decimal exponent lies in (-4, 16] and with
// ".0" added to integers, else in scientific notation ("1e+16", "1.5e-05").
func pyRepr(f float64) string {
	var buf [32]byte
	return string(appendRepr(buf[:0], f))
}

// appendRepr appends pyRepr(f) to dst.
func appendRepr(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "nan"...)
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	if math.Signbit(f) {
		dst = append(dst, '-')
		f = -f
	}
	if f == 0 {
		return append(dst, "0.0"...)
	}
	if f < 1e15 && f == math.Trunc(f) {
		// An integer below 2^53: its shortest repr is its decimal digits.
		return append(strconv.AppendInt(dst, int64(f), 10), '.', '0')
	}
	// Shortest round-trip digits: "d[.ddd]e±XX".
	var ebuf [32]byte
	e := strconv.AppendFloat(ebuf[:0], f, 'e', -1, 64)
	var dbuf [24]byte
	digits := dbuf[:0]
	k := 0
	for ; e[k] != 'e'; k++ {
		if e[k] != '.' {
			digits = append(digits, e[k])
		}
	}
	exp := 0
	neg := e[k+1] == '-'
	for _, c := range e[k+2:] {
		exp = exp*10 + int(c-'0')
	}
	if neg {
		exp = -exp
	}
	decpt := exp + 1
	if decpt > -4 && decpt <= 16 {
		switch {
		case decpt <= 0:
			dst = append(dst, '0', '.')
			for range -decpt {
				dst = append(dst, '0')
			}
			return append(dst, digits...)
		case decpt >= len(digits):
			dst = append(dst, digits...)
			for range decpt - len(digits) {
				dst = append(dst, '0')
			}
			return append(dst, '.', '0')
		default:
			dst = append(dst, digits[:decpt]...)
			dst = append(dst, '.')
			return append(dst, digits[decpt:]...)
		}
	}
	dst = append(dst, digits[0])
	if len(digits) > 1 {
		dst = append(dst, '.')
		dst = append(dst, digits[1:]...)
	}
	dst = append(dst, 'e')
	x := decpt - 1
	if x < 0 {
		dst = append(dst, '-')
		x = -x
	} else {
		dst = append(dst, '+')
	}
	if x < 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, int64(x), 10)
}
