package lmeval

import (
	"errors"
	"fmt"
	"strings"
)

// This file bounds what rendering a task file's template may cost, from
// outside the engine (github.com/ardanlabs/jinja has no bound of its
// own). Each expression and statement is parsed here as the engine
// parses it and written back with the operations that can cost much
// going through helpers that meter and bound them (guard.go's helpers in
// render.go); what the engine does between helpers costs a constant.
//
//   - Statements: if, elif, else, for and set only (lm-eval's templates
//     use no others); macro, call, filter blocks, loop controls and
//     recursive loops are refused, so nothing recurses. Blocks nest at
//     most maxNesting deep, and so do brackets and operators in an
//     expression of at most maxExprTokens tokens: the engine's parser and
//     evaluator recurse no deeper.
//   - Every value a filter, a method, a subscript, a comparison or an
//     arithmetic operator walks, and every value a call is given, passes
//     through __tally_w, which charges the render's steps for its size
//     (its values, and its text in bytesPerStep pieces) before the engine
//     walks it; a loop's iterable through __tally_iter (charged for its
//     items, a string's at most maxItems); a value a set statement keeps
//     through __tally_keep (at most maxValueBytes of text and maxItems
//     values, so a string doubled in a loop stops).
//   - The operators and filters that make more than they are given are
//     computed by helpers that know the result's size before they make it:
//   - and ~ (chains of either in one call), *, slices, replace and list;
//     indent is refused; range is tally's own (at most maxRange numbers).
//   - All the text a render writes passes through helpers (template text
//     included), at most maxOutput bytes.
//
// Past a bound, the render fails with an error naming it; any panic of
// the engine is the render's error too.
const (
	maxNesting    = 64
	maxExprTokens = 10_000
	bytesPerStep  = 64
	maxValueBytes = 16 << 20
	maxItems      = 1 << 20
	maxRange      = 100_000
	maxOutput     = 16 << 20
	// renderSteps is a render's budget of steps, and stepsPerDocStep more
	// for each step of its document's size: a template may walk its
	// document several times over. A step is about 10 to 100 ns of the
	// engine's work.
	renderSteps     = 1_000_000
	stepsPerDocStep = 16
)

// errBound is wrapped by the errors of a template past a bound.
var errBound = errors.New("past tally's template bounds")

// xnode is a parsed expression: kind, its text (an atom's source, an
// operator, a name) and its parts.
type xnode struct {
	kind string // atom list tuple dict attr item slice call filter test unary not bin and or cond
	text string
	kids []*xnode // slice: obj, start, stop, step (nil when absent)
	kw   []xkwarg
	neg  bool // test: "is not"
}

type xkwarg struct {
	name string
	val  *xnode
}

// xparser parses the tokens of an expression (spaces dropped) as the
// engine's parser does (its parse.go: parseExpression and below).
type xparser struct {
	toks  []token
	pos   int
	depth int
}

func (p *xparser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return token{}
}

func (p *xparser) peekAt(k int) token {
	if p.pos+k < len(p.toks) {
		return p.toks[p.pos+k]
	}
	return token{}
}

func (p *xparser) next() token {
	t := p.peek()
	p.pos++
	return t
}

func (p *xparser) isOp(s string) bool { t := p.peek(); return t.kind == 'o' && t.text == s }
func (p *xparser) isKw(s string) bool { t := p.peek(); return t.kind == 'i' && t.text == s }
func (p *xparser) done() bool         { return p.pos >= len(p.toks) }
func (p *xparser) fail(what string) error {
	if p.done() {
		return fmt.Errorf("template: %s at the end of an expression", what)
	}
	return fmt.Errorf("template: %s at %q", what, p.peek().text)
}

func (p *xparser) enter() error {
	p.depth++
	if p.depth > maxNesting {
		return fmt.Errorf("template: an expression nested more than %d deep: refused (%w)", maxNesting, errBound)
	}
	return nil
}

