package tokenizer

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/dlclark/regexp2"
)

// MatchTimeout bounds one search of a tokenizer.json regex that tally has
// no hand-written matcher for (a Split pre-tokenizer's or a Replace
// normalizer's): a catastrophic pattern ((a+)+$ over a prompt) would
// backtrack for hours. github.com/dlclark/regexp2 counts no steps, so the
// bound is its MatchTimeout: the time of one search, which a real
// tokenizer's searches take a thousandth of. The first search past it
// fails the tokenizer for good: every later encoding fails at once with
// the same error, rather than each prompt of a plan waiting its turn.
const MatchTimeout = 500 * time.Millisecond

// boundedRegexp is a tokenizer.json regex searched within MatchTimeout.
type boundedRegexp struct {
	re     *regexp2.Regexp
	failed atomic.Pointer[error] // the first search past the bound
}

// compileRegexp compiles a tokenizer.json regex (where names it in
// errors).
func compileRegexp(pattern, where string) (*boundedRegexp, error) {
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: %s regex %q: %w", where, pattern, err)
	}
	re.MatchTimeout = MatchTimeout
	return &boundedRegexp{re: re}, nil
}

// matches returns the byte ranges of the non-empty matches in s; an error
// once a search has passed MatchTimeout (this one or an earlier one).
func (b *boundedRegexp) matches(s string) ([][2]int, error) {
	if err := b.failed.Load(); err != nil {
		return nil, *err
	}
	runes := []rune(s)
	offs := make([]int, len(runes)+1)
	o := 0
	for i, r := range runes {
		offs[i] = o
		o += len(string(r))
	}
	offs[len(runes)] = o
	var out [][2]int
	m, err := b.re.FindRunesMatch(runes)
	for err == nil && m != nil {
		if m.Length > 0 {
			out = append(out, [2]int{offs[m.Index], offs[m.Index+m.Length]})
		}
		m, err = b.re.FindNextMatch(m)
	}
	if err != nil {
		err = fmt.Errorf("tokenizer.json regex %q: a search took more than %v (catastrophic backtracking?): this tokenizer encodes no more text", b.re.String(), MatchTimeout)
		b.failed.CompareAndSwap(nil, &err)
		return nil, *b.failed.Load()
	}
	return out, nil
}
