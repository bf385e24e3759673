package countingstars

import (
	"errors"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"tally/scoring/threec3h/pyjson"
)

// ErrUnsupported is returned by RepairLoads for text whose json_repair
// result depends on repairs this package does not reproduce (unquoted or
// escaped strings, literals, stray characters inside structures,
// parenthesised tuples, and so on). The metric then reports an error
// rather than guess.
var ErrUnsupported = errors.New("countingstars: json_repair behaviour for this text is not reproduced")

// Int is a Python int decoded by the repair parser (Python's type() tells
// it from float, which matters when json_repair compares two top-level
// values).
type Int = int64

type ctxVal int

const (
	ctxObjectKey ctxVal = iota + 1
	ctxObjectValue
	ctxArray
)

// repairParser mirrors json_repair's JSONParser over code points.
type repairParser struct {
	s           []rune
	i           int
	ctx         []ctxVal
	triedSuffix bool
}

// RepairLoads reproduces json_repair.loads(s) (mangiucugna/json_repair
// commit 600ede6be7d125d14812be3bbd7ef3e0b526a84e, version 0.61.7,
// src/json_repair/json_repair.py repair_json with return_objects=True) for
// the subset of inputs that model answers to Counting-Stars produce: valid
// JSON (json.loads fast path); prose before and after the value (skipped,
// with "#", "//" and "/* */" comments); a valid value after a prefix
// (raw_decode fast path); objects and arrays with double- or single-quoted
// keys and strings, unquoted keys, comments before keys, after values and
// inside arrays, whatever stands after a key in place of ':' (a full-width
// '：' is stepped over) and stray characters between array items (a
// full-width '，'), numbers (json_repair's own number rules: "1,234" in an
// object value and "1/2" stay strings, "007" is 7, "..." is dropped from
// arrays), trailing or missing commas, and missing closing brackets; and
// several top-level values (collected in a list, or replaced when they have
// the same shape). Anything else returns ErrUnsupported. The result uses
// map[string]any, []any, string, Int, float64, bool and nil; "" means
// nothing was found, as in the reference.
func RepairLoads(s string) (any, error) {
	if v, err := pyjson.Loads(s); err == nil {
		return typedInts(s, v), nil
	} else if errors.Is(err, pyjson.ErrTooDeep) {
		return nil, ErrUnsupported
	}
	p := &repairParser{s: []rune(s)}
	return p.parseTopLevel()
}

// typedInts re-decodes valid JSON so that integers are Int, as json.loads
// returns them.
func typedInts(s string, v any) any {
	t := strings.TrimLeft(s, " \t\n\r")
	if tv, _, err := pyjson.RawDecode(t); err == nil {
		return tv
	}
	return v
}

func (p *repairParser) at(off int) (rune, bool) {
	j := p.i + off
	if j < 0 || j >= len(p.s) {
		return 0, false
	}
	return p.s[j], true
}

func (p *repairParser) char() (rune, bool) { return p.at(0) }

func (p *repairParser) push(c ctxVal) { p.ctx = append(p.ctx, c) }
func (p *repairParser) pop() {
	if len(p.ctx) > 0 {
		p.ctx = p.ctx[:len(p.ctx)-1]
	}
}
func (p *repairParser) current() ctxVal {
	if len(p.ctx) == 0 {
		return 0
	}
	return p.ctx[len(p.ctx)-1]
}
func (p *repairParser) inCtx(c ctxVal) bool {
	for _, x := range p.ctx {
		if x == c {
			return true
		}
	}
	return false
}

// isSpace is Python's str.isspace.
func isSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', 0x1c, 0x1d, 0x1e, 0x1f, ' ', 0x85, 0xa0, 0x1680,
		0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}

func (p *repairParser) skipSpaces() {
	for p.i < len(p.s) && isSpace(p.s[p.i]) {
		p.i++
	}
}

// truthy is Python truthiness for repair values.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case Int:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// sameShape is ObjectComparer.is_same_object.
func sameShape(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameShape(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameShape(x[i], y[i]) {
				return false
			}
		}
		return true
	case nil:
		return b == nil
	case bool:
		_, ok := b.(bool)
		return ok
	case Int:
		_, ok := b.(Int)
		return ok
	case float64:
		_, ok := b.(float64)
		return ok
	case string:
		_, ok := b.(string)
		return ok
	}
	return false
}

