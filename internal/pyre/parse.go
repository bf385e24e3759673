package pyre

import (
	"strconv"
	"strings"
	"unicode"
)

// The flags a pattern may set inline.
const (
	flagIgnoreCase = 1 << iota
	flagLocale
	flagMultiline
	flagDotAll
	flagVerbose
	flagASCII
	flagUnicode
)

var flagLetters = map[rune]int{'i': flagIgnoreCase, 'L': flagLocale, 'm': flagMultiline, 's': flagDotAll,
	'x': flagVerbose, 'a': flagASCII, 'u': flagUnicode}

const typeFlags = flagASCII | flagLocale | flagUnicode

// maxRepeat is sre's MAXREPEAT: an unbounded repeat's maximum.
const maxRepeat = 4294967295

// parser reads a pattern as re/_parser.py does. Python's tokenizer yields
// a character, or a backslash with the character after it; here tok
// returns the same.
type parser struct {
	src     []rune
	pos     int
	pattern string
	groups  int
	names   map[string]int
	closed  map[int]bool // groups whose ")" has been read
	widths  map[int][2]int
	flags   int // global flags
	// lookbehindGroups is the number of groups open when the outermost
	// lookbehind began (-1 outside one).
	lookbehindGroups int
}

func (p *parser) errAt(pos int, msg string) *Error {
	return &Error{Pattern: p.pattern, Msg: msg, Pos: pos}
}

func (p *parser) unsupported(pos int, msg string) *Error {
	return &Error{Pattern: p.pattern, Msg: msg, Pos: pos, Unsupported: true}
}

// peek returns the next token without consuming it ("" at the end).
func (p *parser) peek() string {
	if p.pos >= len(p.src) {
		return ""
	}
	if p.src[p.pos] == '\\' && p.pos+1 < len(p.src) {
		return string(p.src[p.pos : p.pos+2])
	}
	return string(p.src[p.pos])
}

// get consumes the next token; a trailing lone backslash is an error.
func (p *parser) get() (string, error) {
	if p.pos >= len(p.src) {
		return "", nil
	}
	if p.src[p.pos] == '\\' {
		if p.pos+1 >= len(p.src) {
			return "", p.errAt(len(p.src)-1, "bad escape (end of pattern)")
		}
		p.pos += 2
		return string(p.src[p.pos-2 : p.pos]), nil
	}
	p.pos++
	return string(p.src[p.pos-1]), nil
}

func (p *parser) match(tok string) bool {
	if p.peek() == tok && tok != "" {
		p.pos += len([]rune(tok))
		return true
	}
	return false
}

func (p *parser) getWhile(n int, set string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		c := p.peek()
		if len([]rune(c)) != 1 || !strings.Contains(set, c) {
			break
		}
		b.WriteString(c)
		p.pos++
	}
	return b.String()
}

func (p *parser) getUntil(term rune, name string) (string, error) {
	start := p.pos
	for {
		if p.pos >= len(p.src) {
			if p.pos == start {
				return "", p.errAt(p.pos, "missing "+name)
			}
			return "", p.errAt(start, "missing "+string(term)+", unterminated name")
		}
		c := p.src[p.pos]
		p.pos++
		if c == term {
			if p.pos-1 == start {
				return "", p.errAt(p.pos-1, "missing "+name)
			}
			return string(p.src[start : p.pos-1]), nil
		}
	}
}

const (
	digits    = "0123456789"
	octDigits = "01234567"
	hexDigits = "0123456789abcdefABCDEF"
)

func isASCIILetter(c rune) bool { return c < 128 && unicode.IsLetter(c) }

// isIdentifier is str.isidentifier for the group names patterns use.
func isIdentifier(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_' || unicode.IsLetter(c) || unicode.Is(unicode.Nl, c):
		case i > 0 && (unicode.IsDigit(c) || unicode.Is(unicode.Mn, c) || unicode.Is(unicode.Mc, c) || unicode.Is(unicode.Pc, c)):
		default:
			return false
		}
	}
	return true
}

