package pyre

import "fmt"

// cont is what follows a node: called with the position where the node's
// match ended, it reports whether the rest of the pattern matched.
type cont func(int) bool

// node is one element of a compiled pattern. match tries the node at i,
// in the order Python's sre tries alternatives, calling k for each way it
// can end; it returns true as soon as k does. A node that returns false
// leaves the captures as it found them.
type node interface {
	match(m *machine, i int, k cont) bool
	// width is the (min, max) number of characters the node matches, as
	// SubPattern.getwidth computes it (max saturates at maxRepeat).
	width() (lo, hi int)
}

// single is a node that always matches exactly one character: the fast
// path of sre's REPEAT_ONE.
type single interface {
	node
	matches(c rune) bool
}

// machine is the state of the searches of one call over one text.
type machine struct {
	re   *Regexp
	text []rune
	caps []int
	b    *Budget // what the call's searches may still spend
}

type budgetExceeded struct{}

// newMachine is a machine drawing on b, or with b nil on a budget of its
// own (MaxSteps, and StepsPerRune for each code point of text).
func newMachine(re *Regexp, text []rune, b *Budget) *machine {
	if b == nil {
		b = &Budget{Left: MaxSteps + StepsPerRune*len(text)}
	}
	b.limit += b.Left
	return &machine{re: re, text: text, caps: make([]int, 2*(re.groups+1)), b: b}
}

func (m *machine) step() {
	m.b.Left--
	if m.b.Left < 0 {
		panic(budgetExceeded{})
	}
}

func (m *machine) save() []int { return append([]int(nil), m.caps...) }

func (m *machine) restore(s []int) { copy(m.caps, s) }

// first returns where the first way of matching n at i ends.
func (m *machine) first(n node, i int) (int, bool) {
	end := -1
	ok := n.match(m, i, func(j int) bool { end = j; return true })
	return end, ok
}

// search finds the leftmost match starting at or after start; with
// mustAdvance a match may not end at start (sre's must_advance).
func (m *machine) search(start int, mustAdvance bool) (mt *Match, err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(budgetExceeded); !ok {
				panic(r)
			}
			mt, err = nil, fmt.Errorf("%w: %q spent %d steps (python re would backtrack for a long time, or for ever)", ErrTooComplex, m.re.pattern, m.b.limit)
		}
	}()
	f := m.re.first
	for pos := start; pos <= len(m.text); pos++ {
		if !f.nullable && (pos == len(m.text) || !f.accepts(m.text[pos])) {
			continue
		}
		for i := range m.caps {
			m.caps[i] = -1
		}
		end := -1
		ok := m.re.root.match(m, pos, func(j int) bool {
			if mustAdvance && j == start {
				return false
			}
			end = j
			return true
		})
		if ok {
			mt := &Match{Start: pos, End: end, Groups: make([]string, m.re.groups+1), Set: make([]bool, m.re.groups+1)}
			mt.Groups[0], mt.Set[0] = string(m.text[pos:end]), true
			for g := 1; g <= m.re.groups; g++ {
				s, e := m.caps[2*g], m.caps[2*g+1]
				if s >= 0 && e >= s {
					mt.Groups[g], mt.Set[g] = string(m.text[s:e]), true
				}
			}
			return mt, nil
		}
	}
	return nil, nil
}

// lit is one literal character.
type lit struct{ c rune }

func (n *lit) matches(c rune) bool { return c == n.c }
func (n *lit) width() (int, int)   { return 1, 1 }
func (n *lit) match(m *machine, i int, k cont) bool {
	m.step()
	return i < len(m.text) && m.text[i] == n.c && k(i+1)
}

// anyChar is ".".
type anyChar struct{ dotAll bool }

func (n *anyChar) matches(c rune) bool { return n.dotAll || c != '\n' }
func (n *anyChar) width() (int, int)   { return 1, 1 }
func (n *anyChar) match(m *machine, i int, k cont) bool {
	m.step()
	return i < len(m.text) && n.matches(m.text[i]) && k(i+1)
}

// class is a character set, or a category such as \d.
type class struct {
	items  []classItem
	negate bool
}

func (n *class) matches(c rune) bool {
	for _, it := range n.items {
		if it.contains(c) {
			return !n.negate
		}
	}
	return n.negate
}
func (n *class) width() (int, int) { return 1, 1 }
func (n *class) match(m *machine, i int, k cont) bool {
	m.step()
	return i < len(m.text) && n.matches(m.text[i]) && k(i+1)
}

// The zero-width assertions.
const (
	atBeginning = iota
	atBeginningLine
	atBeginningString
	atEnd
	atEndLine
	atEndString
	atBoundary
	atNonBoundary
)

