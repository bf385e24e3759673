package pyliteral

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Repr is Python's repr() of the value.
func (v Value) Repr() string {
	var b strings.Builder
	writeRepr(&b, v)
	return b.String()
}

// String is Python's str() of the value: a str is itself, anything else
// its repr.
func (v Value) String() string {
	if v.Kind == Str {
		return v.Str
	}
	return v.Repr()
}

func writeRepr(b *strings.Builder, v Value) {
	switch v.Kind {
	case None:
		b.WriteString("None")
	case Bool:
		if v.Bool {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case Int:
		if v.Int == nil {
			b.WriteString("0")
		} else {
			b.WriteString(v.Int.String())
		}
	case Float:
		b.WriteString(FloatRepr(v.Float))
	case Complex:
		if v.Float == 0 && !math.Signbit(v.Float) {
			b.WriteString(complexPart(v.Imag) + "j")
			return
		}
		im := complexPart(v.Imag)
		if !strings.HasPrefix(im, "-") {
			im = "+" + im
		}
		b.WriteString("(" + complexPart(v.Float) + im + "j)")
	case Str:
		b.WriteString(StrRepr(v.Str))
	case Bytes:
		b.WriteString(bytesRepr(v.Str))
	case Ellipsis:
		b.WriteString("Ellipsis")
	case Tuple:
		b.WriteByte('(')
		writeItems(b, v.Items)
		if len(v.Items) == 1 {
			b.WriteByte(',')
		}
		b.WriteByte(')')
	case List:
		b.WriteByte('[')
		writeItems(b, v.Items)
		b.WriteByte(']')
	case Set:
		if len(v.Items) == 0 {
			b.WriteString("set()")
			return
		}
		b.WriteByte('{')
		writeItems(b, v.Items)
		b.WriteByte('}')
	case Dict:
		b.WriteByte('{')
		for i := range v.Items {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, v.Items[i])
			b.WriteString(": ")
			writeRepr(b, v.Vals[i])
		}
		b.WriteByte('}')
	}
}

func writeItems(b *strings.Builder, items []Value) {
	for i, it := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		writeRepr(b, it)
	}
}

// FloatRepr is repr() of a float: the shortest digits that read back to
// it, in fixed notation when the decimal exponent is in [-4, 16) (with a
// ".0" when whole) and as d.ddde±XX otherwise.
func FloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	s := floatShort(f)
	if !strings.ContainsAny(s, ".en") {
		s += ".0"
	}
	return s
}

// complexPart is a float as a complex's repr writes it (no ".0").
func complexPart(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return floatShort(f)
}

// floatShort formats the shortest round-trip digits with Python's 'r'
// rule: exponent notation when decpt <= -4 or decpt > 16, decpt being
// the position of the decimal point after the first digit's place.
func floatShort(f float64) string {
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.dddde±XX
	neg := strings.HasPrefix(e, "-")
	e = strings.TrimPrefix(e, "-")
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	digits := strings.Replace(mant, ".", "", 1)
	if f == 0 {
		digits, exp = "0", 0
	}
	decpt := exp + 1
	var out string
	if decpt <= -4 || decpt > 16 {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		out = fmt.Sprintf("%se%s%02d", m, sign, exp)
	} else {
		switch {
		case decpt <= 0:
			out = "0." + strings.Repeat("0", -decpt) + digits
		case decpt >= len(digits):
			out = digits + strings.Repeat("0", decpt-len(digits))
		default:
			out = digits[:decpt] + "." + digits[decpt:]
		}
	}
	if neg {
		out = "-" + out
	}
	return out
}

// StrRepr is repr() of a str: single quotes unless the text holds a
// single quote and no double quote; \\, the quote, \t \n \r escaped;
// other characters Python does not print (controls, format characters,
// separators other than the space, unassigned code points) as \xhh,
// \uhhhh or \Uhhhhhhhh.
func StrRepr(s string) string {
	quote := byte('\'')
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for _, c := range s {
		switch {
		case c == rune(quote) || c == '\\':
			b.WriteByte('\\')
			b.WriteRune(c)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < ' ' || c == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		case c < 0x7f:
			b.WriteRune(c)
		case !unicode.IsPrint(c):
			switch {
			case c <= 0xff:
				fmt.Fprintf(&b, `\x%02x`, c)
			case c <= 0xffff:
				fmt.Fprintf(&b, `\u%04x`, c)
			default:
				fmt.Fprintf(&b, `\U%08x`, c)
			}
		default:
			b.WriteRune(c)
		}
	}
	b.WriteByte(quote)
	return b.String()
}

// bytesRepr is repr() of bytes held in s as raw bytes.
func bytesRepr(s string) string {
	raw := []byte(s)
	quote := byte('\'')
	if strings.Contains(string(raw), "'") && !strings.Contains(string(raw), `"`) {
		quote = '"'
	}
	var b strings.Builder
	b.WriteString("b")
	b.WriteByte(quote)
	for _, c := range raw {
		switch {
		case c == quote || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\t':
			b.WriteString(`\t`)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\r':
			b.WriteString(`\r`)
		case c < ' ' || c >= 0x7f:
			fmt.Fprintf(&b, `\x%02x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte(quote)
	return b.String()
}