func (p *xparser) expect(op string) error {
	if !p.isOp(op) {
		return p.fail("expected " + op)
	}
	p.pos++
	return nil
}

// parseExpr parses a whole expression (the engine's parseExpr).
func parseExpr(src string) (*xnode, error) {
	all, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	p := &xparser{}
	for _, t := range all {
		if t.kind != ' ' {
			p.toks = append(p.toks, t)
		}
	}
	if len(p.toks) > maxExprTokens {
		return nil, fmt.Errorf("template: an expression of more than %d tokens: refused (%w)", maxExprTokens, errBound)
	}
	if len(p.toks) == 0 {
		return &xnode{kind: "atom", text: "none"}, nil
	}
	n, err := p.expression()
	if err != nil {
		return nil, err
	}
	if !p.done() {
		return nil, p.fail("unexpected token")
	}
	return n, nil
}

func (p *xparser) expression() (*xnode, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer func() { p.depth-- }()
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.isKw("if") {
		p.pos++
		cond, err := p.or()
		if err != nil {
			return nil, err
		}
		n := &xnode{kind: "cond", kids: []*xnode{e, cond, nil}}
		if p.isKw("else") {
			p.pos++
			if n.kids[2], err = p.expression(); err != nil {
				return nil, err
			}
		}
		return n, nil
	}
	return e, nil
}

// chain parses operand (op operand)* left to right into kind nodes.
func (p *xparser) chain(kind string, ops func() (string, bool), operand func() (*xnode, error)) (*xnode, error) {
	left, err := operand()
	if err != nil {
		return nil, err
	}
	for {
		op, ok := ops()
		if !ok {
			return left, nil
		}
		right, err := operand()
		if err != nil {
			return nil, err
		}
		left = &xnode{kind: kind, text: op, kids: []*xnode{left, right}}
		if err := p.chainDepth(left); err != nil {
			return nil, err
		}
	}
}

// chainDepth bounds a left-deep chain (a - b - … - z): the engine
// evaluates it by recursion, one level an operator; a chain of + or of ~
// is written back as one call, and counts one level.
func (p *xparser) chainDepth(n *xnode) error {
	d := 0
	for ; n != nil && len(n.kids) > 0 && (n.kind == "bin" || n.kind == "and" || n.kind == "or"); n = n.kids[0] {
		if l := n.kids[0]; n.kind == "bin" && (n.text == "+" || n.text == "~") && l.kind == "bin" && l.text == n.text {
			continue
		}
		d++
	}
	if p.depth+d > 4*maxNesting {
		return fmt.Errorf("template: a chain of more than %d operators: refused (%w)", 4*maxNesting, errBound)
	}
	return nil
}

func (p *xparser) or() (*xnode, error) {
	return p.chain("or", func() (string, bool) { ok := p.isKw("or"); p.skipIf(ok); return "or", ok }, p.and)
}

func (p *xparser) and() (*xnode, error) {
	return p.chain("and", func() (string, bool) { ok := p.isKw("and"); p.skipIf(ok); return "and", ok }, p.not)
}

func (p *xparser) skipIf(ok bool) {
	if ok {
		p.pos++
	}
}

func (p *xparser) not() (*xnode, error) {
	if p.isKw("not") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		p.pos++
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return &xnode{kind: "not", kids: []*xnode{x}}, nil
	}
	return p.comparison()
}