func (p *parser) parseAll() (node, error) {
	p.lookbehindGroups = -1
	p.closed = map[int]bool{}
	p.widths = map[int][2]int{}
	// Global flags are read first (3.11 requires them at the start), so
	// that they apply to the whole pattern as sre compiles them.
	if err := p.readGlobalFlags(); err != nil {
		return nil, err
	}
	if p.flags&flagIgnoreCase != 0 {
		return nil, p.unsupported(-1, "the IGNORECASE flag (i) is not supported")
	}
	if p.flags&flagLocale != 0 {
		return nil, p.errAt(-1, "bad inline flags: cannot use 'L' flag with a str pattern")
	}
	n, err := p.parseSub(p.flags, 0)
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.src) {
		return nil, p.errAt(p.pos, "unbalanced parenthesis")
	}
	return n, nil
}

// readGlobalFlags consumes leading (?flags) groups (and, with VERBOSE,
// white space and comments between them).
func (p *parser) readGlobalFlags() error {
	for {
		if p.flags&flagVerbose != 0 {
			p.skipVerbose()
		}
		save := p.pos
		if !(p.pos+2 < len(p.src) && p.src[p.pos] == '(' && p.src[p.pos+1] == '?') {
			return nil
		}
		p.pos += 2
		add, isGlobal, ok, err := p.scanFlags()
		if err != nil {
			return err
		}
		if !ok || !isGlobal {
			p.pos = save
			return nil
		}
		if t := (p.flags | add) & typeFlags; t != 0 && t&(t-1) != 0 {
			return p.errAt(p.pos, "bad inline flags: flags 'a', 'u' and 'L' are incompatible")
		}
		p.flags |= add
	}
}

// scanFlags reads "aiLmsux)" after "(?" when it is a global flags group;
// ok is false when the group is something else (left to the parser).
func (p *parser) scanFlags() (add int, global, ok bool, err error) {
	start := p.pos
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		f, isFlag := flagLetters[c]
		if !isFlag {
			break
		}
		if (f&typeFlags) != 0 && (add&typeFlags) != 0 && (add&typeFlags) != f {
			return 0, false, false, p.errAt(p.pos, "bad inline flags: flags 'a', 'u' and 'L' are incompatible")
		}
		add |= f
		p.pos++
	}
	if p.pos == start || p.pos >= len(p.src) || p.src[p.pos] != ')' {
		p.pos = start
		return 0, false, false, nil
	}
	p.pos++
	return add, true, true, nil
}

func (p *parser) skipVerbose() {
	for p.pos < len(p.src) {
		c := p.src[p.pos]
		switch {
		case strings.ContainsRune(" \t\n\r\v\f", c):
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' {
				p.pos++
			}
		default:
			return
		}
	}
}

// parseSub parses an alternation a|b|c.
func (p *parser) parseSub(flags, depth int) (node, error) {
	var items []node
	for {
		n, err := p.parseSeq(flags, depth)
		if err != nil {
			return nil, err
		}
		items = append(items, n)
		if !p.match("|") {
			break
		}
	}
	if len(items) == 1 {
		return items[0], nil
	}
	return &alt{branches: items}, nil
}

