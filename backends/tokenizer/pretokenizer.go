package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// piece is one split of the text being encoded. id >= 0 marks an added
// token, which no later stage touches.
type piece struct {
	text string
	id   int
	// atStart is true when the piece begins at offset 0 of the original
	// input (Metaspace's prepend_scheme "first" needs it).
	atStart bool
}

// preTokenizer splits pieces further.
type preTokenizer interface {
	// split appends the sub-pieces (none empty) of every piece of in to
	// dst, using sc for its temporary lists.
	split(in []piece, dst []piece, sc *scratch) []piece
}

// scratch holds the temporary lists of one Encode call, reused through a
// pool so that encoding allocates little more than its result.
type scratch struct {
	lists  [][]piece
	ranges [][2]int
	spans  []span
	buf    []byte
	err    error // a regex search's, for Encode to return
}

// span is one part of a piece's cover by a pattern's matches.
type span struct {
	r       [2]int
	isMatch bool
	remove  bool
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// list returns an empty piece list (release it when done).
func (sc *scratch) list() []piece {
	if n := len(sc.lists); n > 0 {
		l := sc.lists[n-1]
		sc.lists = sc.lists[:n-1]
		return l[:0]
	}
	return nil
}

// release returns a list taken with list, dropping its strings.
func (sc *scratch) release(l []piece) {
	clear(l)
	sc.lists = append(sc.lists, l[:0])
}

// Split behaviours.
const (
	behRemoved = iota
	behIsolated
	behMergedWithPrevious
	behMergedWithNext
	behContiguous
)

type splitPre struct {
	gpt      *gptMatcher
	re       *boundedRegexp
	literal  string
	behavior int
	invert   bool
}

// matches sets sc.spans to the covering list of (range, isMatch) of s,
// like Rust's Pattern::find_matches.
func (sp *splitPre) matches(s string, sc *scratch) {
	ms := sc.ranges[:0]
	switch {
	case sp.gpt != nil:
		ms = sp.gpt.findAll(s, ms)
	case sp.re != nil:
		found, err := sp.re.matches(s)
		if err != nil && sc.err == nil {
			sc.err = err
		}
		ms = append(ms, found...)
	default:
		if sp.literal != "" {
			for i := 0; ; {
				k := strings.Index(s[i:], sp.literal)
				if k < 0 {
					break
				}
				ms = append(ms, [2]int{i + k, i + k + len(sp.literal)})
				i += k + len(sp.literal)
			}
		}
	}
	sc.ranges = ms
	spans := sc.spans[:0]
	prev := 0
	for _, m := range ms {
		if prev != m[0] {
			spans = append(spans, span{r: [2]int{prev, m[0]}, isMatch: sp.invert})
		}
		spans = append(spans, span{r: m, isMatch: !sp.invert})
		prev = m[1]
	}
	if prev != len(s) {
		spans = append(spans, span{r: [2]int{prev, len(s)}, isMatch: sp.invert})
	}
	sc.spans = spans
}

func (sp *splitPre) split(in []piece, dst []piece, sc *scratch) []piece {
	for _, p := range in {
		dst = sp.splitOne(p, dst, sc)
	}
	return dst
}

// splitOne splits one piece: the segments of its cover, per behaviour
// (merged in place in sc.spans), then appended to dst.
func (sp *splitPre) splitOne(p piece, dst []piece, sc *scratch) []piece {
	sp.matches(p.text, sc)
	rs := sc.spans
	segs := rs[:0] // merging only ever shortens the list: it is done in place
	switch sp.behavior {
	case behIsolated:
		segs = rs
	case behRemoved:
		for i := range rs {
			rs[i].remove = rs[i].isMatch
		}
		segs = rs
	case behContiguous:
		prevMatch := false
		for _, r := range rs {
			isMatch := r.isMatch
			if isMatch == prevMatch && len(segs) > 0 {
				segs[len(segs)-1].r[1] = r.r[1]
			} else {
				segs = append(segs, span{r: r.r})
			}
			prevMatch = isMatch
		}
	case behMergedWithPrevious:
		prevMatch := false
		for _, r := range rs {
			isMatch := r.isMatch
			if isMatch && !prevMatch && len(segs) > 0 {
				segs[len(segs)-1].r[1] = r.r[1]
			} else {
				segs = append(segs, span{r: r.r})
			}
			prevMatch = isMatch
		}
	case behMergedWithNext:
		// Built from the end: segs grows from the back of rs.
		prevMatch := false
		k := len(rs)
		for i := len(rs) - 1; i >= 0; i-- {
			r := rs[i]
			if r.isMatch && !prevMatch && k < len(rs) {
				rs[k].r[0] = r.r[0]
			} else {
				k--
				rs[k] = span{r: r.r}
			}
			prevMatch = r.isMatch
		}
		segs = rs[k:]
	}
	for _, sg := range segs {
		if sg.remove || sg.r[0] == sg.r[1] {
			continue
		}
		dst = append(dst, piece{text: p.text[sg.r[0]:sg.r[1]], id: -1, atStart: p.atStart && sg.r[0] == 0})
	}
	return dst
}

// byteLevelPre maps bytes to the GPT-2 printable alphabet, optionally
// adding a prefix space and splitting with the GPT-2 pattern first.
type byteLevelPre struct {
	addPrefixSpace bool
	useRegex       bool
}

// split maps the text of all pieces into one new string (one allocation
// for the whole input) that the pieces it appends are parts of.
func (b byteLevelPre) split(in []piece, dst []piece, sc *scratch) []piece {
	prefix := func(s string) bool { return b.addPrefixSpace && !strings.HasPrefix(s, " ") }
	buf := sc.buf[:0]
	for _, p := range in {
		if prefix(p.text) {
			buf = append(buf, byteChars[' ']...)
		}
		for i := 0; i < len(p.text); i++ {
			buf = append(buf, byteChars[p.text[i]]...)
		}
	}
	mapped := string(buf)
	sc.buf = buf
	// Each piece's mapped text follows the one before it in mapped; at
	// walks its raw text (s) and its mapped text together.
	off := 0
	var m gptMatcher
	for _, p := range in {
		s := p.text
		if prefix(s) {
			s = " " + s
		}
		pos, mpos := 0, off
		at := func(i int) int { // the mapped offset of raw offset i (i >= pos)
			for ; pos < i; pos++ {
				mpos += len(byteChars[s[pos]])
			}
			return mpos
		}
		emit := func(a, e int) {
			if a < e {
				ma := at(a)
				dst = append(dst, piece{text: mapped[ma:at(e)], id: -1, atStart: p.atStart && a == 0})
			}
		}
		if !b.useRegex {
			start := mpos
			dst = append(dst, piece{text: mapped[start:at(len(s))], id: -1, atStart: p.atStart})
		} else {
			prev := 0
			sc.ranges = m.findAll(s, sc.ranges[:0])
			for _, r := range sc.ranges {
				emit(prev, r[0])
				emit(r[0], r[1])
				prev = r[1]
			}
			emit(prev, len(s))
		}
		off = at(len(s))
	}
	return dst
}

// metaspacePre replaces spaces with the replacement character and splits
// before each of them.
type metaspacePre struct {
	replacement string
	scheme      string // always, first, never
	splitOn     bool
}

func (m metaspacePre) split(in []piece, dst []piece, sc *scratch) []piece {
	for _, p := range in {
		s := strings.ReplaceAll(p.text, " ", m.replacement)
		switch m.scheme {
		case "always":
			if !strings.HasPrefix(s, m.replacement) {
				s = m.replacement + s
			}
		case "first":
			if !strings.HasPrefix(s, m.replacement) && p.atStart {
				s = m.replacement + s
			}
		}
		if !m.splitOn {
			dst = append(dst, piece{text: s, id: -1, atStart: p.atStart})
			continue
		}
		sp := splitPre{literal: m.replacement, behavior: behMergedWithNext}
		dst = sp.splitOne(piece{text: s, id: -1, atStart: p.atStart}, dst, sc)
	}
	return dst
}

// seqPre applies its pre-tokenizers in turn, each to all the pieces the
// one before it made.
type seqPre []preTokenizer

func (q seqPre) split(in []piece, dst []piece, sc *scratch) []piece {
	if len(q) == 0 {
		return append(dst, in...)
	}
	cur := in
	var bufs [2][]piece
	for k, pt := range q {
		if k == len(q)-1 {
			dst = pt.split(cur, dst, sc)
			break
		}
		if bufs[k%2] == nil {
			bufs[k%2] = sc.list()
		}
		bufs[k%2] = pt.split(cur, bufs[k%2][:0], sc)
		cur = bufs[k%2]
	}
	for _, l := range bufs {
		if l != nil {
			sc.release(l)
		}
	}
	return dst
}

type preTokenizerJSON struct {
	Type           string            `json:"type"`
	Pretokenizers  []json.RawMessage `json:"pretokenizers"`
	Pattern        patternJSON       `json:"pattern"`
	Behavior       string            `json:"behavior"`
	Invert         bool              `json:"invert"`
	AddPrefixSpace *bool             `json:"add_prefix_space"`
	UseRegex       *bool             `json:"use_regex"`
	Replacement    string            `json:"replacement"`
	PrependScheme  string            `json:"prepend_scheme"`
	Split          *bool             `json:"split"`
}

func parseBehavior(s string) (int, error) {
	switch s {
	case "Removed":
		return behRemoved, nil
	case "Isolated":
		return behIsolated, nil
	case "MergedWithPrevious":
		return behMergedWithPrevious, nil
	case "MergedWithNext":
		return behMergedWithNext, nil
	case "Contiguous":
		return behContiguous, nil
	}
	return 0, fmt.Errorf("tokenizer.json: Split behavior %q not supported", s)
}

func parsePreTokenizer(raw json.RawMessage) (preTokenizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var j preTokenizerJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("tokenizer.json: pre_tokenizer: %w", err)
	}
	switch j.Type {
	case "Sequence":
		var q seqPre
		for _, sub := range j.Pretokenizers {
			p, err := parsePreTokenizer(sub)
			if err != nil {
				return nil, err
			}
			if p != nil {
				q = append(q, p)
			}
		}
		return q, nil
	case "Split":
		beh, err := parseBehavior(j.Behavior)
		if err != nil {
			return nil, err
		}
		sp := &splitPre{behavior: beh, invert: j.Invert}
		switch {
		case j.Pattern.String != nil:
			sp.literal = *j.Pattern.String
		case j.Pattern.Regex != nil:
			if m, ok := knownMatcher(*j.Pattern.Regex); ok {
				sp.gpt = m
			} else {
				re, err := compileRegexp(*j.Pattern.Regex, "Split")
				if err != nil {
					return nil, err
				}
				sp.re = re
			}
		default:
			return nil, fmt.Errorf("tokenizer.json: Split pattern missing")
		}
		return sp, nil
	case "ByteLevel":
		b := byteLevelPre{addPrefixSpace: true, useRegex: true}
		if j.AddPrefixSpace != nil {
			b.addPrefixSpace = *j.AddPrefixSpace
		}
		if j.UseRegex != nil {
			b.useRegex = *j.UseRegex
		}
		return b, nil
	case "Metaspace":
		m := metaspacePre{replacement: "\u2581", scheme: "always", splitOn: true}
		if j.Replacement != "" {
			m.replacement = j.Replacement
		}
		if j.Split != nil {
			m.splitOn = *j.Split
		}
		switch {
		case j.PrependScheme != "":
			m.scheme = j.PrependScheme
		case j.AddPrefixSpace != nil && !*j.AddPrefixSpace:
			m.scheme = "never"
		}
		if m.scheme != "always" && m.scheme != "first" && m.scheme != "never" {
			return nil, fmt.Errorf("tokenizer.json: Metaspace prepend_scheme %q not supported", m.scheme)
		}
		return m, nil
	}
	return nil, fmt.Errorf("tokenizer.json: pre_tokenizer type %q not supported", j.Type)
}