func (p *xparser) comparison() (*xnode, error) {
	left, err := p.concat()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		switch {
		case t.kind == 'o' && (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == ">" || t.text == "<=" || t.text == ">="):
			p.pos++
			right, err := p.concat()
			if err != nil {
				return nil, err
			}
			left = &xnode{kind: "bin", text: t.text, kids: []*xnode{left, right}}
		case t.kind == 'i' && t.text == "in":
			p.pos++
			right, err := p.concat()
			if err != nil {
				return nil, err
			}
			left = &xnode{kind: "bin", text: "in", kids: []*xnode{left, right}}
		case t.kind == 'i' && t.text == "not" && p.peekAt(1).kind == 'i' && p.peekAt(1).text == "in":
			p.pos += 2
			right, err := p.concat()
			if err != nil {
				return nil, err
			}
			left = &xnode{kind: "bin", text: "not in", kids: []*xnode{left, right}}
		case t.kind == 'i' && t.text == "is":
			p.pos++
			n := &xnode{kind: "test", kids: []*xnode{left}}
			if p.isKw("not") {
				p.pos++
				n.neg = true
			}
			if p.done() {
				return nil, p.fail("expected a test name")
			}
			n.text = p.next().text
			if p.isOp("(") {
				p.pos++
				for !p.done() && !p.isOp(")") {
					a, err := p.expression()
					if err != nil {
						return nil, err
					}
					n.kids = append(n.kids, a)
					if p.isOp(",") {
						p.pos++
					}
				}
				if err := p.expect(")"); err != nil {
					return nil, err
				}
			}
			left = n
		default:
			return left, nil
		}
		if err := p.chainDepth(left); err != nil {
			return nil, err
		}
	}
}

func (p *xparser) concat() (*xnode, error) {
	return p.chain("bin", func() (string, bool) { ok := p.isOp("~"); p.skipIf(ok); return "~", ok }, p.addSub)
}

func (p *xparser) addSub() (*xnode, error) {
	return p.chain("bin", func() (string, bool) {
		t := p.peek()
		ok := t.kind == 'o' && (t.text == "+" || t.text == "-")
		p.skipIf(ok)
		return t.text, ok
	}, p.mulDiv)
}

func (p *xparser) mulDiv() (*xnode, error) {
	return p.chain("bin", func() (string, bool) {
		t := p.peek()
		ok := t.kind == 'o' && (t.text == "*" || t.text == "/" || t.text == "%" || t.text == "//")
		p.skipIf(ok)
		return t.text, ok
	}, p.power)
}

func (p *xparser) power() (*xnode, error) {
	base, err := p.unary()
	if err != nil {
		return nil, err
	}
	if p.isOp("**") {
		p.pos++
		exp, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &xnode{kind: "bin", text: "**", kids: []*xnode{base, exp}}, nil
	}
	return base, nil
}

func (p *xparser) unary() (*xnode, error) {
	if p.isOp("-") || p.isOp("+") {
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		op := p.next().text
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &xnode{kind: "unary", text: op, kids: []*xnode{x}}, nil
	}
	return p.postfix()
}

func (p *xparser) postfix() (*xnode, error) {
	e, err := p.atom()
	if err != nil {
		return nil, err
	}
	for {
		switch {
		case p.isOp("."):
			p.pos++
			name := p.next()
			if name.kind != 'i' && name.kind != 'n' {
				return nil, p.fail("expected an attribute name")
			}
			e = &xnode{kind: "attr", text: name.text, kids: []*xnode{e}}
			if p.isOp("(") {
				p.pos++
				c := &xnode{kind: "call", kids: []*xnode{e}}
				if err := p.callArgs(c); err != nil {
					return nil, err
				}
				e = c
			}
		case p.isOp("["):
			p.pos++
			var start, stop, step *xnode
			slice := p.isOp(":")
			if !slice {
				if start, err = p.expression(); err != nil {
					return nil, err
				}
				slice = p.isOp(":")
			}
			if slice {
				if p.isOp(":") {
					p.pos++
				}
				if !p.isOp("]") && !p.isOp(":") {
					if stop, err = p.expression(); err != nil {
						return nil, err
					}
				}
				if p.isOp(":") {
					p.pos++
					if !p.isOp("]") {
						if step, err = p.expression(); err != nil {
							return nil, err
						}
					}
				}
				if err := p.expect("]"); err != nil {
					return nil, err
				}
				e = &xnode{kind: "slice", kids: []*xnode{e, start, stop, step}}
			} else {
				if err := p.expect("]"); err != nil {
					return nil, err
				}
				e = &xnode{kind: "item", kids: []*xnode{e, start}}
			}
		case p.isOp("("):
			p.pos++
			c := &xnode{kind: "call", kids: []*xnode{e}}
			if err := p.callArgs(c); err != nil {
				return nil, err
			}
			e = c
		case p.isOp("|"):
			p.pos++
			name := p.next()
			if name.kind != 'i' {
				return nil, p.fail("expected a filter name")
			}
			f := &xnode{kind: "filter", text: name.text, kids: []*xnode{e}}
			if p.isOp("(") {
				p.pos++
				if err := p.callArgs(f); err != nil {
					return nil, err
				}
			}
			e = f
		default:
			return e, nil
		}
		if err := p.chainDepth(e); err != nil {
			return nil, err
		}
	}
}