// parseTopLevel is JSONParser._parse_top_level.
func (p *repairParser) parseTopLevel() (any, error) {
	first, err := p.parseJSON()
	if err != nil {
		return nil, err
	}
	if p.i >= len(p.s) {
		return first, nil
	}
	list := []any{first}
	for p.i < len(p.s) {
		p.ctx = p.ctx[:0]
		comma := p.nextIsCommaSeparated()
		j, err := p.parseJSON()
		if err != nil {
			return nil, err
		}
		if truthy(j) {
			if !comma && sameShape(list[len(list)-1], j) {
				list = list[:len(list)-1]
			} else if !truthy(list[len(list)-1]) {
				list = list[:len(list)-1]
			}
			list = append(list, j)
		} else {
			p.i++
		}
	}
	if len(list) == 1 {
		return list[0], nil
	}
	return list, nil
}

func (p *repairParser) nextIsCommaSeparated() bool {
	j := p.i
	for j < len(p.s) && isSpace(p.s[j]) {
		j++
	}
	if j < len(p.s) && p.s[j] == ',' {
		return true
	}
	k := p.i - 1
	for k >= 0 && isSpace(p.s[k]) {
		k--
	}
	return k >= 0 && p.s[k] == ','
}

// parseJSON is JSONParser.parse_json without schema.
func (p *repairParser) parseJSON() (any, error) {
	for {
		c, ok := p.char()
		if !ok {
			return "", nil
		}
		empty := len(p.ctx) == 0
		switch {
		case c == '{' || c == '[':
			if empty && !p.triedSuffix && p.i != 0 {
				p.triedSuffix = true
				rest := string(p.s[p.i:])
				if v, end, err := pyjson.RawDecode(rest); err == nil {
					p.i += utf8.RuneCountInString(rest[:end])
					return v, nil
				} else if errors.Is(err, pyjson.ErrTooDeep) {
					return nil, ErrUnsupported
				}
			}
			p.i++
			if c == '{' {
				return p.parseObject()
			}
			return p.parseArray()
		case c == '(':
			if !empty || p.parenCouldStartValue() {
				return nil, ErrUnsupported
			}
			p.i++
			continue
		case !empty && (c == '"' || c == '\'' || c == '“' || c == '”' || unicode.IsLetter(c)):
			return p.parseString()
		case !empty && (unicode.IsDigit(c) || c == '-' || c == '.'):
			return p.parseNumber()
		case !empty && unicode.Is(unicode.No, c):
			// Python's isdigit() holds for some of these (superscripts,
			// circled digits); which ones is not reproduced.
			return nil, ErrUnsupported
		case c == '#' || c == '/':
			return p.parseComment()
		}
		p.i++ // anything else is skipped, inside structures too
	}
}

// parenCouldStartValue is the first part of
// top_level_parenthesized_can_start_value: whether the reference might
// parse a top-level '(' as a value (then unsupported here).
func (p *repairParser) parenCouldStartValue() bool {
	for k := p.i - 1; k >= 0; k-- {
		ch := p.s[k]
		if ch == '\n' || ch == '\r' {
			break
		}
		if !isSpace(ch) {
			return false
		}
	}
	j := p.i + 1
	for j < len(p.s) && isSpace(p.s[j]) {
		j++
	}
	if j >= len(p.s) {
		return false
	}
	switch ch := p.s[j]; {
	case strings.ContainsRune("){[(\"'“”-.", ch), unicode.IsDigit(ch):
		return true
	}
	rest := string(p.s[j:min(j+5, len(p.s))])
	return strings.HasPrefix(rest, "true") || strings.HasPrefix(rest, "null") || rest == "false"
}

// parseComment is parse_comment: one comment is skipped ("#" and "//" to
// the end of the line, "/*" to "*/", a lone "/" alone); inside a
// structure it yields "", at the top level every following comment is
// skipped too and the next value parsed.
func (p *repairParser) parseComment() (any, error) {
	for {
		p.skipComment()
		if len(p.ctx) != 0 {
			return "", nil
		}
		p.skipSpaces()
		if c, ok := p.char(); ok && (c == '#' || c == '/') {
			continue
		}
		return p.parseJSON()
	}
}

