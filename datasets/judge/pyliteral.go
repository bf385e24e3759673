package judge

import (
	"errors"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file is a reader for the subset of Python that ast.literal_eval
// accepts (CPython 3.11), enough to reproduce alpaca_eval's ranking_parser:
// strings (prefixes r, u, b, br, rb; triple quotes; escapes; implicit
// concatenation), bytes, ints (any base, underscores, any size), floats,
// imaginary numbers, a sign on a number, real±imaginary, True, False,
// None, ..., tuples (bare at top level too), lists, dicts, sets and set().
// Anything else is an error, as both a SyntaxError and literal_eval's
// ValueError make the reference record NaN. Known differences: \N{name}
// escapes are rejected (no Unicode name table), lone surrogates read as
// U+FFFD, and input that is not valid UTF-8 is rejected.

type pyKind uint8

const (
	pyNone pyKind = iota
	pyBool
	pyInt
	pyFloat
	pyComplex
	pyStr
	pyBytes
	pyEllipsis
	pyTuple
	pyList
	pySet
	pyDict
)

// pyVal is one decoded Python literal.
type pyVal struct {
	kind  pyKind
	b     bool
	i     *big.Int
	f     float64    // pyFloat; real part of pyComplex
	im    float64    // imaginary part of pyComplex
	s     string     // pyStr, pyBytes
	items []pyVal    // pyTuple, pyList, pySet; dict keys
	vals  []pyVal    // dict values, parallel to items
	node  pyNodeKind // what the expression was, for literal_eval's rules
	bad   bool       // an expression literal_eval rejects (ValueError)
}

// pyNodeKind is the shape of the AST node a value came from.
type pyNodeKind uint8

const (
	nodeConst pyNodeKind = iota
	nodeUnary
	nodeBinOp
	nodeOther
)

var errPySyntax = errors.New("not a Python literal")

// maxPyLevel is CPython's tokenizer limit on nested brackets (MAXLEVEL).
const maxPyLevel = 200

type pyParser struct {
	src   string
	pos   int
	level int
}

// pyLiteralEval is ast.literal_eval on a str.
func pyLiteralEval(src string) (pyVal, error) {
	if !utf8.ValidString(src) || strings.IndexByte(src, 0) >= 0 {
		return pyVal{}, errPySyntax
	}
	src = strings.TrimLeft(src, " \t")
	p := &pyParser{src: src}
	if err := p.skipBlankLines(); err != nil {
		return pyVal{}, err
	}
	v, err := p.exprList(true)
	if err != nil {
		return pyVal{}, err
	}
	// The rest of the line may hold only a comment; later lines only
	// blank lines or comments.
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
		return pyVal{}, errPySyntax
	}
	for p.pos < len(p.src) {
		if err := p.skipBlankLines(); err != nil {
			return pyVal{}, err
		}
		if p.pos < len(p.src) {
			return pyVal{}, errPySyntax
		}
	}
	if v, err = literal(v); err != nil {
		return pyVal{}, err
	}
	return v, nil
}

// skipBlankLines skips lines holding only whitespace and comments, then
// checks that the next line is not indented (the tokenizer's column: ' '
// adds one, '\t' goes to the next multiple of 8, '\f' resets it).
func (p *pyParser) skipBlankLines() error {
	for p.pos < len(p.src) {
		col, i := 0, p.pos
	indent:
		for i < len(p.src) {
			switch p.src[i] {
			case ' ':
				col++
			case '\t':
				col = (col/8 + 1) * 8
			case '\f':
				col = 0
			default:
				break indent
			}
			i++
		}
		if i < len(p.src) && p.src[i] == '#' {
			for i < len(p.src) && p.src[i] != '\n' && p.src[i] != '\r' {
				i++
			}
		}
		if i == len(p.src) {
			p.pos = i
			return nil
		}
		switch p.src[i] {
		case '\n':
			p.pos = i + 1
			continue
		case '\r':
			p.pos = i + 1
			if p.pos < len(p.src) && p.src[p.pos] == '\n' {
				p.pos++
			}
			continue
		case '\\':
			if i+1 < len(p.src) && (p.src[i+1] == '\n' || p.src[i+1] == '\r') {
				break // a continuation joins this line to the next
			}
		}
		if col != 0 {
			return errPySyntax // IndentationError
		}
		p.pos = i
		return nil
	}
	return nil
}