// callArgs reads arguments up to ")" into n (kids after the first, kw).
func (p *xparser) callArgs(n *xnode) error {
	for !p.done() && !p.isOp(")") {
		if t := p.peek(); t.kind == 'i' && p.peekAt(1).kind == 'o' && p.peekAt(1).text == "=" {
			p.pos += 2
			v, err := p.expression()
			if err != nil {
				return err
			}
			n.kw = append(n.kw, xkwarg{t.text, v})
		} else {
			a, err := p.expression()
			if err != nil {
				return err
			}
			n.kids = append(n.kids, a)
		}
		if p.isOp(",") {
			p.pos++
		}
	}
	return p.expect(")")
}

func (p *xparser) atom() (*xnode, error) {
	if p.done() {
		return nil, p.fail("expected a value")
	}
	t := p.peek()
	switch {
	case t.kind == 's' || t.kind == 'n' || t.kind == 'i' || t.kind == 'a':
		p.pos++
		return &xnode{kind: "atom", text: t.text}, nil
	case t.kind == 'o' && t.text == "(":
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		p.pos++
		if p.isOp(")") {
			p.pos++
			return &xnode{kind: "tuple"}, nil
		}
		e, err := p.expression()
		if err != nil {
			return nil, err
		}
		if p.isOp(",") {
			n := &xnode{kind: "tuple", kids: []*xnode{e}}
			for p.isOp(",") {
				p.pos++
				if p.isOp(")") {
					break
				}
				x, err := p.expression()
				if err != nil {
					return nil, err
				}
				n.kids = append(n.kids, x)
			}
			return n, p.expect(")")
		}
		return e, p.expect(")")
	case t.kind == 'o' && t.text == "[":
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		p.pos++
		n := &xnode{kind: "list"}
		for !p.done() && !p.isOp("]") {
			x, err := p.expression()
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, x)
			if p.isOp(",") {
				p.pos++
			}
		}
		return n, p.expect("]")
	case t.kind == 'o' && t.text == "{":
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		p.pos++
		n := &xnode{kind: "dict"}
		for !p.done() && !p.isOp("}") {
			k, err := p.expression()
			if err != nil {
				return nil, err
			}
			if err := p.expect(":"); err != nil {
				return nil, err
			}
			v, err := p.expression()
			if err != nil {
				return nil, err
			}
			n.kids = append(n.kids, k, v)
			if p.isOp(",") {
				p.pos++
			}
		}
		return n, p.expect("}")
	case t.kind == 'o' && t.text == "-":
		if err := p.enter(); err != nil {
			return nil, err
		}
		defer func() { p.depth-- }()
		p.pos++
		x, err := p.atom()
		if err != nil {
			return nil, err
		}
		return &xnode{kind: "unary", text: "-", kids: []*xnode{x}}, nil
	}
	return nil, p.fail("unexpected token")
}