// skipComment skips the comment at p.i. A "#" comment also ends before
// ']' inside an array, '}' inside an object value and ':' inside a key.
func (p *repairParser) skipComment() {
	c, _ := p.char()
	switch {
	case c == '#':
		for p.i < len(p.s) {
			ch := p.s[p.i]
			if ch == '\n' || ch == '\r' || (ch == ']' && p.inCtx(ctxArray)) ||
				(ch == '}' && p.inCtx(ctxObjectValue)) || (ch == ':' && p.inCtx(ctxObjectKey)) {
				break
			}
			p.i++
		}
	case c == '/':
		next, _ := p.at(1)
		switch next {
		case '/':
			p.i += 2
			for p.i < len(p.s) && p.s[p.i] != '\n' && p.s[p.i] != '\r' {
				p.i++
			}
		case '*':
			p.i += 2
			// The reference accumulates "/*" plus each character and
			// stops once the text ends with "*/", so "/*/" closes.
			for p.i < len(p.s) {
				p.i++
				if p.s[p.i-1] == '/' && p.s[p.i-2] == '*' {
					break
				}
			}
		default:
			p.i++
		}
	}
}

// objectKey is _parse_object_key: comments before the key are skipped
// (parse_string hands them to parse_comment, which yields ""), then the key
// is read quoted (keyString) or bare (bareKey). Keys starting otherwise
// are unsupported.
func (p *repairParser) objectKey() (string, error) {
	p.push(ctxObjectKey)
	defer p.pop()
	key := ""
	for {
		c, ok := p.char()
		if !ok {
			return key, nil
		}
		switch {
		case c == '[' && key == "":
			return "", ErrUnsupported // _merge_object_array_continuation
		case c == '#' || c == '/':
			p.skipComment()
			key = ""
		case c == '"' || c == '\'':
			k, err := p.keyString()
			if err != nil {
				return "", err
			}
			key = k
		case unicode.IsLetter(c) || (c >= '0' && c <= '9'):
			k, err := p.bareKey()
			if err != nil {
				return "", err
			}
			key = k
		default:
			return "", ErrUnsupported
		}
		if key == "" {
			p.skipSpaces()
		}
		if key != "" {
			return key, nil
		}
		if c, ok := p.char(); ok && (c == ':' || c == '}') {
			return key, nil
		}
	}
}

// keyString reads a quoted key. Followed by ':', it is simpleString (the
// fast path). Otherwise parse_string's general loop decides where it ends:
// at the closing quote when, scanning on from it, a ':' or '}' (or, inside
// an array, ']' or ',') or the end of the text comes before another quote,
// or that quote follows only whitespace or a backslash. Keys whose body
// needs the loop's other rules (escapes, brackets, ':', a leading '`') are
// unsupported.
func (p *repairParser) keyString() (string, error) {
	if v, err := p.simpleString(); err == nil {
		return v.(string), nil
	}
	q := p.s[p.i]
	j := p.i + 1
	for j < len(p.s) && p.s[j] != q {
		switch p.s[j] {
		case '\\', '"', '\'', '“', '”', '„', '\n', '\r', '[', ']', '{', '}', ':':
			return "", ErrUnsupported
		}
		j++
	}
	if j >= len(p.s) || j == p.i+1 || p.s[p.i+1] == '`' {
		return "", ErrUnsupported
	}
	for k := j + 1; k < len(p.s); k++ {
		ch := p.s[k]
		if ch == q {
			if p.s[k-1] != '\\' && strings.TrimFunc(string(p.s[j+1:k]), isSpace) != "" {
				return "", ErrUnsupported // the quote would be taken as part of the key
			}
			break
		}
		if ch == ':' || ch == '}' || (p.inCtx(ctxArray) && (ch == ']' || ch == ',')) {
			break
		}
	}
	key := string(p.s[p.i+1 : j])
	p.i = j + 1
	return key, nil
}

