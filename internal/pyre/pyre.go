// Package pyre matches regular expressions as Python's re module does
// (CPython 3.11's re/_parser.py and the sre matcher of Modules/_sre), for
// str patterns: Unicode \d, \w, \s and \b (Go's regexp, RE2, is ASCII for
// them), $ before a final newline, lookahead and fixed-width lookbehind,
// backreferences, atomic groups and possessive repeats, lazy and greedy
// repeats with sre's rule for empty iterations, and findall's and sub's
// handling of empty matches. lm-evaluation-harness task files write their
// filters' and metrics' patterns in this syntax; tally reads them with this
// package so that no pattern matches differently from Python.
//
// Refused, each with one line (an *Error whose Unsupported is true): the
// IGNORECASE and LOCALE flags (sre's Unicode case folding is not
// reproduced), \N{...} names, and conditional groups (?(1)...). A pattern
// Python itself rejects is an error with Python's message. Matching is a
// backtracking search like sre's; a call that takes more than its budget
// of steps (MaxSteps, and StepsPerRune for each code point) is abandoned
// with an error instead of running for hours.
package pyre

import (
	"errors"
	"fmt"
	"strings"
)

// The work of one call (Search, FindAll, FindAllStrings, Sub), in steps
// (node visits): MaxSteps, and StepsPerRune for each code point of its
// text; a call past its budget fails with ErrTooComplex. A step is about
// 40 to 160 ns, so a catastrophic pattern ((a+)+$ against a few thousand
// characters) fails in about 0.1 s, where the search went on for 10 s
// before (50,000,000 steps, again for each search of a findall). lm-eval's
// filters over a 4,000-character output take 10 to 20,000 steps; a
// budget shared by several calls (a *Budget) bounds a sample's in all.
const (
	MaxSteps     = 1_000_000
	StepsPerRune = 100
)

// Budget is the steps that several calls may still spend together (the
// calls that score one sample); a nil *Budget gives each call its own.
type Budget struct {
	// Left is the steps not yet spent.
	Left  int
	limit int // all that was given, for the error
}

// NewBudget is a budget for calls over texts of runes code points in
// all: MaxSteps and StepsPerRune for each.
func NewBudget(runes int) *Budget { return &Budget{Left: MaxSteps + StepsPerRune*runes} }

// Error is a pattern that cannot be compiled: Python rejects it, or Python
// accepts it but this package does not reproduce it (Unsupported).
type Error struct {
	Pattern     string
	Msg         string
	Pos         int // code point offset in the pattern, -1 when unknown
	Unsupported bool
}

// Error says what is wrong and where, in one line.
func (e *Error) Error() string {
	what := "invalid Python regular expression"
	if e.Unsupported {
		what = "Python regular expression not supported"
	}
	if e.Pos >= 0 {
		return fmt.Sprintf("%s %q: %s at position %d", what, e.Pattern, e.Msg, e.Pos)
	}
	return fmt.Sprintf("%s %q: %s", what, e.Pattern, e.Msg)
}

// ErrTooComplex is wrapped by the error of a call past its budget.
var ErrTooComplex = errors.New("regular expression search exceeded its step budget (catastrophic backtracking)")

// Regexp is a compiled pattern. It is safe for concurrent use.
type Regexp struct {
	pattern string
	root    node
	groups  int            // number of capturing groups
	names   map[string]int // named groups
	first   firstSet       // what a match's first character must be
}

// Compile compiles a Python re pattern (a str pattern, no flags but those
// written inline).
func Compile(pattern string) (*Regexp, error) {
	p := &parser{src: []rune(pattern), pattern: pattern, names: map[string]int{}}
	root, err := p.parseAll()
	if err != nil {
		return nil, err
	}
	return &Regexp{pattern: pattern, root: root, groups: p.groups, names: p.names, first: first(root)}, nil
}

// MustCompile is Compile that panics on an error, for patterns in code.
func MustCompile(pattern string) *Regexp {
	re, err := Compile(pattern)
	if err != nil {
		panic(err)
	}
	return re
}

