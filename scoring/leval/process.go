package leval

import (
	"errors"
	"strings"
	"unicode/utf8"
)

// The functions in this file reproduce the output and ground-truth
// processing of OpenLMLab/LEval Evaluation/auto_eval.py (commit
// cd34b050269148aed75acbbe4a599873ad0f37e9), quirks included.

func isABCD(c byte) bool { return c >= 'A' && c <= 'D' }

// sortedSet is "".join(sorted(set(s))) for an ASCII string.
func sortedSet(s string) string {
	var seen [256]bool
	for i := 0; i < len(s); i++ {
		seen[s[i]] = true
	}
	var b []byte
	for c := 0; c < 256; c++ {
		if seen[c] {
			b = append(b, byte(c))
		}
	}
	return string(b)
}

// ProcessOutputMC is auto_eval.py process_output_mc: the answer letters of
// a multiple-choice output. multi is true for coursera (the reference
// tests "coursera" in the prediction file name), where several letters
// may be kept. Quirks reproduced:
//   - an empty or blank output gives "None";
//   - an output that is a substring of "ABCD" ("BC") is returned as is;
//   - without multi, the first A-D anywhere wins, so "Answer: C" gives "A";
//     outputs with no A-D fall through to the multi-answer logic;
//   - with multi: a leading run of A-D letters of length > 1 is kept
//     (sorted, deduplicated); else the text before the first "Question" is
//     searched for capitals followed by whitespace, "." or ")", of which
//     A-D are kept; failing that, the first run of consecutive A-D letters
//     (unsorted); failing that, "A".
func ProcessOutputMC(response string, multi bool) string {
	if len(pyStrip(response)) == 0 {
		return "None"
	}
	if strings.Contains("ABCD", response) {
		return response
	}
	if !multi {
		for i := 0; i < len(response); i++ {
			if isABCD(response[i]) {
				return response[i : i+1]
			}
		}
	}
	i := 0
	for i < len(response) && isABCD(response[i]) {
		i++
	}
	cleaned := response[:i]
	response = response[i:]
	if len(cleaned) > 1 {
		return sortedSet(cleaned)
	}
	if k := strings.Index(response, "Question"); k >= 0 {
		response = response[:k]
	}
	// re.findall(r"\s*[A-Z](?=[\s.)])") joined, then re.sub(r"[^A-D]", "").
	var b strings.Builder
	b.WriteString(cleaned)
	for j := 0; j < len(response); j++ {
		c := response[j]
		if !isABCD(c) || j+1 >= len(response) {
			continue
		}
		next, _ := utf8.DecodeRuneInString(response[j+1:])
		if next == '.' || next == ')' || isPySpace(next) {
			b.WriteByte(c)
		}
	}
	cleaned = sortedSet(b.String())
	if len(cleaned) == 0 {
		hasAnswer := false
		var run []byte
		for j := 0; j < len(response); j++ {
			if isABCD(response[j]) {
				run = append(run, response[j])
				hasAnswer = true
			} else if hasAnswer {
				break
			}
		}
		cleaned = string(run)
	}
	if len(cleaned) == 0 {
		cleaned = "A"
	}
	return cleaned
}

// errNoField is returned where the reference raises IndexError on
// response.split()[0].
var errNoField = errors.New("ground truth is blank (the reference raises IndexError)")

// ProcessGTMC is auto_eval.py process_gt_mc: the A-D letters of the first
// whitespace-separated field of the ground truth, or "A" when it has none.
// A blank ground truth is an error, as in the reference.
func ProcessGTMC(response string) (string, error) {
	first := pyStrip(response)
	if first == "" {
		return "", errNoField
	}
	if k := strings.IndexFunc(first, isPySpace); k >= 0 {
		first = first[:k]
	}
	var b []byte
	for i := 0; i < len(first); i++ {
		if isABCD(first[i]) {
			b = append(b, first[i])
		}
	}
	if len(b) == 0 {
		return "A", nil
	}
	return string(b), nil
}

// ProcessMath is auto_eval.py process_math, applied to both the GSM output
// and its ground truth: the word after the first "The answer is "
// (followed by a non-space), else the last space-separated word holding a
// digit in the text before the first blank line; then the digits of that
// word up to its first "." (Python's str.isdigit, so "²" counts; signs and
// thousands separators are dropped).
func ProcessMath(response string) string {
	ret := ""
	found := false
	const marker = "The answer is "
	for off := 0; ; {
		k := strings.Index(response[off:], marker)
		if k < 0 {
			break
		}
		start := off + k + len(marker)
		end := start
		for end < len(response) {
			r, size := utf8.DecodeRuneInString(response[end:])
			if isPySpace(r) {
				break
			}
			end += size
		}
		if end > start {
			ret, found = response[start:end], true
			break
		}
		off += k + 1
	}
	if !found {
		if k := strings.Index(response, "\n\n"); k >= 0 {
			response = response[:k]
		}
		words := strings.Split(response, " ")
		for i := len(words) - 1; i >= 0; i-- {
			if strings.IndexFunc(words[i], pyIsDigit) >= 0 {
				ret = words[i]
				break
			}
		}
	}
	var b strings.Builder
	for _, r := range ret {
		if pyIsDigit(r) {
			b.WriteRune(r)
		}
		if r == '.' {
			break
		}
	}
	return b.String()
}