// The filters and methods the guard handles itself.
var (
	// guardFilters are computed by helpers that bound their result.
	guardFilters = map[string]string{"replace": "__tally_replace", "list": "__tally_list"}
	// refusedFilters make much of little in one step (indent, fromjson)
	// or cost more than their input's size to compute (sort, dictsort,
	// unique compare or print every pair or item); lm-eval's templates
	// use none of them.
	refusedFilters = map[string]bool{"indent": true, "fromjson": true, "from_json": true, "sort": true, "dictsort": true, "unique": true}
	// refusedMethods change a list or a dict in place (a list can then
	// hold itself) or make much of little (str.format).
	refusedMethods = map[string]bool{"append": true, "pop": true, "insert": true, "update": true, "extend": true,
		"remove": true, "clear": true, "setdefault": true, "format": true}
	// guardMethods are str methods computed by helpers.
	guardMethods = map[string]string{"replace": "__tally_replace_method"}
)

// emit writes n back as the engine will read it, with the guard's
// helpers where they go.
func emit(b *strings.Builder, n *xnode) error {
	if n == nil {
		b.WriteString("none")
		return nil
	}
	switch n.kind {
	case "atom":
		b.WriteString(n.text)
	case "tuple", "list":
		open, close := "(", ")"
		if n.kind == "list" {
			open, close = "[", "]"
		}
		b.WriteString(open)
		for i, k := range n.kids {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := emit(b, k); err != nil {
				return err
			}
		}
		if n.kind == "tuple" && len(n.kids) == 1 {
			b.WriteString(",")
		}
		b.WriteString(close)
	case "dict":
		b.WriteString("{")
		for i := 0; i+1 < len(n.kids); i += 2 {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := emitW(b, n.kids[i]); err != nil {
				return err
			}
			b.WriteString(": ")
			if err := emit(b, n.kids[i+1]); err != nil {
				return err
			}
		}
		b.WriteString("}")
	case "attr":
		if err := emit(b, n.kids[0]); err != nil {
			return err
		}
		b.WriteString("." + n.text)
	case "item":
		if err := emitW(b, n.kids[0]); err != nil {
			return err
		}
		b.WriteString("[")
		if err := emit(b, n.kids[1]); err != nil {
			return err
		}
		b.WriteString("]")
	case "slice":
		b.WriteString("__tally_slice(")
		for i, k := range n.kids {
			if i > 0 {
				b.WriteString(", ")
			}
			w := emit
			if i == 0 {
				w = emitW
			}
			if err := w(b, k); err != nil {
				return err
			}
		}
		b.WriteString(")")
	case "call":
		return emitCall(b, n)
	case "filter":
		if refusedFilters[n.text] {
			return fmt.Errorf("template: filter %s is not supported", n.text)
		}
		if h, ok := guardFilters[n.text]; ok {
			return emitHelper(b, h, n.kids, n.kw)
		}
		if err := emitW(b, n.kids[0]); err != nil {
			return err
		}
		b.WriteString("|" + n.text)
		if len(n.kids) > 1 || len(n.kw) > 0 {
			if err := emitArgs(b, n.kids[1:], n.kw); err != nil {
				return err
			}
		}
	case "test":
		b.WriteString("(")
		if err := emitW(b, n.kids[0]); err != nil {
			return err
		}
		b.WriteString(" is ")
		if n.neg {
			b.WriteString("not ")
		}
		b.WriteString(n.text)
		if len(n.kids) > 1 {
			if err := emitArgs(b, n.kids[1:], nil); err != nil {
				return err
			}
		}
		b.WriteString(")")
	case "unary":
		b.WriteString("(" + n.text)
		if err := emitW(b, n.kids[0]); err != nil {
			return err
		}
		b.WriteString(")")
	case "not":
		b.WriteString("(not ")
		if err := emit(b, n.kids[0]); err != nil {
			return err
		}
		b.WriteString(")")
	case "and", "or":
		b.WriteString("(")
		if err := emit(b, n.kids[0]); err != nil {
			return err
		}
		b.WriteString(" " + n.kind + " ")
		if err := emit(b, n.kids[1]); err != nil {
			return err
		}
		b.WriteString(")")
	case "cond":
		b.WriteString("(")
		if err := emit(b, n.kids[0]); err != nil {
			return err
		}
		b.WriteString(" if ")
		if err := emit(b, n.kids[1]); err != nil {
			return err
		}
		if n.kids[2] != nil {
			b.WriteString(" else ")
			if err := emit(b, n.kids[2]); err != nil {
				return err
			}
		} else {
			// jinja2's cond_expr_undefined: a plain Undefined, even under
			// StrictUndefined (it prints as "").
			b.WriteString(" else __tally_cond_undefined()")
		}
		b.WriteString(")")
	case "bin":
		switch n.text {
		case "+", "~":
			// A chain of one operator is one call: the result is made
			// once, its size known first.
			var terms []*xnode
			for x := n; ; x = x.kids[0] {
				terms = append(terms, x.kids[1])
				if x.kids[0].kind != "bin" || x.kids[0].text != n.text {
					terms = append(terms, x.kids[0])
					break
				}
			}
			for i, j := 0, len(terms)-1; i < j; i, j = i+1, j-1 {
				terms[i], terms[j] = terms[j], terms[i]
			}
			h := "__tally_add"
			if n.text == "~" {
				h = "__tally_cat"
			}
			return emitHelper(b, h, terms, nil)
		case "*":
			return emitHelper(b, "__tally_mul", n.kids, nil)
		}
		b.WriteString("(")
		if err := emitW(b, n.kids[0]); err != nil {
			return err
		}
		b.WriteString(" " + n.text + " ")
		if err := emitW(b, n.kids[1]); err != nil {
			return err
		}
		b.WriteString(")")
	default:
		return fmt.Errorf("template: cannot write back a %s", n.kind)
	}
	return nil
}

