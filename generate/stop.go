package generate

import (
	"fmt"
	"sort"
	"strings"
)

// StopSetting is a named set of stop sequences, such as dot=["."] or
// nl=["\n"]. A setting with no sequences never stops (only the token budget
// or end-of-sequence ends it).
type StopSetting struct {
	Name string   `json:"name"`
	Seqs []string `json:"seqs"`
}

// Key is a canonical form of the setting's sequences, independent of its
// name and of the order of its sequences: two settings with the same Key cut
// every text at the same place.
func (s StopSetting) Key() string {
	seqs := append([]string(nil), s.Seqs...)
	sort.Strings(seqs)
	var b strings.Builder
	for i, q := range seqs {
		if i > 0 {
			b.WriteByte(0)
		}
		b.WriteString(q)
	}
	return b.String()
}

// String formats the setting as NAME=SEQ,SEQ with escapes, as the command
// line takes it.
func (s StopSetting) String() string {
	q := make([]string, len(s.Seqs))
	for i, x := range s.Seqs {
		q[i] = Escape(x)
	}
	return s.Name + "=" + strings.Join(q, ",")
}

// Match is where a stop setting cut a text.
type Match struct {
	// Seq is the sequence that matched.
	Seq string `json:"seq"`
	// Offset is the byte offset in the continuation where Seq starts: the
	// truncated text is text[:Offset].
	Offset int `json:"offset"`
}

// FindStop returns the earliest match of any of seqs in text. When two
// sequences start at the same byte, the shorter wins (it is complete first
// in a stream, so the answer does not depend on how the text was chunked).
// Empty sequences are ignored.
func FindStop(text string, seqs []string) (Match, bool) {
	best := Match{Offset: -1}
	for _, q := range seqs {
		if q == "" {
			continue
		}
		i := strings.Index(text, q)
		if i < 0 {
			continue
		}
		if best.Offset < 0 || i < best.Offset || (i == best.Offset && len(q) < len(best.Seq)) {
			best = Match{Seq: q, Offset: i}
		}
	}
	return best, best.Offset >= 0
}

// Matcher applies K stop settings to a stream of text pieces, byte-exactly
// across piece boundaries: a sequence may span several pieces and a piece
// may hold several sequences. Each setting stops at its earliest match.
type Matcher struct {
	settings []StopSetting
	maxLen   int
	text     []byte
	matches  []*Match
	open     int
}

// NewMatcher returns a matcher for the given settings.
func NewMatcher(settings []StopSetting) *Matcher {
	m := &Matcher{settings: settings, matches: make([]*Match, len(settings)), open: len(settings)}
	for _, s := range settings {
		for _, q := range s.Seqs {
			m.maxLen = max(m.maxLen, len(q))
		}
	}
	return m
}

// Feed appends a piece of text and reports whether every setting has now
// stopped. A matcher with no settings never reports done.
func (m *Matcher) Feed(piece string) bool {
	if piece == "" || m.open == 0 {
		return m.Done()
	}
	// A new match must end inside the new piece, so it starts at most
	// maxLen-1 bytes before it.
	from := max(0, len(m.text)-(m.maxLen-1))
	m.text = append(m.text, piece...)
	window := string(m.text[from:])
	for i, s := range m.settings {
		if m.matches[i] != nil {
			continue
		}
		if mt, ok := FindStop(window, s.Seqs); ok {
			mt.Offset += from
			m.matches[i] = &mt
			m.open--
		}
	}
	return m.Done()
}

// Done reports whether every setting has stopped (false with no settings).
func (m *Matcher) Done() bool { return len(m.settings) > 0 && m.open == 0 }

// Match returns the match of setting i, if it has stopped.
func (m *Matcher) Match(i int) (Match, bool) {
	if p := m.matches[i]; p != nil {
		return *p, true
	}
	return Match{}, false
}

// Matches returns the matches found so far, by setting name.
func (m *Matcher) Matches() map[string]Match {
	out := make(map[string]Match, len(m.settings))
	for i, s := range m.settings {
		if p := m.matches[i]; p != nil {
			out[s.Name] = *p
		}
	}
	return out
}

