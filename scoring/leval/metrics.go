package leval

import (
	"strings"
	"unicode/utf8"
)

// Bit masks of Python's string.punctuation
// (!"#$%&'()*+,-./:;<=>?@[\]^_`{|}~) for code points 0-63 and 64-127.
const (
	punctLo uint64 = 0xfc00fffe00000000
	punctHi uint64 = 0x78000001f8000001
)

// isASCIIPunct reports membership of Python's string.punctuation.
func isASCIIPunct(r rune) bool {
	switch {
	case r < 0:
		return false
	case r < 64:
		return punctLo&(1<<uint(r)) != 0
	case r < 128:
		return punctHi&(1<<uint(r-64)) != 0
	}
	return false
}

// NormalizeAnswerEM is normalize_answer from LEval Evaluation/em.py:
// remove punctuation, then the articles a/an/the, then collapse
// whitespace. Unlike the F1 version it does not lowercase, so "The" stays.
func NormalizeAnswerEM(s string) string {
	return strings.Join(normTokens(s), " ")
}

// NormalizeAnswerF1 is normalize_answer from LEval Evaluation/f1.py:
// lowercase (Python str.lower), remove punctuation, articles, and collapse
// whitespace.
func NormalizeAnswerF1(s string) string {
	return strings.Join(normTokens(pyLower(s)), " ")
}

// normTokens is white_space_fix(remove_articles(remove_punc(s))).split()
// in one pass: punctuation is skipped, every maximal run of word
// characters (of the text without punctuation, so "t.he" is "the") that
// is exactly "a", "an" or "the" acts as a space, and the result is split
// on whitespace.
func normTokens(s string) []string {
	buf := make([]byte, 0, len(s))
	spans := make([][2]int, 0, len(s)/6+1)
	tokStart, runStart := 0, -1
	endTok := func() {
		if len(buf) > tokStart {
			spans = append(spans, [2]int{tokStart, len(buf)})
		}
		tokStart = len(buf)
	}
	endRun := func() {
		if runStart < 0 {
			return
		}
		switch string(buf[runStart:]) {
		case "a", "an", "the":
			buf = buf[:runStart]
			endTok()
		}
		runStart = -1
	}
	for i := 0; i < len(s); {
		c := s[i]
		r, size := rune(c), 1
		if c >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		switch {
		case isASCIIPunct(r):
		case isPySpace(r):
			endRun()
			endTok()
		case isWordChar(r):
			if runStart < 0 {
				runStart = len(buf)
			}
			if size == 1 {
				buf = append(buf, c)
			} else {
				buf = append(buf, s[i:i+size]...)
			}
		default:
			endRun()
			if size == 1 {
				buf = append(buf, c)
			} else {
				buf = append(buf, s[i:i+size]...)
			}
		}
		i += size
	}
	endRun()
	endTok()
	all := string(buf)
	toks := make([]string, len(spans))
	for k, sp := range spans {
		toks[k] = all[sp[0]:sp[1]]
	}
	return toks
}

// ExactMatch is exact_match_score from LEval Evaluation/em.py
// (cd34b050). When the normalised ground truth holds only the letters
// A-D (or is empty) it is a multiple-choice answer: 1 for equal normalised
// strings, 0.25 when the prediction's characters are a subset of the
// ground truth's (partial credit for coursera's multi-answer questions;
// an empty normalised prediction also gets 0.25), else 0. Otherwise both
// raw strings are parsed as Python floats and compared (so "nan" never
// matches); when either does not parse, the score is 1 if the lowercased
// ground truth with spaces removed is a substring of the prediction
// treated alike, else 0.
func ExactMatch(prediction, groundTruth string) float64 {
	ngt := NormalizeAnswerEM(groundTruth)
	choice := true
	for i := 0; i < len(ngt); i++ {
		if !isABCD(ngt[i]) {
			choice = false
			break
		}
	}
	if choice {
		np := NormalizeAnswerEM(prediction)
		if np == ngt {
			return 1
		}
		for _, r := range np {
			if !strings.ContainsRune(ngt, r) {
				return 0
			}
		}
		return 0.25
	}
	if p, ok := pyFloat(prediction); ok {
		if g, ok := pyFloat(groundTruth); ok {
			if p == g {
				return 1
			}
			return 0
		}
	}
	g := strings.ReplaceAll(pyLower(groundTruth), " ", "")
	p := strings.ReplaceAll(pyLower(prediction), " ", "")
	if strings.Contains(p, g) {
		return 1
	}
	return 0
}

// F1 is f1_score from LEval Evaluation/f1.py (cd34b050): the token F1
// of the NormalizeAnswerF1 tokens (bag-of-words overlap), 0 when nothing
// overlaps.
func F1(prediction, groundTruth string) float64 {
	pt := normTokens(pyLower(prediction))
	gt := normTokens(pyLower(groundTruth))
	counts := make(map[string]int, len(gt))
	for _, t := range gt {
		counts[t]++
	}
	same := 0
	for _, t := range pt {
		if counts[t] > 0 {
			counts[t]--
			same++
		}
	}
	if same == 0 {
		return 0
	}
	precision := 1.0 * float64(same) / float64(len(pt))
	recall := 1.0 * float64(same) / float64(len(gt))
	return (2 * precision * recall) / (precision + recall)
}