// bareKey reads an unquoted key (parse_string with the left quote
// missing): up to ':' or whitespace, commas included. When whitespace is
// followed by neither ':' nor ',', the reference takes the word for a
// comment and yields "". A quote, backslash or bracket inside is
// unsupported.
func (p *repairParser) bareKey() (string, error) {
	start := p.i
	for p.i < len(p.s) {
		ch := p.s[p.i]
		if ch == ':' || isSpace(ch) {
			break
		}
		switch ch {
		case '"', '\\', '„', '[', ']', '{', '}':
			p.i = start
			return "", ErrUnsupported
		}
		p.i++
	}
	key := string(p.s[start:p.i])
	if p.i < len(p.s) && isSpace(p.s[p.i]) {
		p.skipSpaces()
		if c, ok := p.char(); !ok || (c != ':' && c != ',') {
			return "", nil
		}
	}
	return key, nil
}

// parseObject is parse_object without schema; p.i is just past '{'.
func (p *repairParser) parseObject() (any, error) {
	obj := map[string]any{}
	start := p.i
	for {
		c, ok := p.char()
		if !ok || c == '}' {
			break
		}
		p.skipSpaces()
		if c, _ := p.char(); c == ':' {
			return nil, ErrUnsupported
		}
		key, err := p.objectKey()
		if err != nil {
			return nil, err
		}
		if _, dup := obj[key]; dup && p.inCtx(ctxArray) {
			return nil, ErrUnsupported
		}
		p.skipSpaces()
		if c, ok := p.char(); !ok || c == '}' {
			continue // the key is dropped
		}
		if key == "" {
			return nil, ErrUnsupported // an empty key followed by ':'
		}
		// ':' or whatever stands in its place (a full-width '：') is
		// consumed: parse_object steps over one character either way.
		p.i++
		// value
		p.push(ctxObjectValue)
		p.skipSpaces()
		c, ok = p.char()
		if ok && (c == ',' || c == '}') {
			p.pop()
			return nil, ErrUnsupported
		}
		v, err := p.parseJSON()
		p.pop()
		if err != nil {
			return nil, err
		}
		obj[key] = v
		if c, ok := p.char(); ok && (c == ',' || c == '\'' || c == '"') {
			if c != ',' {
				return nil, ErrUnsupported
			}
			p.i++
		}
		if c, ok := p.char(); ok && c == ']' && p.inCtx(ctxArray) {
			return nil, ErrUnsupported
		}
		p.skipSpaces()
	}
	p.i++
	if len(obj) == 0 && p.i-start > 2 {
		// _repair_empty_object_result: only an all-whitespace body is kept.
		end := min(p.i, len(p.s))
		body := strings.TrimSuffix(string(p.s[start:end]), "}")
		if strings.TrimFunc(body, isSpace) != "" {
			return nil, ErrUnsupported
		}
	}
	if len(p.ctx) != 0 {
		if c, ok := p.char(); ok && c == '}' && p.current() != ctxObjectKey && p.current() != ctxObjectValue {
			p.i++
		}
		return obj, nil
	}
	p.skipSpaces()
	if c, ok := p.char(); ok && c == ',' {
		p.i++
		p.skipSpaces()
		if c, ok := p.char(); ok && (c == '"' || c == '\'' || c == '“' || c == '”') {
			return nil, ErrUnsupported // merged with a following object
		}
	}
	return obj, nil
}

// parseArray is parse_array without schema; p.i is just past '['.
func (p *repairParser) parseArray() (any, error) {
	arr := []any{}
	p.push(ctxArray)
	defer p.pop()
	p.skipSpaces()
	c, ok := p.char()
	for ok && c != ']' && c != '}' {
		var v any
		var err error
		if c == '"' || c == '\'' || c == '“' || c == '”' {
			if c != '"' && c != '\'' {
				return nil, ErrUnsupported
			}
			v, err = p.simpleString()
		} else {
			v, err = p.parseJSON()
		}
		if err != nil {
			return nil, err
		}
		next, nok := p.char()
		switch {
		case isStrictlyEmpty(v) && (!nok || (next != ']' && next != ',')):
			p.i++
		case v == "..." && p.i > 0 && p.s[p.i-1] == '.':
		default:
			arr = append(arr, v)
		}
		c, ok = p.char()
		for ok && c != ']' && (isSpace(c) || c == ',') {
			p.i++
			c, ok = p.char()
		}
	}
	p.i++
	return arr, nil
}

