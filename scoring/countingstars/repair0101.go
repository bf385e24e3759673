package countingstars

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"tally/scoring/threec3h/pyjson"
)

// PaperEraJSONRepair names the json_repair release that RepairLoadsPaperEra
// reproduces: the newest on PyPI when the paper-era notebook
// (viz_file/viz.ipynb, 2024-03-20 to 2024-03-25) was written. 0.11.0 came
// out on 2024-04-01.
const PaperEraJSONRepair = "json_repair 0.10.1 (mangiucugna/json_repair f004ff7f07e9631f205abcf9b5f33e7f7ba20676, 2024-03-06)"

// maxRepairDepth bounds the nested parser calls of RepairLoadsPaperEra.
// The reference recurses once per skipped character and per nested value,
// and CPython raises RecursionError near 1000 frames; where exactly depends
// on the caller's own stack (a script fails at 990 skipped characters, a
// notebook earlier), so past this depth the port declines.
const maxRepairDepth = 900

// paperParser mirrors json_repair 0.10.1's JSONParser over code points. The
// reference edits its string as it parses (inserting missing quotes, colons
// and brackets, swapping a stray ':' for ','), and the strings it returns
// are slices of the edited text, so s is edited the same way.
type paperParser struct {
	s       []rune
	i       int
	context string // "", "object_key" or "object_value": one value, not a stack
	depth   int
}

// RepairLoadsPaperEra reproduces json_repair.loads(s) of json_repair 0.10.1
// (PaperEraJSONRepair; src/json_repair/json_repair.py, repair_json with
// return_objects=True): s.strip().lstrip("```json") (the characters `, j,
// s, o and n, not the prefix), json.loads of that, and when it is not JSON
// the JSONParser heuristics: prose skipped or read as an unquoted string,
// unquoted keys and values, a missing ':' inserted over whatever stands
// there (so full-width '：' is consumed), anything that is no value skipped
// (full-width '，' between numbers), missing closing brackets and quotes
// added, and an array ending at its first falsy value (0, "", [], {},
// false, null). Escapes are kept as written. Character classes are
// Python's (str.isspace, str.isdigit, str.isalpha) as of Unicode 14.0.0
// (CPython 3.11); Go's unicode tables are of a later version, which only
// matters for letters added since.
//
// The result uses map[string]any, []any, string, Int, float64, bool and
// nil. ErrUnsupported is returned where the result depends on Python
// details not reproduced: a non-string object key that gets stored (the
// dict cannot be a map[string]any), an integer beyond int64 and recursion
// past maxRepairDepth. An unhashable key (a list or object
// used as a key) is an error, as the reference raises TypeError.
func RepairLoadsPaperEra(s string) (any, error) {
	s = strings.TrimFunc(s, isSpace)
	s = strings.TrimLeft(s, "`json")
	if v, err := pyjson.Loads(s); err == nil {
		return typedInts(s, v), nil
	} else if errors.Is(err, pyjson.ErrTooDeep) {
		return nil, ErrUnsupported
	}
	p := &paperParser{s: []rune(s)}
	return p.parseJSON()
}

// charAt is get_char_at(off): Python indexing, so a negative position
// counts from the end; false past either end.
func (p *paperParser) charAt(off int) (rune, bool) {
	j := p.i + off
	if j < 0 {
		j += len(p.s)
	}
	if j < 0 || j >= len(p.s) {
		return 0, false
	}
	return p.s[j], true
}

// insert is insert_char_at: s[:i] + c + s[i:], then i += 1.
func (p *paperParser) insert(c rune) {
	j := min(p.i, len(p.s))
	p.s = append(p.s[:j], append([]rune{c}, p.s[j:]...)...)
	p.i++
}

// remove is remove_char_at: s[:i] + s[i+1:].
func (p *paperParser) remove() {
	if p.i < len(p.s) {
		p.s = append(p.s[:p.i], p.s[p.i+1:]...)
	}
}

func (p *paperParser) skipWhitespace() {
	for p.i < len(p.s) && isSpace(p.s[p.i]) {
		p.i++
	}
}

func (p *paperParser) enter() error {
	p.depth++
	if p.depth > maxRepairDepth {
		return fmt.Errorf("%w: recursion deeper than %d calls (the reference raises RecursionError near 1000)", ErrUnsupported, maxRepairDepth)
	}
	return nil
}