// emitW writes n through __tally_w, which charges its size.
func emitW(b *strings.Builder, n *xnode) error {
	if n != nil && n.kind == "atom" && (n.text == "none" || n.text == "None" || n.text == "true" || n.text == "false" ||
		n.text == "True" || n.text == "False" || strings.IndexByte("0123456789", n.text[0]) >= 0) {
		return emit(b, n) // a literal costs nothing to walk
	}
	b.WriteString("__tally_w(")
	if err := emit(b, n); err != nil {
		return err
	}
	b.WriteString(")")
	return nil
}

// emitCall writes a call: a method's receiver and every argument through
// __tally_w; refused methods refused, guarded ones computed by helpers.
func emitCall(b *strings.Builder, n *xnode) error {
	fn := n.kids[0]
	if fn.kind == "attr" {
		if refusedMethods[fn.text] {
			return fmt.Errorf("template: method %s is not supported", fn.text)
		}
		if h, ok := guardMethods[fn.text]; ok {
			return emitHelper(b, h, append([]*xnode{fn.kids[0]}, n.kids[1:]...), n.kw)
		}
		if err := emitW(b, fn.kids[0]); err != nil {
			return err
		}
		b.WriteString("." + fn.text)
	} else if err := emit(b, fn); err != nil {
		return err
	}
	return emitArgs(b, n.kids[1:], n.kw)
}

func emitHelper(b *strings.Builder, name string, args []*xnode, kw []xkwarg) error {
	b.WriteString(name)
	return emitArgs(b, args, kw)
}

// emitArgs writes "(a, b, k=v)", each through __tally_w.
func emitArgs(b *strings.Builder, args []*xnode, kw []xkwarg) error {
	b.WriteString("(")
	for i, a := range args {
		if i > 0 {
			b.WriteString(", ")
		}
		if err := emitW(b, a); err != nil {
			return err
		}
	}
	for i, k := range kw {
		if i > 0 || len(args) > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k.name + "=")
		if err := emitW(b, k.val); err != nil {
			return err
		}
	}
	b.WriteString(")")
	return nil
}

// guardExpr parses an expression and writes it back guarded.
func guardExpr(src string) (string, error) {
	n, err := parseExpr(src)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := emit(&b, n); err != nil {
		return "", err
	}
	return b.String(), nil
}

