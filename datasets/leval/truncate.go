package leval

import (
	"strings"
	"unicode"
)

// lEvalStep is how many more pieces each round of L-Eval's loop drops
// (cnt += 250 in Baselines/*-test.py).
const lEvalStep = 250

// Truncate shortens doc so that count(doc) <= budget, as mode says
// (TruncateLEval, TruncateHead, TruncateTail; TruncateNone and any other
// mode return doc unchanged). task matters for TruncateLEval only: as in
// L-Eval, a task whose name contains "code" keeps the end of the document.
// count is assumed not to grow when text is removed; if even the empty
// document does not fit, the empty document is returned.
func Truncate(doc string, budget int, mode, task string, count func(string) int) string {
	if count == nil {
		count = CountWords
	}
	switch mode {
	case TruncateLEval:
		return truncateLEval(doc, budget, strings.Contains(task, "code"), count)
	case TruncateHead:
		return truncateWords(doc, budget, false, count)
	case TruncateTail:
		return truncateWords(doc, budget, true, count)
	}
	return doc
}

// truncateLEval is L-Eval's loop:
//
//	while num_tokens(document) > max_length:
//	    document = " ".join(document.split(" ")[:max_length - cnt])  # keepTail: [cnt - max_length:]
//	    cnt += 250
//
// with Python's slice rules (negative bounds count from the end). The
// document after each round is a run of consecutive pieces of the
// original, so the loop tracks the run [lo, hi) instead of re-splitting.
func truncateLEval(doc string, budget int, keepTail bool, count func(string) int) string {
	if count(doc) <= budget {
		return doc
	}
	// starts[i] is the byte offset of piece i; piece i ends at
	// starts[i+1]-1 (the separating space), the last at len(doc).
	starts := []int{0}
	for i := 0; i < len(doc); i++ {
		if doc[i] == ' ' {
			starts = append(starts, i+1)
		}
	}
	n := len(starts)
	join := func(lo, hi int) string {
		if lo >= hi {
			return ""
		}
		end := len(doc)
		if hi < n {
			end = starts[hi] - 1
		}
		return doc[starts[lo]:end]
	}
	lo, hi := 0, n
	cur := doc
	for cnt := 0; count(cur) > budget; cnt += lEvalStep {
		if lo >= hi {
			break // even the empty document does not fit
		}
		m := hi - lo
		if keepTail {
			lo += pyIndex(cnt-budget, m)
		} else {
			hi = lo + pyIndex(budget-cnt, m)
		}
		cur = join(lo, hi)
	}
	return cur
}

// pyIndex normalises a Python slice bound i for a sequence of length m.
func pyIndex(i, m int) int {
	if i < 0 {
		i += m
		if i < 0 {
			i = 0
		}
	}
	if i > m {
		i = m
	}
	return i
}

// truncateWords keeps the longest prefix (or, with keepTail, suffix) of doc
// that ends (starts) at a word boundary and fits the budget, found by
// binary search over the number of words kept.
func truncateWords(doc string, budget int, keepTail bool, count func(string) int) string {
	if count(doc) <= budget {
		return doc
	}
	var starts, ends []int
	in := false
	for i, r := range doc {
		sp := unicode.IsSpace(r)
		if !sp && !in {
			starts = append(starts, i)
		} else if sp && in {
			ends = append(ends, i)
		}
		in = !sp
	}
	if in {
		ends = append(ends, len(doc))
	}
	n := len(starts)
	keep := func(k int) string {
		if k == 0 {
			return ""
		}
		if keepTail {
			return doc[starts[n-k]:]
		}
		return doc[:ends[k-1]]
	}
	// Largest k in [0, n) with count(keep(k)) <= budget (k = n does not fit).
	lo, hi := 0, n
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if count(keep(mid)) <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return keep(lo)
}