// skipSpace skips spaces, tabs, form feeds and backslash continuations,
// and inside brackets newlines and comments as well.
func (p *pyParser) skipSpace() {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\f':
			p.pos++
		case c == '\\' && p.pos+1 < len(p.src) && (p.src[p.pos+1] == '\n' || p.src[p.pos+1] == '\r'):
			// A continuation; one right before the end of input is an
			// error (unexpected EOF), left for the caller to find.
			next := p.pos + 2
			if p.src[p.pos+1] == '\r' && next < len(p.src) && p.src[next] == '\n' {
				next++
			}
			if next == len(p.src) {
				return
			}
			p.pos = next
		case p.level > 0 && (c == '\n' || c == '\r'):
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
				p.pos++
			}
			if p.level == 0 {
				return
			}
		default:
			return
		}
	}
}

func (p *pyParser) peek() byte {
	p.skipSpace()
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

// exprList reads one expression or, where a bare tuple is allowed, a
// comma-separated list of them.
func (p *pyParser) exprList(allowTuple bool) (pyVal, error) {
	first, err := p.expr()
	if err != nil {
		return pyVal{}, err
	}
	if !allowTuple || p.peek() != ',' {
		return first, nil
	}
	items := []pyVal{first}
	for p.peek() == ',' {
		p.pos++
		if !p.startsExpr() {
			break
		}
		v, err := p.expr()
		if err != nil {
			return pyVal{}, err
		}
		items = append(items, v)
	}
	return pyVal{kind: pyTuple, items: items, node: nodeOther}, nil
}

// startsExpr reports whether the next token can begin an expression.
func (p *pyParser) startsExpr() bool {
	switch c := p.peek(); {
	case c == 0, c == ')', c == ']', c == '}', c == ',', c == ':', c == '\n', c == '\r':
		return false
	}
	return true
}

// expr is a sum: unary ('+'|'-' unary)*.
func (p *pyParser) expr() (pyVal, error) {
	left, err := p.unary()
	if err != nil {
		return pyVal{}, err
	}
	for {
		c := p.peek()
		if c != '+' && c != '-' {
			return left, nil
		}
		p.pos++
		right, err := p.unary()
		if err != nil {
			return pyVal{}, err
		}
		left = binOp(left, right, c == '-')
	}
}

func (p *pyParser) unary() (pyVal, error) {
	c := p.peek()
	if c != '+' && c != '-' {
		return p.atom()
	}
	p.pos++
	if d := p.peek(); d == '+' || d == '-' {
		return pyVal{}, errPySyntax // literal_eval rejects a sign on a sign
	}
	operand, err := p.atom()
	if err != nil {
		return pyVal{}, err
	}
	return signed(operand, c == '-'), nil
}

// numeric reports whether v is a constant int, float or complex (not a
// bool), as literal_eval's _convert_num requires.
func numeric(v pyVal) bool {
	return v.node == nodeConst && (v.kind == pyInt || v.kind == pyFloat || v.kind == pyComplex)
}

// signed is literal_eval's UnaryOp rule: a sign applies only to a numeric
// constant; anything else is recorded as an invalid node.
func signed(v pyVal, neg bool) pyVal {
	if !numeric(v) {
		return pyVal{node: nodeOther, bad: true}
	}
	if neg {
		switch v.kind {
		case pyInt:
			v.i = new(big.Int).Neg(v.i)
		case pyFloat:
			v.f = -v.f
		case pyComplex:
			v.f, v.im = -v.f, -v.im
		}
	}
	v.node = nodeUnary
	return v
}

// binOp is literal_eval's BinOp rule: a (signed) real number plus or minus
// a complex constant.
func binOp(l, r pyVal, sub bool) pyVal {
	bad := pyVal{node: nodeOther, bad: true}
	if l.node != nodeConst && l.node != nodeUnary || (l.kind != pyInt && l.kind != pyFloat) || !numeric(r) || r.kind != pyComplex {
		return bad
	}
	re := l.f
	if l.kind == pyInt {
		re, _ = new(big.Float).SetInt(l.i).Float64()
	}
	im := r.im
	rre := r.f
	if sub {
		im, rre = -im, -rre
	}
	return pyVal{kind: pyComplex, f: re + rre, im: im, node: nodeBinOp}
}

// literal checks the literal_eval rules recursively: no invalid nodes,
// hashable dict keys and set members.
func literal(v pyVal) (pyVal, error) {
	if v.bad {
		return pyVal{}, errPySyntax
	}
	switch v.kind {
	case pyTuple, pyList, pySet, pyDict:
		for i := range v.items {
			if _, err := literal(v.items[i]); err != nil {
				return pyVal{}, err
			}
			if (v.kind == pySet || v.kind == pyDict) && !hashable(v.items[i]) {
				return pyVal{}, errPySyntax // TypeError: unhashable type
			}
		}
		for i := range v.vals {
			if _, err := literal(v.vals[i]); err != nil {
				return pyVal{}, err
			}
		}
	}
	return v, nil
}

func hashable(v pyVal) bool {
	switch v.kind {
	case pyList, pySet, pyDict:
		return false
	case pyTuple:
		for _, it := range v.items {
			if !hashable(it) {
				return false
			}
		}
	}
	return true
}

func (p *pyParser) open() error {
	if p.level >= maxPyLevel {
		return errPySyntax // too many nested parentheses
	}
	p.level++
	p.pos++
	return nil
}

func (p *pyParser) atom() (pyVal, error) {
	c := p.peek()
	switch {
	case c == '(':
		if err := p.open(); err != nil {
			return pyVal{}, err
		}
		if p.peek() == ')' {
			p.level--
			p.pos++
			return pyVal{kind: pyTuple, node: nodeOther}, nil
		}
		first, err := p.expr()
		if err != nil {
			return pyVal{}, err
		}
		if p.peek() != ',' {
			if p.peek() != ')' {
				return pyVal{}, errPySyntax
			}
			p.level--
			p.pos++
			return first, nil
		}
		items, err := p.seq(')', first)
		if err != nil {
			return pyVal{}, err
		}
		return pyVal{kind: pyTuple, items: items, node: nodeOther}, nil
	case c == '[':
		if err := p.open(); err != nil {
			return pyVal{}, err
		}
		items, err := p.seq(']')
		if err != nil {
			return pyVal{}, err
		}
		return pyVal{kind: pyList, items: items, node: nodeOther}, nil
	case c == '{':
		return p.braces()
	case c == '\'' || c == '"':
		return p.strings()
	case c >= '0' && c <= '9' || c == '.' && p.pos+1 < len(p.src) && p.src[p.pos+1] >= '0' && p.src[p.pos+1] <= '9':
		return p.number()
	case c == '.':
		if strings.HasPrefix(p.src[p.pos:], "...") {
			p.pos += 3
			return pyVal{kind: pyEllipsis, node: nodeConst}, nil
		}
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
		return p.name()
	}
	return pyVal{}, errPySyntax
}

// seq reads comma-separated expressions up to the closing bracket (which
// it consumes), the first already read when given.
func (p *pyParser) seq(closer byte, first ...pyVal) ([]pyVal, error) {
	items := append([]pyVal(nil), first...)
	for {
		c := p.peek()
		if c == closer {
			p.level--
			p.pos++
			return items, nil
		}
		if len(items) > 0 {
			if c != ',' {
				return nil, errPySyntax
			}
			p.pos++
			if p.peek() == closer {
				continue
			}
		}
		v, err := p.expr()
		if err != nil {
			return nil, err
		}
		items = append(items, v)
	}
}

func (p *pyParser) braces() (pyVal, error) {
	if err := p.open(); err != nil {
		return pyVal{}, err
	}
	if p.peek() == '}' {
		p.level--
		p.pos++
		return pyVal{kind: pyDict, node: nodeOther}, nil
	}
	first, err := p.expr()
	if err != nil {
		return pyVal{}, err
	}
	if p.peek() != ':' {
		items, err := p.seq('}', first)
		if err != nil {
			return pyVal{}, err
		}
		return pyVal{kind: pySet, items: items, node: nodeOther}, nil
	}
	d := pyVal{kind: pyDict, node: nodeOther}
	key := first
	for {
		p.pos++ // ':'
		val, err := p.expr()
		if err != nil {
			return pyVal{}, err
		}
		d.items = append(d.items, key)
		d.vals = append(d.vals, val)
		c := p.peek()
		if c == '}' {
			p.level--
			p.pos++
			return d, nil
		}
		if c != ',' {
			return pyVal{}, errPySyntax
		}
		p.pos++
		if p.peek() == '}' {
			p.level--
			p.pos++
			return d, nil
		}
		if key, err = p.expr(); err != nil {
			return pyVal{}, err
		}
		if p.peek() != ':' {
			return pyVal{}, errPySyntax
		}
	}
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func (p *pyParser) name() (pyVal, error) {
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
		p.pos++
	}
	word := p.src[start:p.pos]
	if p.pos < len(p.src) && (p.src[p.pos] == '\'' || p.src[p.pos] == '"') {
		switch strings.ToLower(word) {
		case "r", "u", "b", "br", "rb":
			p.pos = start
			return p.strings()
		}
		return pyVal{}, errPySyntax
	}
	switch word {
	case "True", "False":
		return pyVal{kind: pyBool, b: word == "True", node: nodeConst}, nil
	case "None":
		return pyVal{kind: pyNone, node: nodeConst}, nil
	case "set":
		if p.peek() != '(' {
			return pyVal{}, errPySyntax
		}
		if err := p.open(); err != nil {
			return pyVal{}, err
		}
		if p.peek() != ')' {
			return pyVal{}, errPySyntax
		}
		p.level--
		p.pos++
		return pyVal{kind: pySet, node: nodeOther}, nil
	}
	return pyVal{}, errPySyntax
}

// number reads an int, float or imaginary literal (Python 3.11 lexical
// rules: underscores between digits, no leading zeros on a non-zero
// decimal int).
func (p *pyParser) number() (pyVal, error) {
	s := p.src[p.pos:]
	digits := func(i int, ok func(byte) bool) int { // digit (["_"] digit)*
		if i >= len(s) || !ok(s[i]) {
			return -1
		}
		i++
		for i < len(s) {
			if ok(s[i]) {
				i++
			} else if s[i] == '_' && i+1 < len(s) && ok(s[i+1]) {
				i += 2
			} else {
				break
			}
		}
		return i
	}
	dec := func(c byte) bool { return c >= '0' && c <= '9' }
	end := func(i int, v pyVal) (pyVal, error) {
		if i < len(s) && isNameByte(s[i]) {
			return pyVal{}, errPySyntax
		}
		p.pos += i
		v.node = nodeConst
		return v, nil
	}
	if len(s) > 1 && s[0] == '0' && strings.ContainsRune("xXoObB", rune(s[1])) {
		base, ok := 16, func(c byte) bool { return strings.IndexByte("0123456789abcdefABCDEF", c) >= 0 }
		switch s[1] {
		case 'o', 'O':
			base, ok = 8, func(c byte) bool { return c >= '0' && c <= '7' }
		case 'b', 'B':
			base, ok = 2, func(c byte) bool { return c == '0' || c == '1' }
		}
		i := 2
		if i < len(s) && s[i] == '_' {
			i++
		}
		j := digits(i, ok)
		if j < 0 {
			return pyVal{}, errPySyntax
		}
		n, good := new(big.Int).SetString(strings.ReplaceAll(s[i:j], "_", ""), base)
		if !good {
			return pyVal{}, errPySyntax
		}
		return end(j, pyVal{kind: pyInt, i: n})
	}
	i := 0
	intEnd := digits(0, dec)
	isFloat := false
	if intEnd >= 0 {
		i = intEnd
	}
	if i < len(s) && s[i] == '.' {
		isFloat = true
		i++
		if j := digits(i, dec); j >= 0 {
			i = j
		} else if intEnd < 0 {
			return pyVal{}, errPySyntax
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		k := i + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		j := digits(k, dec)
		if j < 0 {
			return pyVal{}, errPySyntax
		}
		isFloat = true
		i = j
	}
	text := strings.ReplaceAll(s[:i], "_", "")
	if i < len(s) && (s[i] == 'j' || s[i] == 'J') {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return pyVal{}, errPySyntax
		}
		return end(i+1, pyVal{kind: pyComplex, im: f})
	}
	if isFloat {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return pyVal{}, errPySyntax
		}
		return end(i, pyVal{kind: pyFloat, f: f})
	}
	if len(text) > 1 && text[0] == '0' && strings.Trim(text, "0") != "" {
		return pyVal{}, errPySyntax // leading zeros in a decimal integer
	}
	n, good := new(big.Int).SetString(text, 10)
	if !good {
		return pyVal{}, errPySyntax
	}
	return end(i, pyVal{kind: pyInt, i: n})
}

