package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dlclark/regexp2"
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

// preTokenizer splits each piece further.
type preTokenizer interface {
	// split returns the sub-pieces of p.text (not empty).
	split(p piece, dst []piece) []piece
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
	re       *regexp2.Regexp
	literal  string
	behavior int
	invert   bool
}

// matches returns the covering list of (range, isMatch) like Rust's
// Pattern::find_matches.
func (sp *splitPre) matches(s string) ([][2]int, []bool) {
	var ms [][2]int
	switch {
	case sp.gpt != nil:
		ms = sp.gpt.findAll(s, nil)
	case sp.re != nil:
		ms = regexMatches(sp.re, s)
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
	rs := make([][2]int, 0, 2*len(ms)+1)
	is := make([]bool, 0, 2*len(ms)+1)
	prev := 0
	for _, m := range ms {
		if prev != m[0] {
			rs = append(rs, [2]int{prev, m[0]})
			is = append(is, false)
		}
		rs = append(rs, m)
		is = append(is, true)
		prev = m[1]
	}
	if prev != len(s) {
		rs = append(rs, [2]int{prev, len(s)})
		is = append(is, false)
	}
	if sp.invert {
		for i := range is {
			is[i] = !is[i]
		}
	}
	return rs, is
}

func (sp *splitPre) split(p piece, dst []piece) []piece {
	rs, is := sp.matches(p.text)
	type seg struct {
		r      [2]int
		remove bool
	}
	var segs []seg
	switch sp.behavior {
	case behIsolated:
		for _, r := range rs {
			segs = append(segs, seg{r, false})
		}
	case behRemoved:
		for i, r := range rs {
			segs = append(segs, seg{r, is[i]})
		}
	case behContiguous:
		prevMatch := false
		for i, r := range rs {
			if is[i] == prevMatch && len(segs) > 0 {
				segs[len(segs)-1].r[1] = r[1]
			} else {
				segs = append(segs, seg{r, false})
			}
			prevMatch = is[i]
		}
	case behMergedWithPrevious:
		prevMatch := false
		for i, r := range rs {
			if is[i] && !prevMatch && len(segs) > 0 {
				segs[len(segs)-1].r[1] = r[1]
			} else {
				segs = append(segs, seg{r, false})
			}
			prevMatch = is[i]
		}
	case behMergedWithNext:
		prevMatch := false
		for i := len(rs) - 1; i >= 0; i-- {
			r := rs[i]
			if is[i] && !prevMatch && len(segs) > 0 {
				segs[len(segs)-1].r[0] = r[0]
			} else {
				segs = append(segs, seg{r, false})
			}
			prevMatch = is[i]
		}
		for i, j := 0, len(segs)-1; i < j; i, j = i+1, j-1 {
			segs[i], segs[j] = segs[j], segs[i]
		}
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

func (b byteLevelPre) split(p piece, dst []piece) []piece {
	s := p.text
	if b.addPrefixSpace && !strings.HasPrefix(s, " ") {
		s = " " + s
	}
	if !b.useRegex {
		return append(dst, piece{text: byteLevelEncode(s), id: -1, atStart: p.atStart})
	}
	m := gptMatcher{}
	prev := 0
	emit := func(a, e int) {
		if a < e {
			dst = append(dst, piece{text: byteLevelEncode(s[a:e]), id: -1, atStart: p.atStart && a == 0})
		}
	}
	for _, r := range m.findAll(s, nil) {
		emit(prev, r[0])
		emit(r[0], r[1])
		prev = r[1]
	}
	emit(prev, len(s))
	return dst
}

// metaspacePre replaces spaces with the replacement character and splits
// before each of them.
type metaspacePre struct {
	replacement string
	scheme      string // always, first, never
	splitOn     bool
}

func (m metaspacePre) split(p piece, dst []piece) []piece {
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
		return append(dst, piece{text: s, id: -1, atStart: p.atStart})
	}
	sp := splitPre{literal: m.replacement, behavior: behMergedWithNext}
	return sp.split(piece{text: s, id: -1, atStart: p.atStart}, dst)
}

type seqPre []preTokenizer

func (q seqPre) split(p piece, dst []piece) []piece {
	cur := []piece{p}
	for _, pt := range q {
		var next []piece
		for _, c := range cur {
			next = pt.split(c, next)
		}
		cur = next
	}
	return append(dst, cur...)
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
				re, err := regexp2.Compile(*j.Pattern.Regex, regexp2.None)
				if err != nil {
					return nil, fmt.Errorf("tokenizer.json: Split regex %q: %w", *j.Pattern.Regex, err)
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