// parseSeq parses a sequence up to "|", ")" or the end.
func (p *parser) parseSeq(flags, depth int) (node, error) {
	var seqItems []node
	verbose := flags&flagVerbose != 0
	for {
		this := p.peek()
		if this == "" || this == "|" || this == ")" {
			break
		}
		here := p.pos
		if _, err := p.get(); err != nil {
			return nil, err
		}
		if verbose {
			if len([]rune(this)) == 1 && strings.Contains(" \t\n\r\v\f", this) {
				continue
			}
			if this == "#" {
				for p.pos < len(p.src) && p.src[p.pos] != '\n' {
					p.pos++
				}
				if p.pos < len(p.src) {
					p.pos++
				}
				continue
			}
		}
		r := []rune(this)
		switch {
		case r[0] == '\\':
			n, err := p.escape(this, here, flags)
			if err != nil {
				return nil, err
			}
			seqItems = append(seqItems, n)
		case !strings.ContainsRune(".\\[{()*+?^$|", r[0]):
			seqItems = append(seqItems, &lit{c: r[0]})
		case this == "[":
			n, err := p.class(here, flags)
			if err != nil {
				return nil, err
			}
			seqItems = append(seqItems, n)
		case strings.ContainsRune("*+?{", r[0]):
			lo, hi := 0, 0
			switch this {
			case "?":
				lo, hi = 0, 1
			case "*":
				lo, hi = 0, maxRepeat
			case "+":
				lo, hi = 1, maxRepeat
			case "{":
				if p.peek() == "}" {
					seqItems = append(seqItems, &lit{c: '{'})
					continue
				}
				lo, hi = 0, maxRepeat
				after := p.pos
				los := p.getWhile(1<<30, digits)
				his := ""
				if p.match(",") {
					his = p.getWhile(1<<30, digits)
				} else {
					his = los
				}
				if !p.match("}") {
					seqItems = append(seqItems, &lit{c: '{'})
					p.pos = after
					continue
				}
				if los != "" {
					v, err := strconv.ParseUint(los, 10, 64)
					if err != nil || v >= maxRepeat {
						return nil, p.errAt(here, "the repetition number is too large")
					}
					lo = int(v)
				}
				if his != "" {
					v, err := strconv.ParseUint(his, 10, 64)
					if err != nil || v >= maxRepeat {
						return nil, p.errAt(here, "the repetition number is too large")
					}
					hi = int(v)
					if hi < lo {
						return nil, p.errAt(here, "min repeat greater than max repeat")
					}
				}
			}
			if len(seqItems) == 0 {
				return nil, p.errAt(here, "nothing to repeat")
			}
			item := seqItems[len(seqItems)-1]
			if _, isAt := item.(*at); isAt {
				return nil, p.errAt(here, "nothing to repeat")
			}
			if _, isRep := item.(*repeat); isRep {
				return nil, p.errAt(here, "multiple repeat")
			}
			kind := greedy
			if p.match("?") {
				kind = lazy
			} else if p.match("+") {
				kind = possessive
			}
			seqItems[len(seqItems)-1] = newRepeat(item, lo, hi, kind)
		case this == ".":
			seqItems = append(seqItems, &anyChar{dotAll: flags&flagDotAll != 0})
		case this == "(":
			n, skip, err := p.group(here, flags, depth)
			if err != nil {
				return nil, err
			}
			if !skip {
				seqItems = append(seqItems, n)
			}
		case this == "^":
			k := atBeginning
			if flags&flagMultiline != 0 {
				k = atBeginningLine
			}
			seqItems = append(seqItems, &at{kind: k})
		case this == "$":
			k := atEnd
			if flags&flagMultiline != 0 {
				k = atEndLine
			}
			seqItems = append(seqItems, &at{kind: k})
		}
	}
	if len(seqItems) == 1 {
		return seqItems[0], nil
	}
	return &seq{items: seqItems}, nil
}