// strings reads one or more adjacent string literals and concatenates
// them (mixing bytes and str is an error).
func (p *pyParser) strings() (pyVal, error) {
	var sb strings.Builder
	kind := pyKind(0)
	for n := 0; ; n++ {
		if n > 0 {
			c := p.peek()
			if c != '\'' && c != '"' && !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
				break
			}
			save := p.pos
			if c != '\'' && c != '"' {
				for p.pos < len(p.src) && isNameByte(p.src[p.pos]) {
					p.pos++
				}
				if p.pos == len(p.src) || p.src[p.pos] != '\'' && p.src[p.pos] != '"' {
					p.pos = save
					break
				}
				p.pos = save
			}
		}
		s, k, err := p.oneString()
		if err != nil {
			return pyVal{}, err
		}
		if n > 0 && k != kind {
			return pyVal{}, errPySyntax
		}
		kind = k
		sb.WriteString(s)
	}
	return pyVal{kind: kind, s: sb.String(), node: nodeConst}, nil
}

func (p *pyParser) oneString() (string, pyKind, error) {
	start := p.pos
	for p.pos < len(p.src) && p.src[p.pos] != '\'' && p.src[p.pos] != '"' {
		p.pos++
	}
	prefix := strings.ToLower(p.src[start:p.pos])
	switch prefix {
	case "", "r", "u", "b", "br", "rb":
	default:
		return "", 0, errPySyntax // f-strings and unknown prefixes
	}
	raw, bytesLit := strings.Contains(prefix, "r"), strings.Contains(prefix, "b")
	if p.pos == len(p.src) {
		return "", 0, errPySyntax
	}
	q := p.src[p.pos]
	quote := string(q)
	if strings.HasPrefix(p.src[p.pos:], strings.Repeat(quote, 3)) {
		quote = strings.Repeat(quote, 3)
	}
	p.pos += len(quote)
	start = p.pos
	for {
		if p.pos >= len(p.src) {
			return "", 0, errPySyntax
		}
		c := p.src[p.pos]
		if strings.HasPrefix(p.src[p.pos:], quote) {
			break
		}
		if c == '\\' {
			p.pos += 2
			if strings.HasPrefix(p.src[p.pos-1:], "\r\n") {
				p.pos++
			}
			continue
		}
		if len(quote) == 1 && (c == '\n' || c == '\r') {
			return "", 0, errPySyntax
		}
		p.pos++
	}
	body := p.src[start:p.pos]
	p.pos += len(quote)
	kind := pyStr
	if bytesLit {
		kind = pyBytes
		for i := 0; i < len(body); i++ {
			if body[i] >= 0x80 {
				return "", 0, errPySyntax
			}
		}
	}
	// Newlines in source are normalised to \n before tokenising.
	body = strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\r", "\n")
	if raw {
		return body, kind, nil
	}
	s, err := unescape(body, bytesLit)
	return s, kind, err
}

