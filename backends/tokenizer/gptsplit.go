package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Known GPT-style pre-tokenization patterns. Their matches are computed by a
// hand-written matcher that follows Oniguruma's backtracking semantics
// exactly, because Go's regexp has no look-ahead.
const (
	// patternGPT2 is the GPT-2 pattern used by the ByteLevel pre-tokenizer
	// when use_regex is set.
	patternGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	// patternQwen2 is the Qwen2/Qwen3 Split pattern (single digits).
	patternQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// patternLlama3 is the Llama 3 (cl100k-style) Split pattern (digits in
	// groups of up to three).
	patternLlama3 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// gptMatcher finds the matches of one of the known GPT-style patterns.
type gptMatcher struct {
	// cl100k selects the Qwen/Llama-3 family; false is GPT-2.
	cl100k bool
	// maxDigits bounds a run of \p{N} (0: unbounded).
	maxDigits int
}

// knownMatcher returns the hand-written matcher for pattern, if it is one of
// the known ones.
func knownMatcher(pattern string) (*gptMatcher, bool) {
	switch pattern {
	case patternGPT2:
		return &gptMatcher{}, true
	case patternQwen2:
		return &gptMatcher{cl100k: true, maxDigits: 1}, true
	case patternLlama3:
		return &gptMatcher{cl100k: true, maxDigits: 3}, true
	}
	return nil, false
}

func isL(r rune) bool { return unicode.IsLetter(r) }
func isN(r rune) bool { return unicode.IsNumber(r) }
func isS(r rune) bool {
	if r < 0x80 {
		return r == ' ' || (r >= '\t' && r <= '\r')
	}
	return unicode.Is(unicode.White_Space, r)
}
func isCRLF(r rune) bool { return r == '\r' || r == '\n' }

// at decodes the rune at byte offset i of s (RuneError, 0 at the end).
func at(s string, i int) (rune, int) {
	if i >= len(s) {
		return utf8.RuneError, 0
	}
	c := s[i]
	if c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// findAll returns the [start,end) byte ranges of the non-overlapping
// leftmost matches in s.
func (m *gptMatcher) findAll(s string, dst [][2]int) [][2]int {
	for i := 0; i < len(s); {
		if e := m.matchAt(s, i); e > i {
			dst = append(dst, [2]int{i, e})
			i = e
			continue
		}
		_, n := at(s, i)
		i += n
	}
	return dst
}

// contraction matches the alternatives 's|'t|'re|'ve|'m|'ll|'d at i (s[i]
// is the apostrophe); ci enables Oniguruma's case folding.
func contraction(s string, i int, ci bool) int {
	eq := func(r rune, lower rune) bool {
		if r == lower {
			return true
		}
		if !ci {
			return false
		}
		if r == unicode.ToUpper(lower) {
			return true
		}
		return lower == 's' && r == 0x17F // LATIN SMALL LETTER LONG S folds to s
	}
	r1, n1 := at(s, i+1)
	if n1 == 0 {
		return -1
	}
	j := i + 1 + n1
	switch {
	case eq(r1, 's'), eq(r1, 't'), eq(r1, 'm'), eq(r1, 'd'):
		return j
	}
	r2, n2 := at(s, j)
	if n2 == 0 {
		return -1
	}
	switch {
	case eq(r1, 'r') && eq(r2, 'e'), eq(r1, 'v') && eq(r2, 'e'), eq(r1, 'l') && eq(r2, 'l'):
		return j + n2
	}
	return -1
}

// runWhile returns the end of the run of runes satisfying f starting at i,
// taking at most max runes when max > 0.
func runWhile(s string, i int, f func(rune) bool, max int) int {
	count := 0
	for i < len(s) {
		if max > 0 && count == max {
			break
		}
		r, n := at(s, i)
		if !f(r) {
			break
		}
		i += n
		count++
	}
	return i
}

func isOther(r rune) bool { return !isS(r) && !isL(r) && !isN(r) }

// matchAt returns the end of the match starting exactly at i, or -1.
func (m *gptMatcher) matchAt(s string, i int) int {
	r0, n0 := at(s, i)
	if r0 == '\'' {
		if e := contraction(s, i, m.cl100k); e > 0 {
			return e
		}
	}
	if m.cl100k {
		// [^\r\n\p{L}\p{N}]?\p{L}+
		if isL(r0) {
			return runWhile(s, i+n0, isL, 0)
		}
		if !isCRLF(r0) && !isN(r0) {
			if r1, n1 := at(s, i+n0); n1 > 0 && isL(r1) {
				return runWhile(s, i+n0+n1, isL, 0)
			}
		}
		// \p{N}{1,max}
		if isN(r0) {
			return runWhile(s, i, isN, m.maxDigits)
		}
		// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
		if e := m.punct(s, i, r0, n0); e > 0 {
			return runWhile(s, e, isCRLF, 0)
		}
		// \s*[\r\n]+
		if isS(r0) {
			w := runWhile(s, i, isS, 0)
			last := -1
			for j := i; j < w; {
				r, n := at(s, j)
				if isCRLF(r) {
					last = j + n
				}
				j += n
			}
			if last > 0 {
				return last
			}
		}
	} else {
		// ' ?\p{L}+', ' ?\p{N}+'
		j := i
		r, n := r0, n0
		if r0 == ' ' {
			if r1, n1 := at(s, i+n0); n1 > 0 && (isL(r1) || isN(r1)) {
				j, r, n = i+n0, r1, n1
			}
		}
		if isL(r) {
			return runWhile(s, j+n, isL, 0)
		}
		if isN(r) {
			return runWhile(s, j+n, isN, 0)
		}
		if e := m.punct(s, i, r0, n0); e > 0 {
			return e
		}
	}
	// \s+(?!\S) and \s+
	if isS(r0) {
		w := runWhile(s, i, isS, 0)
		if w == len(s) {
			return w
		}
		// Back off one whitespace character when the run is longer than one.
		if last := lastRuneStart(s[:w]); last > i {
			return last
		}
		return w
	}
	return -1
}

// punct matches ' ?[^\s\p{L}\p{N}]+' at i.
func (m *gptMatcher) punct(s string, i int, r0 rune, n0 int) int {
	j := i
	if r0 == ' ' {
		r1, n1 := at(s, i+n0)
		if n1 == 0 || !isOther(r1) {
			return -1
		}
		j = i + n0
	} else if !isOther(r0) {
		return -1
	}
	return runWhile(s, j, isOther, 0)
}

// lastRuneStart returns the byte offset of the last rune in s.
func lastRuneStart(s string) int {
	_, n := utf8.DecodeLastRuneInString(s)
	return len(s) - n
}