func isStrictlyEmpty(v any) bool {
	switch x := v.(type) {
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// simpleString reads a quoted string with no escapes or other quote
// characters inside, followed by what the context expects (":" after a
// key; "," or the closing bracket after a value). Anything else goes
// through parse_string's heuristics and is unsupported.
func (p *repairParser) simpleString() (any, error) {
	q := p.s[p.i]
	j := p.i + 1
	for j < len(p.s) && p.s[j] != q {
		switch p.s[j] {
		case '\\', '"', '\'', '“', '”', '\n', '\r':
			return nil, ErrUnsupported
		}
		j++
	}
	if j >= len(p.s) {
		return nil, ErrUnsupported
	}
	k := j + 1
	for k < len(p.s) && isSpace(p.s[k]) {
		k++
	}
	var follow rune
	if k < len(p.s) {
		follow = p.s[k]
	}
	switch p.current() {
	case ctxObjectKey:
		if follow != ':' {
			return nil, ErrUnsupported
		}
	case ctxObjectValue:
		if follow != ',' && follow != '}' {
			return nil, ErrUnsupported
		}
	case ctxArray:
		if follow != ',' && follow != ']' {
			return nil, ErrUnsupported
		}
	default:
		return nil, ErrUnsupported
	}
	str := string(p.s[p.i+1 : j])
	p.i = j + 1
	return str, nil
}

// parseString handles values that start with a quote in object values;
// letters (literals, unquoted strings) are unsupported.
func (p *repairParser) parseString() (any, error) {
	c, _ := p.char()
	if c != '"' && c != '\'' {
		return nil, ErrUnsupported
	}
	return p.simpleString()
}

// parseNumber is parse_number: it collects "0123456789-.eE/,_" (no comma
// inside arrays), drops underscores, backs off one trailing "-eE/,", and
// converts as Python would (a comma or a failed conversion keeps the
// string).
func (p *repairParser) parseNumber() (any, error) {
	var b strings.Builder
	n := 0
	isArray := p.current() == ctxArray
	for p.i < len(p.s) {
		c := p.s[p.i]
		if !strings.ContainsRune("0123456789-.eE/,_", c) || (isArray && c == ',') {
			break
		}
		if c != '_' {
			b.WriteRune(c)
			n++
		}
		p.i++
	}
	if c, ok := p.char(); ok && unicode.IsLetter(c) {
		return nil, ErrUnsupported // the reference re-reads it as a string
	}
	str := b.String()
	if str == "" {
		// A non-ASCII digit: int("") fails and the empty string is
		// returned without moving on.
		return "", nil
	}
	if strings.ContainsRune("-eE/,", rune(str[len(str)-1])) {
		str = str[:len(str)-1]
		p.i--
	}
	if strings.Contains(str, ",") {
		return str, nil
	}
	if strings.ContainsAny(str, ".eE") {
		if f, ok := pyFloat(str); ok {
			return f, nil
		}
		return str, nil
	}
	if v, ok := pyInt(str); ok {
		return v, nil
	}
	if t := strings.TrimPrefix(str, "-"); t != "" && strings.Trim(t, "0123456789") == "" {
		return nil, ErrUnsupported // an integer beyond int64
	}
	return str, nil
}

// pyFloat is Python float(s) for strings of [0-9.eE/-] (no spaces, no
// underscores, no letters other than e).
func pyFloat(s string) (float64, bool) {
	t := s
	if strings.HasPrefix(t, "-") {
		t = t[1:]
	}
	mant, exp, hasExp := strings.Cut(strings.ToLower(t), "e")
	if hasExp {
		e := strings.TrimPrefix(exp, "-")
		if e == "" || strings.Trim(e, "0123456789") != "" {
			return 0, false
		}
	}
	ip, fp, _ := strings.Cut(mant, ".")
	if ip == "" && fp == "" || strings.Trim(ip, "0123456789") != "" || strings.Trim(fp, "0123456789") != "" || strings.Count(mant, ".") > 1 {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

// pyInt is Python int(s) for such strings: an optional '-' then digits
// (leading zeros allowed). Values beyond int64 are unsupported.
func pyInt(s string) (any, bool) {
	t := strings.TrimPrefix(s, "-")
	if t == "" || strings.Trim(t, "0123456789") != "" {
		return nil, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil, false
	}
	return v, true
}