// parseJSON is parse_json. Skipping a character is a recursive call in the
// reference; here it is a loop that counts the same depth.
func (p *paperParser) parseJSON() (any, error) {
	base := p.depth
	defer func() { p.depth = base }()
	for {
		if err := p.enter(); err != nil {
			return nil, err
		}
		c, ok := p.charAt(0)
		switch {
		case !ok:
			return "", nil
		case c == '{':
			p.i++
			return p.parseObject()
		case c == '[':
			p.i++
			return p.parseArray()
		case c == '}' && p.context == "object_value":
			return "", nil
		case c == '"':
			return p.parseString('"', '"')
		case c == '\'':
			return p.parseString('\'', '\'')
		case c == '“':
			return p.parseString('“', '”')
		case isPyDigit(c) || c == '-':
			return p.parseNumber()
		case c == 't' || c == 'f' || c == 'n' || c == 'T' || c == 'F' || c == 'N':
			return p.parseBooleanOrNull()
		case unicode.IsLetter(c):
			return p.parseString('"', '"')
		}
		p.i++
	}
}

// pyDigitNotDecimal holds the code points for which Python's str.isdigit
// holds but str.isdecimal (category Nd) does not: Numeric_Type=Digit, as
// CPython 3.11's unicodedata (Unicode 14.0.0) lists them (superscripts,
// subscripts, circled and parenthesised digits, and a few scripts' digits).
var pyDigitNotDecimal = &unicode.RangeTable{
	R16: []unicode.Range16{
		{0x00B2, 0x00B3, 1}, {0x00B9, 0x00B9, 1}, {0x1369, 0x1371, 1}, {0x19DA, 0x19DA, 1},
		{0x2070, 0x2070, 1}, {0x2074, 0x2079, 1}, {0x2080, 0x2089, 1}, {0x2460, 0x2468, 1},
		{0x2474, 0x247C, 1}, {0x2488, 0x2490, 1}, {0x24EA, 0x24EA, 1}, {0x24F5, 0x24FD, 1},
		{0x24FF, 0x24FF, 1}, {0x2776, 0x277E, 1}, {0x2780, 0x2788, 1}, {0x278A, 0x2792, 1},
	},
	R32: []unicode.Range32{
		{0x10A40, 0x10A43, 1}, {0x10E60, 0x10E68, 1}, {0x11052, 0x1105A, 1}, {0x1F100, 0x1F10A, 1},
	},
}

// isPyDigit is Python's str.isdigit for one character.
func isPyDigit(r rune) bool {
	return unicode.IsDigit(r) || unicode.Is(pyDigitNotDecimal, r)
}

// parseObject is parse_object; p.i is just past '{'.
func (p *paperParser) parseObject() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	obj := map[string]any{}
	for {
		if c, ok := p.charAt(0); !ok || c == '}' {
			break
		}
		p.skipWhitespace()
		if c, ok := p.charAt(0); ok && c == ':' {
			p.remove()
			p.insert(',')
			p.i++
		}
		p.context = "object_key"
		p.skipWhitespace()
		var key any = ""
		for key == "" {
			if _, ok := p.charAt(0); !ok {
				break
			}
			var err error
			if key, err = p.parseJSON(); err != nil {
				return nil, err
			}
			if c, ok := p.charAt(0); key == "" && ok && c == ':' {
				key = "empty_placeholder"
				break
			}
		}
		if c, ok := p.charAt(0); !ok || c == '}' {
			continue
		}
		if c, ok := p.charAt(0); !ok || c != ':' {
			p.insert(':')
		}
		p.i++
		p.context = "object_value"
		value, err := p.parseJSON()
		if err != nil {
			return nil, err
		}
		p.context = ""
		switch k := key.(type) {
		case string:
			obj[k] = value
		case []any, map[string]any:
			return nil, fmt.Errorf("countingstars: json_repair 0.10.1 uses a %s as an object key (the reference raises TypeError: unhashable)", pyType(k))
		default:
			return nil, fmt.Errorf("%w: a %s object key", ErrUnsupported, pyType(k))
		}
		if c, ok := p.charAt(0); ok && c == ',' {
			p.i++
		}
		p.skipWhitespace()
	}
	if c, ok := p.charAt(0); ok && c != '}' {
		p.insert('}')
	}
	p.i++
	return obj, nil
}

// parseArray is parse_array; p.i is just past '['.
func (p *paperParser) parseArray() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	arr := []any{}
	for {
		if c, ok := p.charAt(0); !ok || c == ']' {
			break
		}
		v, err := p.parseJSON()
		if err != nil {
			return nil, err
		}
		if !truthy(v) {
			break
		}
		arr = append(arr, v)
		for {
			c, ok := p.charAt(0)
			if !ok || !(isSpace(c) || c == ',') {
				break
			}
			p.i++
		}
	}
	if c, ok := p.charAt(0); ok && c != ']' {
		if c == ',' {
			p.remove()
		}
		p.insert(']')
	}
	p.i++
	return arr, nil
}