// String returns the pattern.
func (re *Regexp) String() string { return re.pattern }

// NumGroups is the number of capturing groups (Pattern.groups).
func (re *Regexp) NumGroups() int { return re.groups }

// Match is one match: Groups[0] is the whole match, Groups[i] group i
// (Set[i] false for a group that did not participate, whose text is "").
// Start and End are code point offsets of the whole match.
type Match struct {
	Start, End int
	Groups     []string
	Set        []bool
}

// Search is re.search: the leftmost match, or nil.
func (re *Regexp) Search(s string) (*Match, error) {
	text := []rune(s)
	m := newMachine(re, text, nil)
	return m.search(0, false)
}

// FindAll is re.finditer's matches in order, with its rule for empty
// matches: after an empty match the next search starts at the same place
// but must not end there.
func (re *Regexp) FindAll(s string) ([]*Match, error) { return re.FindAllIn(s, nil) }

// FindAllIn is FindAll spending b (nil: a budget of its own).
func (re *Regexp) FindAllIn(s string, b *Budget) ([]*Match, error) {
	text := []rune(s)
	m := newMachine(re, text, b)
	var out []*Match
	start, must := 0, false
	for start <= len(text) {
		mt, err := m.search(start, must)
		if err != nil {
			return nil, err
		}
		if mt == nil {
			break
		}
		out = append(out, mt)
		must = mt.End == mt.Start
		start = mt.End
	}
	return out, nil
}

// FindAllStrings is re.findall: the whole matches when the pattern has no
// group, group 1 when it has one (a group that did not participate is
// ""), and all groups when it has several (then each element is a slice).
// It returns []string or [][]string accordingly.
func (re *Regexp) FindAllStrings(s string) (any, error) { return re.FindAllStringsIn(s, nil) }

// FindAllStringsIn is FindAllStrings spending b (nil: a budget of its own).
func (re *Regexp) FindAllStringsIn(s string, b *Budget) (any, error) {
	ms, err := re.FindAllIn(s, b)
	if err != nil {
		return nil, err
	}
	switch re.groups {
	case 0, 1:
		out := make([]string, len(ms))
		for i, m := range ms {
			out[i] = m.Groups[re.groups]
		}
		return out, nil
	}
	out := make([][]string, len(ms))
	for i, m := range ms {
		out[i] = m.Groups[1:]
	}
	return out, nil
}

// Sub is re.sub(pattern, repl, s) with count 0: every match replaced by
// the template repl (\1, \g<1>, \g<name>, and \n-style escapes, as
// Python's parse_template reads them).
func (re *Regexp) Sub(repl, s string) (string, error) { return re.SubIn(repl, s, nil) }

// SubIn is Sub spending b (nil: a budget of its own).
func (re *Regexp) SubIn(repl, s string, b *Budget) (string, error) {
	tmpl, err := re.parseTemplate(repl)
	if err != nil {
		return "", err
	}
	text := []rune(s)
	m := newMachine(re, text, b)
	var out strings.Builder
	i, start, must := 0, 0, false
	for start <= len(text) {
		mt, err := m.search(start, must)
		if err != nil {
			return "", err
		}
		if mt == nil {
			break
		}
		out.WriteString(string(text[i:mt.Start]))
		for _, piece := range tmpl {
			if piece.group >= 0 {
				out.WriteString(mt.Groups[piece.group])
			} else {
				out.WriteString(piece.lit)
			}
		}
		i = mt.End
		must = mt.End == mt.Start
		start = mt.End
	}
	out.WriteString(string(text[i:]))
	return out.String(), nil
}

// escaped are the characters Python's re.escape escapes (3.7 and later:
// re._special_chars_map).
const escaped = "()[]{}?*+-|^$\\.&~# \t\n\r\v\f"

// Escape is Python's re.escape: each of ()[]{}?*+-|^$\.&~#, space, tab,
// newline, carriage return, vertical tab and form feed preceded by a
// backslash, every other character as it is.
func Escape(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(escaped, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
