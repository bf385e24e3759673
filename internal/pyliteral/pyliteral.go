// Package pyliteral reads Python literals as ast.literal_eval does
// (CPython 3.11) and writes values as Python's repr() and str() do: what
// alpaca_eval's ranking parser and lm-evaluation-harness's doc_to_target
// (a Jinja rendering that looks like a list is read back with
// literal_eval) need.
package pyliteral

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

// Kind is the Python type of a Value.
type Kind uint8

// The kinds of Value.
const (
	None Kind = iota
	Bool
	Int
	Float
	Complex
	Str
	Bytes
	Ellipsis
	Tuple
	List
	Set
	Dict
)

// Value is one decoded Python literal.
type Value struct {
	Kind  Kind
	Bool  bool
	Int   *big.Int
	Float float64    // Float; real part of Complex
	Imag  float64    // imaginary part of Complex
	Str   string     // Str, Bytes
	Items []Value    // Tuple, List, Set; dict keys
	Vals  []Value    // dict values, parallel to Items
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

// ErrSyntax is the error for anything literal_eval rejects.
var ErrSyntax = errors.New("not a Python literal")

// maxPyLevel is CPython's tokenizer limit on nested brackets (MAXLEVEL).
const maxPyLevel = 200

type pyParser struct {
	src   string
	pos   int
	level int
}

// Eval is ast.literal_eval on a str.
func Eval(src string) (Value, error) {
	if !utf8.ValidString(src) || strings.IndexByte(src, 0) >= 0 {
		return Value{}, ErrSyntax
	}
	src = strings.TrimLeft(src, " \t")
	p := &pyParser{src: src}
	if err := p.skipBlankLines(); err != nil {
		return Value{}, err
	}
	v, err := p.exprList(true)
	if err != nil {
		return Value{}, err
	}
	// The rest of the line may hold only a comment; later lines only
	// blank lines or comments.
	p.skipSpace()
	if p.pos < len(p.src) && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
		return Value{}, ErrSyntax
	}
	for p.pos < len(p.src) {
		if err := p.skipBlankLines(); err != nil {
			return Value{}, err
		}
		if p.pos < len(p.src) {
			return Value{}, ErrSyntax
		}
	}
	if v, err = literal(v); err != nil {
		return Value{}, err
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
			return ErrSyntax // IndentationError
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
func (p *pyParser) exprList(allowTuple bool) (Value, error) {
	first, err := p.expr()
	if err != nil {
		return Value{}, err
	}
	if !allowTuple || p.peek() != ',' {
		return first, nil
	}
	items := []Value{first}
	for p.peek() == ',' {
		p.pos++
		if !p.startsExpr() {
			break
		}
		v, err := p.expr()
		if err != nil {
			return Value{}, err
		}
		items = append(items, v)
	}
	return Value{Kind: Tuple, Items: items, node: nodeOther}, nil
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
func (p *pyParser) expr() (Value, error) {
	left, err := p.unary()
	if err != nil {
		return Value{}, err
	}
	for {
		c := p.peek()
		if c != '+' && c != '-' {
			return left, nil
		}
		p.pos++
		right, err := p.unary()
		if err != nil {
			return Value{}, err
		}
		left = binOp(left, right, c == '-')
	}
}

func (p *pyParser) unary() (Value, error) {
	c := p.peek()
	if c != '+' && c != '-' {
		return p.atom()
	}
	p.pos++
	if d := p.peek(); d == '+' || d == '-' {
		return Value{}, ErrSyntax // literal_eval rejects a sign on a sign
	}
	operand, err := p.atom()
	if err != nil {
		return Value{}, err
	}
	return signed(operand, c == '-'), nil
}

// numeric reports whether v is a constant int, float or complex (not a
// bool), as literal_eval's _convert_num requires.
func numeric(v Value) bool {
	return v.node == nodeConst && (v.Kind == Int || v.Kind == Float || v.Kind == Complex)
}

// signed is literal_eval's UnaryOp rule: a sign applies only to a numeric
// constant; anything else is recorded as an invalid node.
func signed(v Value, neg bool) Value {
	if !numeric(v) {
		return Value{node: nodeOther, bad: true}
	}
	if neg {
		switch v.Kind {
		case Int:
			v.Int = new(big.Int).Neg(v.Int)
		case Float:
			v.Float = -v.Float
		case Complex:
			v.Float, v.Imag = -v.Float, -v.Imag
		}
	}
	v.node = nodeUnary
	return v
}

// binOp is literal_eval's BinOp rule: a (signed) real number plus or minus
// a complex constant.
func binOp(l, r Value, sub bool) Value {
	bad := Value{node: nodeOther, bad: true}
	if l.node != nodeConst && l.node != nodeUnary || (l.Kind != Int && l.Kind != Float) || !numeric(r) || r.Kind != Complex {
		return bad
	}
	re := l.Float
	if l.Kind == Int {
		re, _ = new(big.Float).SetInt(l.Int).Float64()
	}
	im := r.Imag
	rre := r.Float
	if sub {
		im, rre = -im, -rre
	}
	return Value{Kind: Complex, Float: re + rre, Imag: im, node: nodeBinOp}
}

// literal checks the literal_eval rules recursively: no invalid nodes,
// hashable dict keys and set members.
func literal(v Value) (Value, error) {
	if v.bad {
		return Value{}, ErrSyntax
	}
	switch v.Kind {
	case Tuple, List, Set, Dict:
		for i := range v.Items {
			if _, err := literal(v.Items[i]); err != nil {
				return Value{}, err
			}
			if (v.Kind == Set || v.Kind == Dict) && !hashable(v.Items[i]) {
				return Value{}, ErrSyntax // TypeError: unhashable type
			}
		}
		for i := range v.Vals {
			if _, err := literal(v.Vals[i]); err != nil {
				return Value{}, err
			}
		}
	}
	return v, nil
}

func hashable(v Value) bool {
	switch v.Kind {
	case List, Set, Dict:
		return false
	case Tuple:
		for _, it := range v.Items {
			if !hashable(it) {
				return false
			}
		}
	}
	return true
}

func (p *pyParser) open() error {
	if p.level >= maxPyLevel {
		return ErrSyntax // too many nested parentheses
	}
	p.level++
	p.pos++
	return nil
}

func (p *pyParser) atom() (Value, error) {
	c := p.peek()
	switch {
	case c == '(':
		if err := p.open(); err != nil {
			return Value{}, err
		}
		if p.peek() == ')' {
			p.level--
			p.pos++
			return Value{Kind: Tuple, node: nodeOther}, nil
		}
		first, err := p.expr()
		if err != nil {
			return Value{}, err
		}
		if p.peek() != ',' {
			if p.peek() != ')' {
				return Value{}, ErrSyntax
			}
			p.level--
			p.pos++
			return first, nil
		}
		items, err := p.seq(')', first)
		if err != nil {
			return Value{}, err
		}
		return Value{Kind: Tuple, Items: items, node: nodeOther}, nil
	case c == '[':
		if err := p.open(); err != nil {
			return Value{}, err
		}
		items, err := p.seq(']')
		if err != nil {
			return Value{}, err
		}
		return Value{Kind: List, Items: items, node: nodeOther}, nil
	case c == '{':
		return p.braces()
	case c == '\'' || c == '"':
		return p.strings()
	case c >= '0' && c <= '9' || c == '.' && p.pos+1 < len(p.src) && p.src[p.pos+1] >= '0' && p.src[p.pos+1] <= '9':
		return p.number()
	case c == '.':
		if strings.HasPrefix(p.src[p.pos:], "...") {
			p.pos += 3
			return Value{Kind: Ellipsis, node: nodeConst}, nil
		}
	case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
		return p.name()
	}
	return Value{}, ErrSyntax
}

// seq reads comma-separated expressions up to the closing bracket (which
// it consumes), the first already read when given.
func (p *pyParser) seq(closer byte, first ...Value) ([]Value, error) {
	items := append([]Value(nil), first...)
	for {
		c := p.peek()
		if c == closer {
			p.level--
			p.pos++
			return items, nil
		}
		if len(items) > 0 {
			if c != ',' {
				return nil, ErrSyntax
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

func (p *pyParser) braces() (Value, error) {
	if err := p.open(); err != nil {
		return Value{}, err
	}
	if p.peek() == '}' {
		p.level--
		p.pos++
		return Value{Kind: Dict, node: nodeOther}, nil
	}
	first, err := p.expr()
	if err != nil {
		return Value{}, err
	}
	if p.peek() != ':' {
		items, err := p.seq('}', first)
		if err != nil {
			return Value{}, err
		}
		return Value{Kind: Set, Items: items, node: nodeOther}, nil
	}
	d := Value{Kind: Dict, node: nodeOther}
	key := first
	for {
		p.pos++ // ':'
		val, err := p.expr()
		if err != nil {
			return Value{}, err
		}
		d.Items = append(d.Items, key)
		d.Vals = append(d.Vals, val)
		c := p.peek()
		if c == '}' {
			p.level--
			p.pos++
			return d, nil
		}
		if c != ',' {
			return Value{}, ErrSyntax
		}
		p.pos++
		if p.peek() == '}' {
			p.level--
			p.pos++
			return d, nil
		}
		if key, err = p.expr(); err != nil {
			return Value{}, err
		}
		if p.peek() != ':' {
			return Value{}, ErrSyntax
		}
	}
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func (p *pyParser) name() (Value, error) {
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
		return Value{}, ErrSyntax
	}
	switch word {
	case "True", "False":
		return Value{Kind: Bool, Bool: word == "True", node: nodeConst}, nil
	case "None":
		return Value{Kind: None, node: nodeConst}, nil
	case "set":
		if p.peek() != '(' {
			return Value{}, ErrSyntax
		}
		if err := p.open(); err != nil {
			return Value{}, err
		}
		if p.peek() != ')' {
			return Value{}, ErrSyntax
		}
		p.level--
		p.pos++
		return Value{Kind: Set, node: nodeOther}, nil
	}
	return Value{}, ErrSyntax
}

// number reads an int, float or imaginary literal (Python 3.11 lexical
// rules: underscores between digits, no leading zeros on a non-zero
// decimal int).
func (p *pyParser) number() (Value, error) {
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
	end := func(i int, v Value) (Value, error) {
		if i < len(s) && isNameByte(s[i]) {
			return Value{}, ErrSyntax
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
			return Value{}, ErrSyntax
		}
		n, good := new(big.Int).SetString(strings.ReplaceAll(s[i:j], "_", ""), base)
		if !good {
			return Value{}, ErrSyntax
		}
		return end(j, Value{Kind: Int, Int: n})
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
			return Value{}, ErrSyntax
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		k := i + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		j := digits(k, dec)
		if j < 0 {
			return Value{}, ErrSyntax
		}
		isFloat = true
		i = j
	}
	text := strings.ReplaceAll(s[:i], "_", "")
	if i < len(s) && (s[i] == 'j' || s[i] == 'J') {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return Value{}, ErrSyntax
		}
		return end(i+1, Value{Kind: Complex, Imag: f})
	}
	if isFloat {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return Value{}, ErrSyntax
		}
		return end(i, Value{Kind: Float, Float: f})
	}
	if len(text) > 1 && text[0] == '0' && strings.Trim(text, "0") != "" {
		return Value{}, ErrSyntax // leading zeros in a decimal integer
	}
	n, good := new(big.Int).SetString(text, 10)
	if !good {
		return Value{}, ErrSyntax
	}
	return end(i, Value{Kind: Int, Int: n})
}

// strings reads one or more adjacent string literals and concatenates
// them (mixing bytes and str is an error).
func (p *pyParser) strings() (Value, error) {
	var sb strings.Builder
	kind := Kind(0)
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
			return Value{}, err
		}
		if n > 0 && k != kind {
			return Value{}, ErrSyntax
		}
		kind = k
		sb.WriteString(s)
	}
	return Value{Kind: kind, Str: sb.String(), node: nodeConst}, nil
}

func (p *pyParser) oneString() (string, Kind, error) {
	start := p.pos
	for p.pos < len(p.src) && p.src[p.pos] != '\'' && p.src[p.pos] != '"' {
		p.pos++
	}
	prefix := strings.ToLower(p.src[start:p.pos])
	switch prefix {
	case "", "r", "u", "b", "br", "rb":
	default:
		return "", 0, ErrSyntax // f-strings and unknown prefixes
	}
	raw, bytesLit := strings.Contains(prefix, "r"), strings.Contains(prefix, "b")
	if p.pos == len(p.src) {
		return "", 0, ErrSyntax
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
			return "", 0, ErrSyntax
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
			return "", 0, ErrSyntax
		}
		p.pos++
	}
	body := p.src[start:p.pos]
	p.pos += len(quote)
	kind := Str
	if bytesLit {
		kind = Bytes
		for i := 0; i < len(body); i++ {
			if body[i] >= 0x80 {
				return "", 0, ErrSyntax
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
			return "", ErrSyntax
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
				return "", ErrSyntax
			}
			n, err := strconv.ParseUint(body[i+1:i+1+width], 16, 32)
			if err != nil || n > utf8.MaxRune {
				return "", ErrSyntax
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
			return "", ErrSyntax // \N{name}: no Unicode name table here
		default:
			sb.WriteByte('\\')
			sb.WriteByte(e)
		}
	}
	return sb.String(), nil
}