// group parses what follows "(". skip is true for a comment.
func (p *parser) group(start, flags, depth int) (n node, skip bool, err error) {
	capture, atomic := true, false
	name := ""
	subFlags := flags
	if p.match("?") {
		c, err := p.get()
		if err != nil {
			return nil, false, err
		}
		switch {
		case c == "":
			return nil, false, p.errAt(p.pos, "unexpected end of pattern")
		case c == "P":
			switch {
			case p.match("<"):
				if name, err = p.getUntil('>', "group name"); err != nil {
					return nil, false, err
				}
				if !isIdentifier(name) {
					return nil, false, p.errAt(p.pos-len([]rune(name))-1, "bad character in group name '"+name+"'")
				}
			case p.match("="):
				ref, err := p.getUntil(')', "group name")
				if err != nil {
					return nil, false, err
				}
				if !isIdentifier(ref) {
					return nil, false, p.errAt(p.pos-len([]rune(ref))-1, "bad character in group name '"+ref+"'")
				}
				gid, ok := p.names[ref]
				if !ok {
					return nil, false, p.errAt(p.pos-len([]rune(ref))-1, "unknown group name '"+ref+"'")
				}
				if err := p.checkRef(gid, p.pos-len([]rune(ref))-1); err != nil {
					return nil, false, err
				}
				return &backref{group: gid, w: p.widths[gid]}, false, nil
			default:
				c2, _ := p.get()
				if c2 == "" {
					return nil, false, p.errAt(p.pos, "unexpected end of pattern")
				}
				return nil, false, p.errAt(p.pos-1, "unknown extension ?P"+c2)
			}
		case c == ":":
			capture = false
		case c == "#":
			for {
				if p.pos >= len(p.src) {
					return nil, false, p.errAt(start, "missing ), unterminated comment")
				}
				t, err := p.get()
				if err != nil {
					return nil, false, err
				}
				if t == ")" {
					return nil, true, nil
				}
			}
		case c == "=" || c == "!" || c == "<":
			behind := false
			if c == "<" {
				c2, _ := p.get()
				if c2 == "" {
					return nil, false, p.errAt(p.pos, "unexpected end of pattern")
				}
				if c2 != "=" && c2 != "!" {
					return nil, false, p.errAt(p.pos-1, "unknown extension ?<"+c2)
				}
				c, behind = c2, true
			}
			outer := p.lookbehindGroups
			if behind && outer < 0 {
				p.lookbehindGroups = p.groups + 1
			}
			sub, err := p.parseSub(flags, depth+1)
			if err != nil {
				return nil, false, err
			}
			if behind && outer < 0 {
				p.lookbehindGroups = -1
			}
			if !p.match(")") {
				return nil, false, p.errAt(start, "missing ), unterminated subpattern")
			}
			a := &assert{sub: sub, neg: c == "!", behind: behind}
			if behind {
				lo, hi := sub.width()
				if lo != hi {
					return nil, false, p.errAt(-1, "look-behind requires fixed-width pattern")
				}
				a.w = lo
			}
			return a, false, nil
		case c == "(":
			return nil, false, p.unsupported(start, "conditional groups (?(...)...) are not supported")
		case c == ">":
			capture, atomic = false, true
		default:
			r := []rune(c)
			_, isFlag := flagLetters[r[0]]
			if !isFlag && c != "-" {
				return nil, false, p.errAt(p.pos-1, "unknown extension ?"+c)
			}
			add, del, global, err := p.scopedFlags(r[0])
			if err != nil {
				return nil, false, err
			}
			if global {
				return nil, false, p.errAt(start, "global flags not at the start of the expression")
			}
			if add&flagIgnoreCase != 0 {
				return nil, false, p.unsupported(start, "the IGNORECASE flag (i) is not supported")
			}
			capture = false
			subFlags = (flags | add) &^ del
		}
	}
	gid := 0
	if capture {
		p.groups++
		gid = p.groups
		if name != "" {
			if old, dup := p.names[name]; dup {
				return nil, false, p.errAt(start, "redefinition of group name '"+name+"' as group "+strconv.Itoa(gid)+"; was group "+strconv.Itoa(old))
			}
			p.names[name] = gid
		}
	}
	sub, err := p.parseSub(subFlags, depth+1)
	if err != nil {
		return nil, false, err
	}
	if !p.match(")") {
		return nil, false, p.errAt(start, "missing ), unterminated subpattern")
	}
	switch {
	case capture:
		lo, hi := sub.width()
		p.closed[gid] = true
		p.widths[gid] = [2]int{lo, hi}
		return &group{idx: gid, sub: sub}, false, nil
	case atomic:
		return &atomicGroup{sub: sub}, false, nil
	}
	// A non-capturing group stays a node of its own while parsing, as
	// Python's SUBPATTERN does, so that (?:a*)* is not a multiple repeat.
	return &group{sub: sub}, false, nil
}