// unescape decodes Python's string escapes (bytes: no \u, \U, \N).
func unescape(body string, bytesLit bool) (string, error) {
	if strings.IndexByte(body, '\\') < 0 {
		return body, nil
	}
	var sb strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			sb.WriteByte(c)
			continue
		}
		i++
		if i >= len(body) {
			return "", errPySyntax
		}
		e := body[i]
		switch e {
		case '\n':
		case '\\', '\'', '"':
			sb.WriteByte(e)
		case 'a':
			sb.WriteByte(7)
		case 'b':
			sb.WriteByte(8)
		case 'f':
			sb.WriteByte(12)
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'v':
			sb.WriteByte(11)
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n, j := 0, i
			for j < len(body) && j < i+3 && body[j] >= '0' && body[j] <= '7' {
				n = n*8 + int(body[j]-'0')
				j++
			}
			i = j - 1
			if bytesLit {
				sb.WriteByte(byte(n))
			} else {
				sb.WriteRune(rune(n))
			}
		case 'x', 'u', 'U':
			width := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if bytesLit && e != 'x' {
				sb.WriteByte('\\')
				sb.WriteByte(e)
				continue
			}
			if i+1+width > len(body) {
				return "", errPySyntax
			}
			n, err := strconv.ParseUint(body[i+1:i+1+width], 16, 32)
			if err != nil || n > utf8.MaxRune {
				return "", errPySyntax
			}
			i += width
			if bytesLit {
				sb.WriteByte(byte(n))
			} else {
				sb.WriteRune(rune(n))
			}
		case 'N':
			if bytesLit {
				sb.WriteString(`\N`)
				continue
			}
			return "", errPySyntax // \N{name}: no Unicode name table here
		default:
			sb.WriteByte('\\')
			sb.WriteByte(e)
		}
	}
	return sb.String(), nil
}