// ProcessGTCode is auto_eval.py process_gt_code: whitespace runs become
// one space; ",", "'", "\" and ".0" are deleted (so "10.05" becomes
// "105"); "] [", "[ [", "] ]" lose their space.
func ProcessGTCode(response string) string {
	response = pyReSubSpace(response, " ")
	// The three single-byte deletions commute, so one pass does them.
	response = deleteBytes(response, ",'\\")
	for _, r := range [...][2]string{{".0", ""}, {"] [", "]["}, {"[ [", "[["}, {"] ]", "]]"}} {
		response = replaceAll(response, r[0], r[1])
	}
	return response
}

// ProcessOutputCode is auto_eval.py process_output_code: ProcessGTCode,
// then the phrases "will be", "of the code", "is" (also inside words:
// "list" becomes "lt"), "would be", "the value of", "the result of",
// "printed" are deleted; then the first len(gt.split())+3 whitespace
// pieces after the last "the final output", or else the last
// len(gt.split())+3 pieces, joined by spaces.
func ProcessOutputCode(response, gt string) string {
	gtLen := len(pySplit(gt))
	response = ProcessGTCode(response)
	for _, p := range [...]string{"will be", "of the code", "is", "would be", "the value of", "the result of", "printed"} {
		response = replaceAll(response, p, "")
	}
	n := gtLen + 3
	var res []string
	if k := strings.LastIndex(response, "the final output"); k >= 0 {
		res = pyReSplitSpace(response[k+len("the final output"):])
		if len(res) > n {
			res = res[:n]
		}
	} else {
		res = pyReSplitSpaceLast(response, n)
	}
	return strings.Join(res, " ")
}

// errNoFact is returned where the reference raises IndexError because the
// text has no "[fact:" part.
var errNoFact = errors.New(`no "[fact:" in text (the reference raises IndexError)`)

// ProcessGTJudge is auto_eval.py process_gt_judge for sci_fi: the text is
// lowercased and split at "[fact:"; loyalty is the part before, fact the
// part after with its last character (the closing bracket) dropped, both
// stripped. Text without "[fact:" is an error, as in the reference.
func ProcessGTJudge(response string) (loyalty, fact string, err error) {
	response = pyLower(response)
	parts := strings.Split(response, "[fact:")
	if len(parts) < 2 {
		return "", "", errNoFact
	}
	f := parts[1]
	if f != "" {
		_, size := utf8.DecodeLastRuneInString(f)
		f = f[:len(f)-size]
	}
	return pyStrip(parts[0]), pyStrip(f), nil
}

// ProcessOutputJudge is auto_eval.py process_output_judge: the output is
// split like a ground truth (so an output without "[fact:" is an error, as
// in the reference), and each part becomes "true" or "false" after the
// first whitespace-separated word containing "true" (tested first) or
// "false", or "<error>" when none does.
func ProcessOutputJudge(response string) (loyalty, fact string, err error) {
	l, f, err := ProcessGTJudge(response)
	if err != nil {
		return "", "", err
	}
	return judgeWord(l), judgeWord(f), nil
}

func judgeWord(s string) string {
	for _, w := range pySplit(s) {
		if strings.Contains(w, "true") {
			return "true"
		}
		if strings.Contains(w, "false") {
			return "false"
		}
	}
	return "<error>"
}

// replaceAll is strings.ReplaceAll(s, old, repl) for a non-empty old in a
// single scan, returning s itself when old does not occur.
func replaceAll(s, old, repl string) string {
	k := strings.Index(s, old)
	if k < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for k >= 0 {
		b.WriteString(s[:k])
		b.WriteString(repl)
		s = s[k+len(old):]
		k = strings.Index(s, old)
	}
	b.WriteString(s)
	return b.String()
}

// deleteBytes removes every occurrence of the ASCII bytes in set.
func deleteBytes(s, set string) string {
	k := strings.IndexAny(s, set)
	if k < 0 {
		return s
	}
	b := make([]byte, 0, len(s))
	for k >= 0 {
		b = append(b, s[:k]...)
		s = s[k+1:]
		k = strings.IndexAny(s, set)
	}
	return string(append(b, s...))
}