// scopedFlags reads the flags of (?flags-flags:...) after its first
// character c; global is true for a (?flags) group.
func (p *parser) scopedFlags(c rune) (add, del int, global bool, err error) {
	if c != '-' {
		for {
			f := flagLetters[c]
			if f == flagLocale {
				return 0, 0, false, p.errAt(p.pos, "bad inline flags: cannot use 'L' flag with a str pattern")
			}
			add |= f
			if f&typeFlags != 0 && add&typeFlags != f {
				return 0, 0, false, p.errAt(p.pos, "bad inline flags: flags 'a', 'u' and 'L' are incompatible")
			}
			if p.pos >= len(p.src) {
				return 0, 0, false, p.errAt(p.pos, "missing -, : or )")
			}
			c = p.src[p.pos]
			p.pos++
			if c == ')' || c == '-' || c == ':' {
				break
			}
			if _, ok := flagLetters[c]; !ok {
				msg := "missing -, : or )"
				if unicode.IsLetter(c) {
					msg = "unknown flag"
				}
				return 0, 0, false, p.errAt(p.pos-1, msg)
			}
		}
	}
	if c == ')' {
		return add, 0, true, nil
	}
	if c == '-' {
		if p.pos >= len(p.src) {
			return 0, 0, false, p.errAt(p.pos, "missing flag")
		}
		c = p.src[p.pos]
		p.pos++
		if _, ok := flagLetters[c]; !ok {
			msg := "missing flag"
			if unicode.IsLetter(c) {
				msg = "unknown flag"
			}
			return 0, 0, false, p.errAt(p.pos-1, msg)
		}
		for {
			f := flagLetters[c]
			if f&typeFlags != 0 {
				return 0, 0, false, p.errAt(p.pos, "bad inline flags: cannot turn off flags 'a', 'u' and 'L'")
			}
			del |= f
			if p.pos >= len(p.src) {
				return 0, 0, false, p.errAt(p.pos, "missing :")
			}
			c = p.src[p.pos]
			p.pos++
			if c == ':' {
				break
			}
			if _, ok := flagLetters[c]; !ok {
				msg := "missing :"
				if unicode.IsLetter(c) {
					msg = "unknown flag"
				}
				return 0, 0, false, p.errAt(p.pos-1, msg)
			}
		}
	}
	if add&del != 0 {
		return 0, 0, false, p.errAt(p.pos, "bad inline flags: flag turned on and off")
	}
	return add, del, false, nil
}

// checkRef refuses a reference to a group still open, or to one defined
// inside the lookbehind being parsed.
func (p *parser) checkRef(gid, pos int) error {
	if !p.closed[gid] {
		return p.errAt(pos, "cannot refer to an open group")
	}
	if p.lookbehindGroups >= 0 && gid >= p.lookbehindGroups {
		return p.errAt(pos, "cannot refer to group defined in the same lookbehind subpattern")
	}
	return nil
}

// escape reads an escape outside a class (_escape).
func (p *parser) escape(esc string, here, flags int) (node, error) {
	ascii := flags&flagASCII != 0
	c := []rune(esc)[1]
	switch c {
	case 'A':
		return &at{kind: atBeginningString}, nil
	case 'Z':
		return &at{kind: atEndString}, nil
	case 'b':
		return &at{kind: atBoundary, ascii: ascii}, nil
	case 'B':
		return &at{kind: atNonBoundary, ascii: ascii}, nil
	case 'd', 'D', 's', 'S', 'w', 'W':
		return &class{items: []classItem{categoryItem(c, ascii)}}, nil
	}
	if r, ok := simpleEscapes[c]; ok {
		return &lit{c: r}, nil
	}
	switch {
	case c == 'x' || c == 'u' || c == 'U':
		r, err := p.hexEscape(esc, c, here)
		if err != nil {
			return nil, err
		}
		return &lit{c: r}, nil
	case c == 'N':
		return nil, p.unsupported(here, "named character escapes \\N{...} are not supported")
	case c == '0':
		s := p.getWhile(2, octDigits)
		v, _ := strconv.ParseInt("0"+s, 8, 32)
		return &lit{c: rune(v)}, nil
	case c >= '1' && c <= '9':
		num := string(c)
		if p.pos < len(p.src) && strings.ContainsRune(digits, p.src[p.pos]) {
			num += string(p.src[p.pos])
			p.pos++
			if strings.ContainsRune(octDigits, rune(num[0])) && strings.ContainsRune(octDigits, rune(num[1])) &&
				p.pos < len(p.src) && strings.ContainsRune(octDigits, p.src[p.pos]) {
				num += string(p.src[p.pos])
				p.pos++
				v, _ := strconv.ParseInt(num, 8, 32)
				if v > 0o377 {
					return nil, p.errAt(here, "octal escape value \\"+num+" outside of range 0-0o377")
				}
				return &lit{c: rune(v)}, nil
			}
		}
		gid, _ := strconv.Atoi(num)
		if gid <= p.groups {
			if err := p.checkRef(gid, here); err != nil {
				return nil, err
			}
			return &backref{group: gid, w: p.widths[gid]}, nil
		}
		return nil, p.errAt(here+1, "invalid group reference "+num)
	}
	if isASCIILetter(c) {
		return nil, p.errAt(here, "bad escape "+esc)
	}
	return &lit{c: c}, nil
}