// guardStatement writes a statement back guarded, and says how it
// changes the nesting of blocks (+1 opens, -1 closes). Only the
// statements lm-eval's templates use are read.
func guardStatement(src string) (string, int, error) {
	all, err := tokenize(src)
	if err != nil {
		return "", 0, err
	}
	var toks []token
	for _, t := range all {
		if t.kind != ' ' {
			toks = append(toks, t)
		}
	}
	if len(toks) == 0 {
		return "", 0, errors.New("template: an empty statement {% %}")
	}
	kw := toks[0].text
	rest := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(src), kw))
	switch kw {
	case "if", "elif":
		e, err := guardExpr(rest)
		if err != nil {
			return "", 0, err
		}
		if kw == "if" {
			return "if " + e, 1, nil
		}
		return "elif " + e, 0, nil
	case "else":
		return "else", 0, nil
	case "endif", "endfor", "endset":
		if len(toks) > 1 {
			return "", 0, fmt.Errorf("template: {%% %s %%} takes nothing after it", kw)
		}
		return kw, -1, nil
	case "for":
		return guardFor(toks[1:])
	case "set":
		// The engine cuts {% set %} at its first "=": a block set has none.
		eq := -1
		for i, t := range toks {
			if t.kind == 'o' && t.text == "=" {
				eq = i
				break
			}
		}
		if eq < 0 {
			return "set " + joinTokensTight(toks[1:]), 1, nil
		}
		target := joinTokensTight(toks[1:eq])
		v, err := guardTokens(toks[eq+1:])
		if err != nil {
			return "", 0, err
		}
		return "set " + target + " = __tally_keep(" + v + ")", 0, nil
	}
	return "", 0, fmt.Errorf("template: {%% %s %%} is not supported (tally renders the statements if, for and set)", kw)
}

// guardFor writes "for TARGETS in ITER [if COND]" back guarded, the
// iterable through __tally_iter; a recursive loop is refused.
func guardFor(toks []token) (string, int, error) {
	in := -1
	for i, t := range toks {
		if t.kind == 'i' && t.text == "in" {
			in = i
			break
		}
	}
	if in < 1 {
		return "", 0, errors.New("template: a for loop without in")
	}
	rest := toks[in+1:]
	// The engine takes the first "if" and "recursive" outside brackets.
	depth, ifAt := 0, -1
	for i, t := range rest {
		if t.kind == 'o' {
			switch t.text {
			case "(", "[", "{":
				depth++
			case ")", "]", "}":
				depth--
			}
		}
		if depth == 0 && t.kind == 'i' && t.text == "recursive" {
			return "", 0, errors.New("template: recursive loops are not supported")
		}
		if depth == 0 && t.kind == 'i' && t.text == "if" && ifAt < 0 {
			ifAt = i
		}
	}
	iterToks, condToks := rest, []token(nil)
	if ifAt >= 0 {
		iterToks, condToks = rest[:ifAt], rest[ifAt+1:]
	}
	iter, err := guardTokens(iterToks)
	if err != nil {
		return "", 0, err
	}
	out := "for " + joinTokensTight(toks[:in]) + " in __tally_iter(" + iter + ")"
	if condToks != nil {
		c, err := guardTokens(condToks)
		if err != nil {
			return "", 0, err
		}
		out += " if " + c
	}
	return out, 1, nil
}

func guardTokens(toks []token) (string, error) { return guardExpr(joinTokensSpaced(toks)) }

// joinTokensTight joins a statement's targets (names, dots, commas) as
// the engine reads them: with no space (it cuts "ns.attr" at the dot).
func joinTokensTight(toks []token) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteString(t.text)
	}
	return b.String()
}

// joinTokensSpaced joins tokens with a space between each (the spaces
// were dropped; strings and numbers are kept as written).
func joinTokensSpaced(toks []token) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t.text)
	}
	return b.String()
}