// ParseStop parses a command-line stop setting NAME=SEQ[,SEQ…]. Escapes in
// SEQ (\n, \t, \r, \\, \, for a literal comma, \uXXXX) are decoded here, once.
// "NAME=" alone is a setting with no sequence (no stop: only the token
// budget or end-of-sequence ends a generation). Any other spec that yields
// an empty sequence is an error: a bare comma is a separator, so "comma=,"
// is refused with a hint to write "comma=\,".
func ParseStop(arg string) (StopSetting, error) {
	name, rest, ok := strings.Cut(arg, "=")
	if !ok || name == "" {
		return StopSetting{}, fmt.Errorf("stop setting %q: want NAME=SEQ[,SEQ...]", arg)
	}
	var seqs []string
	var cur strings.Builder
	rs := []rune(rest)
	for i := 0; i < len(rs); i++ {
		c := rs[i]
		if c == ',' {
			seqs = append(seqs, cur.String())
			cur.Reset()
			continue
		}
		if c != '\\' {
			cur.WriteRune(c)
			continue
		}
		if i+1 >= len(rs) {
			return StopSetting{}, fmt.Errorf("stop setting %q: dangling backslash at the end", arg)
		}
		i++
		switch rs[i] {
		case 'n':
			cur.WriteByte('\n')
		case 't':
			cur.WriteByte('\t')
		case 'r':
			cur.WriteByte('\r')
		case '\\':
			cur.WriteByte('\\')
		case ',':
			cur.WriteByte(',')
		case 'u':
			var v rune
			for k := 1; k <= 4; k++ {
				if i+k >= len(rs) {
					return StopSetting{}, fmt.Errorf("stop setting %q: \\u needs 4 hex digits", arg)
				}
				d := hexVal(rs[i+k])
				if d < 0 {
					return StopSetting{}, fmt.Errorf("stop setting %q: bad hex digit %q in \\u escape", arg, rs[i+k])
				}
				v = v<<4 | rune(d)
			}
			i += 4
			cur.WriteRune(v)
		default:
			return StopSetting{}, fmt.Errorf("stop setting %q: unknown escape \\%c (use \\n \\t \\r \\\\ \\, \\uXXXX)", arg, rs[i])
		}
	}
	if rest == "" {
		return StopSetting{Name: name}, nil
	}
	seqs = append(seqs, cur.String())
	for _, q := range seqs {
		if q == "" {
			// Only a bare comma makes an empty part: a leading, trailing or
			// doubled separator, or a comma meant as the stop itself.
			return StopSetting{}, fmt.Errorf("stop setting %q: empty stop sequence: a bare ',' separates sequences; write '\\,' for a comma (or NAME= alone for no stop)", arg)
		}
	}
	return StopSetting{Name: name, Seqs: seqs}, nil
}

func hexVal(r rune) int {
	switch {
	case r >= '0' && r <= '9':
		return int(r - '0')
	case r >= 'a' && r <= 'f':
		return int(r-'a') + 10
	case r >= 'A' && r <= 'F':
		return int(r-'A') + 10
	}
	return -1
}

// FilterMarker is the sequence an imported lm-eval filter's stop setting
// holds beside its until: settings are keyed by their sequences, and the
// filters of one generation (one until) are told apart by a sequence
// naming the filter, never found in the already cut text.
func FilterMarker(filter string) string { return filterMarker + filter + "]" }

const filterMarker = "[lm-eval filter "

// Shown is the setting as labels show it: its sequences without the
// marker of an imported lm-eval filter (FilterMarker).
func (s StopSetting) Shown() string {
	out := StopSetting{Name: s.Name}
	for _, q := range s.Seqs {
		if !strings.HasPrefix(q, filterMarker) || !strings.HasSuffix(q, "]") {
			out.Seqs = append(out.Seqs, q)
		}
	}
	return out.String()
}

// Escape writes s with the escapes ParseStop reads, so that settings print
// readably (a newline as \n).
func Escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		case '\\':
			b.WriteString(`\\`)
		case ',':
			b.WriteString(`\,`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	return b.String()
}