type at struct {
	kind  int
	ascii bool
}

func (n *at) width() (int, int) { return 0, 0 }
func (n *at) match(m *machine, i int, k cont) bool {
	m.step()
	t := m.text
	ok := false
	switch n.kind {
	case atBeginning, atBeginningString:
		ok = i == 0
	case atBeginningLine:
		ok = i == 0 || t[i-1] == '\n'
	case atEnd:
		ok = i == len(t) || (i+1 == len(t) && t[i] == '\n')
	case atEndLine:
		ok = i == len(t) || t[i] == '\n'
	case atEndString:
		ok = i == len(t)
	case atBoundary, atNonBoundary:
		if len(t) == 0 {
			return false
		}
		word := isWord
		if n.ascii {
			word = isASCIIWord
		}
		that := i > 0 && word(t[i-1])
		this := i < len(t) && word(t[i])
		ok = (this != that) == (n.kind == atBoundary)
	}
	return ok && k(i)
}

// seq is a concatenation.
type seq struct{ items []node }

func (n *seq) width() (int, int) {
	lo, hi := 0, 0
	for _, it := range n.items {
		l, h := it.width()
		lo, hi = satAdd(lo, l), satAdd(hi, h)
	}
	return lo, hi
}
func (n *seq) match(m *machine, i int, k cont) bool { return n.from(m, 0, i, k) }
func (n *seq) from(m *machine, idx, i int, k cont) bool {
	if idx == len(n.items) {
		return k(i)
	}
	return n.items[idx].match(m, i, func(j int) bool { return n.from(m, idx+1, j, k) })
}

// alt is an alternation, tried left to right.
type alt struct{ branches []node }

func (n *alt) width() (int, int) {
	lo, hi := maxRepeat-1, 0
	for _, b := range n.branches {
		l, h := b.width()
		lo, hi = min(lo, l), max(hi, h)
	}
	return lo, hi
}
func (n *alt) match(m *machine, i int, k cont) bool {
	m.step()
	for _, b := range n.branches {
		if b.match(m, i, k) {
			return true
		}
	}
	return false
}

// group is a capturing group (idx > 0) or a non-capturing one (idx 0).
type group struct {
	idx int
	sub node
}

func (n *group) width() (int, int) { return n.sub.width() }
func (n *group) matches(c rune) bool {
	s, _ := n.sub.(single)
	return s.matches(c)
}
func (n *group) match(m *machine, i int, k cont) bool {
	if n.idx == 0 {
		return n.sub.match(m, i, k)
	}
	return n.sub.match(m, i, func(j int) bool {
		s, e := m.caps[2*n.idx], m.caps[2*n.idx+1]
		m.caps[2*n.idx], m.caps[2*n.idx+1] = i, j
		if k(j) {
			return true
		}
		m.caps[2*n.idx], m.caps[2*n.idx+1] = s, e
		return false
	})
}

// atomicGroup is (?>...): its first match is kept, never revisited.
type atomicGroup struct{ sub node }

func (n *atomicGroup) width() (int, int) { return n.sub.width() }
func (n *atomicGroup) match(m *machine, i int, k cont) bool {
	m.step()
	saved := m.save()
	j, ok := m.first(n.sub, i)
	if !ok {
		return false
	}
	if k(j) {
		return true
	}
	m.restore(saved)
	return false
}

// assert is a lookahead or a (fixed-width, w) lookbehind.
type assert struct {
	sub         node
	neg, behind bool
	w           int
}

func (n *assert) width() (int, int) { return 0, 0 }
func (n *assert) match(m *machine, i int, k cont) bool {
	m.step()
	start := i
	if n.behind {
		start = i - n.w
		if start < 0 {
			return n.neg && k(i)
		}
	}
	saved := m.save()
	_, ok := m.first(n.sub, start)
	if n.neg {
		m.restore(saved)
		return !ok && k(i)
	}
	if !ok {
		return false
	}
	if k(i) {
		return true
	}
	m.restore(saved)
	return false
}

// backref is \1 or (?P=name): the text the group last matched.
type backref struct {
	group int
	w     [2]int
}

func (n *backref) width() (int, int) { return n.w[0], n.w[1] }
func (n *backref) match(m *machine, i int, k cont) bool {
	m.step()
	s, e := m.caps[2*n.group], m.caps[2*n.group+1]
	if s < 0 || e < s {
		return false
	}
	l := e - s
	if i+l > len(m.text) {
		return false
	}
	for x := 0; x < l; x++ {
		if m.text[i+x] != m.text[s+x] {
			return false
		}
	}
	return k(i + l)
}