// parseString is parse_string with the given delimiters.
func (p *paperParser) parseString(left, right rune) (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	fixedQuotes := false
	if c, ok := p.charAt(0); !ok || c != left {
		p.insert(left)
		fixedQuotes = true
	} else {
		p.i++
	}
	start := p.i
	c, ok := p.charAt(0)
	markdownLink := false
	for ok && c != right {
		if fixedQuotes {
			if p.context == "object_key" && (c == ':' || isSpace(c)) {
				break
			} else if p.context == "object_value" && (c == ',' || c == '}') {
				break
			}
		}
		p.i++
		c, ok = p.charAt(0)
		if prev, pok := p.charAt(-1); ok && c == right && pok && prev == '\\' {
			p.i++
			c, ok = p.charAt(0)
		}
		if ok && c == right {
			next, nok := p.charAt(1)
			p2, ok2 := p.charAt(-2)
			p1, ok1 := p.charAt(-1)
			if (!nok || next != ',') && (markdownLink || (ok2 && p2 == ']' && ok1 && p1 == '(')) {
				markdownLink = !markdownLink
				p.i++
				c, ok = p.charAt(0)
			}
		}
	}
	if ok && fixedQuotes && p.context == "object_key" && isSpace(c) {
		p.skipWhitespace()
		if n, nok := p.charAt(0); !nok || (n != ':' && n != ',') {
			return "", nil
		}
	}
	end := p.i
	if !ok || c != right {
		p.insert(right)
	} else {
		p.i++
	}
	return p.slice(start, end), nil
}

// slice is json_str[start:end] with Python's clamping.
func (p *paperParser) slice(start, end int) string {
	start, end = min(max(start, 0), len(p.s)), min(max(end, 0), len(p.s))
	if start >= end {
		return ""
	}
	return string(p.s[start:end])
}

// parseNumber is parse_number: it collects "0123456789-.eE" and converts
// with float() when the text has '.', 'e' or 'E', int() otherwise; a lone
// '-' is skipped, and text Python cannot convert stays a string.
func (p *paperParser) parseNumber() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	var b strings.Builder
	for p.i < len(p.s) && strings.ContainsRune("0123456789-.eE", p.s[p.i]) {
		b.WriteRune(p.s[p.i])
		p.i++
	}
	str := b.String()
	switch {
	case str == "":
		// A non-ASCII digit: not a number character, read as a string.
		return p.parseString('"', '"')
	case strings.ContainsAny(str, ".eE"):
		if f, ok := pyFloat(str); ok {
			return f, nil
		}
		return str, nil
	case str == "-":
		return p.parseJSON()
	}
	if v, ok := pyInt(str); ok {
		return v, nil
	}
	if t := strings.TrimPrefix(str, "-"); t != "" && strings.Trim(t, "0123456789") == "" {
		return nil, fmt.Errorf("%w: an integer beyond int64", ErrUnsupported)
	}
	return str, nil
}

// lowerHasPrefix is json_str.lower().startswith(word, index) for an ASCII
// word. Only ASCII capitals lower to the letters of "true", "false" and
// "null" (the Kelvin sign gives 'k'), but lower() turns 'İ' (U+0130) into
// two code points, which shifts the index; without one the text is
// compared in place.
func (p *paperParser) lowerHasPrefix(word string) bool {
	at := func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	if !slices.Contains(p.s, 'İ') {
		if p.i+len(word) > len(p.s) {
			return false
		}
		for k, w := range word {
			if at(p.s[p.i+k]) != w {
				return false
			}
		}
		return true
	}
	lower := make([]rune, 0, len(p.s)+1)
	for _, r := range p.s {
		if r == 'İ' {
			lower = append(lower, 'i', '\u0307')
		} else {
			lower = append(lower, at(r))
		}
	}
	return p.i+len(word) <= len(lower) && string(lower[p.i:p.i+len(word)]) == word
}

// parseBooleanOrNull is parse_boolean_or_null: json_str.lower() must have
// "true", "false" or "null" at the current index; lower() lengthens
// 'İ' (U+0130) to two code points, which shifts that comparison.
func (p *paperParser) parseBooleanOrNull() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	for _, lit := range []struct {
		word string
		val  any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if p.lowerHasPrefix(lit.word) {
			p.i += len(lit.word)
			return lit.val, nil
		}
	}
	return p.parseString('"', '"')
}