var simpleEscapes = map[rune]rune{'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v', '\\': '\\'}

func (p *parser) hexEscape(esc string, c rune, here int) (rune, error) {
	n := map[rune]int{'x': 2, 'u': 4, 'U': 8}[c]
	s := p.getWhile(n, hexDigits)
	if len(s) != n {
		return 0, p.errAt(here, "incomplete escape "+esc+s)
	}
	v, _ := strconv.ParseUint(s, 16, 32)
	if v > unicode.MaxRune {
		return 0, p.errAt(here, "bad escape "+esc+s)
	}
	return rune(v), nil
}

// classEscape reads an escape inside a class (_class_escape): a literal
// rune, or a category item (isCat).
func (p *parser) classEscape(esc string, here, flags int) (r rune, cat classItem, isCat bool, err error) {
	c := []rune(esc)[1]
	if v, ok := simpleEscapes[c]; ok {
		return v, classItem{}, false, nil
	}
	switch c {
	case 'd', 'D', 's', 'S', 'w', 'W':
		return 0, categoryItem(c, flags&flagASCII != 0), true, nil
	case 'x', 'u', 'U':
		v, err := p.hexEscape(esc, c, here)
		return v, classItem{}, false, err
	case 'N':
		return 0, classItem{}, false, p.unsupported(here, "named character escapes \\N{...} are not supported")
	}
	if strings.ContainsRune(octDigits, c) {
		s := p.getWhile(2, octDigits)
		v, _ := strconv.ParseInt(string(c)+s, 8, 32)
		if v > 0o377 {
			return 0, classItem{}, false, p.errAt(here, "octal escape value \\"+string(c)+s+" outside of range 0-0o377")
		}
		return rune(v), classItem{}, false, nil
	}
	if strings.ContainsRune(digits, c) || isASCIILetter(c) {
		return 0, classItem{}, false, p.errAt(here, "bad escape "+esc)
	}
	return c, classItem{}, false, nil
}

// class parses a character set after "[".
func (p *parser) class(here, flags int) (node, error) {
	var items []classItem
	negate := p.match("^")
	for {
		if p.pos >= len(p.src) {
			return nil, p.errAt(here, "unterminated character set")
		}
		tokPos := p.pos
		this, err := p.get()
		if err != nil {
			return nil, err
		}
		if this == "]" && len(items) > 0 {
			break
		}
		var lo rune
		var cat classItem
		isCat := false
		if []rune(this)[0] == '\\' {
			if lo, cat, isCat, err = p.classEscape(this, tokPos, flags); err != nil {
				return nil, err
			}
		} else {
			lo = []rune(this)[0]
		}
		if p.match("-") {
			if p.pos >= len(p.src) {
				return nil, p.errAt(here, "unterminated character set")
			}
			thatPos := p.pos
			that, err := p.get()
			if err != nil {
				return nil, err
			}
			if that == "]" {
				if isCat {
					items = append(items, cat)
				} else {
					items = append(items, classItem{lo: lo, hi: lo})
				}
				items = append(items, classItem{lo: '-', hi: '-'})
				break
			}
			var hi rune
			hiCat := false
			if []rune(that)[0] == '\\' {
				if hi, _, hiCat, err = p.classEscape(that, thatPos, flags); err != nil {
					return nil, err
				}
			} else {
				hi = []rune(that)[0]
			}
			if isCat || hiCat || hi < lo {
				return nil, p.errAt(tokPos, "bad character range "+this+"-"+that)
			}
			items = append(items, classItem{lo: lo, hi: hi})
			continue
		}
		if isCat {
			items = append(items, cat)
		} else {
			items = append(items, classItem{lo: lo, hi: lo})
		}
	}
	return &class{items: items, negate: negate}, nil
}