// The kinds of repeat.
const (
	greedy = iota
	lazy
	possessive
)

// repeat is sub{min,max}, greedy, lazy or possessive.
type repeat struct {
	sub      node
	min, max int
	kind     int
	one      single // sub when it always matches one character
}

func newRepeat(sub node, lo, hi, kind int) *repeat {
	r := &repeat{sub: sub, min: lo, max: hi, kind: kind}
	if s, ok := sub.(single); ok && isSingle(sub) {
		r.one = s
	}
	return r
}

// isSingle is sre's _simple: one character-matching item, possibly
// inside non-capturing groups.
func isSingle(n node) bool {
	switch x := n.(type) {
	case *lit, *anyChar, *class:
		return true
	case *group:
		return x.idx == 0 && isSingle(x.sub)
	}
	return false
}

func (n *repeat) width() (int, int) {
	l, h := n.sub.width()
	return min(satMul(l, n.min), maxRepeat-1), satMul(h, n.max)
}

func (n *repeat) match(m *machine, i int, k cont) bool {
	m.step()
	if n.one != nil {
		return n.matchOne(m, i, k)
	}
	switch n.kind {
	case lazy:
		return n.lazyIter(m, i, 0, -1, k)
	case possessive:
		return n.possessive(m, i, k)
	}
	return n.greedyIter(m, i, 0, -1, k)
}

// matchOne is REPEAT_ONE, MIN_REPEAT_ONE and the possessive single-item
// repeat: count the characters the item matches, then try the rest.
func (n *repeat) matchOne(m *machine, i int, k cont) bool {
	t := m.text
	avail := func(c int) bool { return c < n.max && i+c < len(t) && n.one.matches(t[i+c]) }
	switch n.kind {
	case lazy:
		c := 0
		for ; c < n.min; c++ {
			if !avail(c) {
				return false
			}
		}
		for {
			m.step()
			if k(i + c) {
				return true
			}
			if !avail(c) {
				return false
			}
			c++
		}
	}
	c := 0
	for avail(c) {
		c++
	}
	if c < n.min {
		return false
	}
	if n.kind == possessive {
		return k(i + c)
	}
	for ; c >= n.min; c-- {
		m.step()
		if k(i + c) {
			return true
		}
	}
	return false
}

// greedyIter is MAX_UNTIL: count iterations are done, the last began at
// last; another is tried before the rest, unless the last was empty.
func (n *repeat) greedyIter(m *machine, i, count, last int, k cont) bool {
	m.step()
	if count < n.min {
		return n.sub.match(m, i, func(j int) bool { return n.greedyIter(m, j, count+1, last, k) })
	}
	if count < n.max && i != last {
		if n.sub.match(m, i, func(j int) bool { return n.greedyIter(m, j, count+1, i, k) }) {
			return true
		}
	}
	return k(i)
}

// lazyIter is MIN_UNTIL: the rest is tried before another iteration.
func (n *repeat) lazyIter(m *machine, i, count, last int, k cont) bool {
	m.step()
	if count < n.min {
		return n.sub.match(m, i, func(j int) bool { return n.lazyIter(m, j, count+1, last, k) })
	}
	if k(i) {
		return true
	}
	if count >= n.max || i == last {
		return false
	}
	return n.sub.match(m, i, func(j int) bool { return n.lazyIter(m, j, count+1, i, k) })
}

// possessive is POSSESSIVE_REPEAT: each iteration's first match is kept,
// as many as match, and the rest is tried once.
func (n *repeat) possessive(m *machine, i int, k cont) bool {
	saved := m.save()
	count := 0
	for ; count < n.min; count++ {
		j, ok := m.first(n.sub, i)
		if !ok {
			m.restore(saved)
			return false
		}
		i = j
	}
	prev := -1
	for count < n.max && i != prev {
		prev = i
		inner := m.save()
		j, ok := m.first(n.sub, i)
		if !ok {
			m.restore(inner)
			break
		}
		i = j
		count++
	}
	if k(i) {
		return true
	}
	m.restore(saved)
	return false
}

func satAdd(a, b int) int { return min(a+b, maxRepeat) }

func satMul(a, b int) int {
	if a == 0 || b == 0 {
		return 0
	}
	if a > maxRepeat/b {
		return maxRepeat
	}
	return min(a*b, maxRepeat)
}

// isWord is sre's Unicode word character: str.isalnum() or "_".
func isWord(c rune) bool { return c == '_' || isAlnum(c) }

func isASCIIWord(c rune) bool {
	return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}
