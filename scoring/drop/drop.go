// Package drop reproduces the DROP (Dua et al., 2019) EM/F1 scoring of
// EleutherAI lm-evaluation-harness, lm_eval/tasks/drop/utils.py at commit
// 4e7e0d47f33bc71070c1d38394bafbb52b117163 (blob fc4e7d4b), functions
// process_results, get_metrics, get_answers, parse_answer, _answer_to_bags,
// _align_bags, _compute_f1, _match_numbers_if_present, _is_number,
// _normalize and its helpers, as it runs on CPython 3.11 (Unicode 14.0.0),
// numpy 1.24 and scipy 1.10.1 — quirks included:
//
//   - tokens are split on ' ' and '-' only, so "10\n\nPassage: ..." keeps
//     "10" unnormalised (not "10.0") and it no longer matches a gold "10";
//   - a number is whatever Python float() accepts ("1e5", "inf", "NaN",
//     " 3 ", "1_000", "١٢") and is rewritten as repr(float) ("100000.0",
//     "inf", "nan", "3.0", "1000.0", "12.0", "1e+16");
//   - punctuation is ASCII string.punctuation, removed inside a token unless
//     the token is a number, so "1.5." becomes "15.0" and "$1.50" "150.0";
//   - lowercasing is str.lower (U+0130 becomes "i̇", final sigma);
//   - "a", "an", "the" are removed at Unicode \b boundaries (str.isalnum);
//   - a gold answer whose first span is blank (str.strip) is ignored
//     entirely, even when it has further spans;
//   - F1 aligns predicted and gold spans with scipy's linear_sum_assignment,
//     averages with numpy's pairwise sum and rounds as np.round(x, 2)
//     (rint(x*100)/100, so 0.155 becomes 0.16, unlike Python's round).
//
// The drop-fixed variant (ScoreFixed, NormalizeFixed) changes only the
// tokenisation, splitting on any whitespace as well as '-', after the
// Open LLM Leaderboard's "DROP deep dive" (Hugging Face, December 2023).
package drop

import (
	"errors"
	"fmt"
	"math"
	"tally/scoring/npsum"
)

// bags holds the normalised spans of one scoring call back to back in
// buf, with offsets instead of pointers so that, for typical sizes, it
// lives on the stack.
type bags struct {
	buf   []byte
	words [][2]int32 // per span: its distinct words, then those that are numbers
	spans []span
}

// span is one normalised span (_answer_to_bags): buf[lo:hi] is its
// normalised string, words[w0:w1] its bag of distinct words and
// words[w1:n1] the words of the bag that parse as Python floats.
type span struct {
	lo, hi, w0, w1, n1 int32
}

func (b *bags) norm(s span) []byte     { return b.buf[s.lo:s.hi] }
func (b *bags) word(i int32) []byte    { return b.buf[b.words[i][0]:b.words[i][1]] }
func (b *bags) nwords(s span) int      { return int(s.w1 - s.w0) }
func (b *bags) hasNumbers(s span) bool { return s.n1 > s.w1 }

// add normalises raw as one more span. It takes and returns b by value so
// that b's scratch arrays can stay on the caller's stack.
func (b bags) add(raw string, fixed bool) bags {
	lo := int32(len(b.buf))
	b.buf = appendNormalized(b.buf, raw, fixed)
	hi := int32(len(b.buf))
	sp := span{lo: lo, hi: hi, w0: int32(len(b.words))}
	var seen map[string]struct{}
	for i := lo; i < hi; {
		j := i
		for j < hi && b.buf[j] != ' ' {
			j++
		}
		if j > i {
			w := b.buf[i:j]
			dup := false
			if seen != nil {
				_, dup = seen[string(w)]
			} else {
				for k := sp.w0; k < int32(len(b.words)); k++ {
					if string(b.word(k)) == string(w) {
						dup = true
						break
					}
				}
			}
			if !dup {
				b.words = append(b.words, [2]int32{i, j})
				if seen != nil {
					seen[string(w)] = struct{}{}
				} else if int32(len(b.words))-sp.w0 > 32 {
					seen = make(map[string]struct{}, 64)
					for k := sp.w0; k < int32(len(b.words)); k++ {
						seen[string(b.word(k))] = struct{}{}
					}
				}
			}
		}
		i = j + 1
	}
	sp.w1 = int32(len(b.words))
	for k := sp.w0; k < sp.w1; k++ {
		if w := b.word(k); mayBeNumber(w) && isPyNumber(string(w)) {
			b.words = append(b.words, b.words[k])
		}
	}
	sp.n1 = int32(len(b.words))
	b.spans = append(b.spans, sp)
	return b
}

// Score is the reference process_results for one generation: the maximum
// over gold answers (each a list of spans) of the DROP exact match and F1
// of prediction. It returns 0, 0 where the reference raises (a gold answer
// with no spans); use ScoreSpans to see that error.
func Score(prediction string, answers [][]string) (em, f1 float64) {
	em, f1, err := scoreSpans([]string{prediction}, answers, false)
	if err != nil {
		return 0, 0
	}
	return em, f1
}

// ScoreFixed is Score under the drop-fixed normalisation (NormalizeFixed):
// tokens split on any whitespace (str.isspace, as str.split uses) and '-'
// instead of only ' ' and '-', so "10\n\nPassage: ..." yields the number
// "10.0" as "10 Passage" does. This is the minimal fix for the bug the Open
// LLM Leaderboard's "DROP deep dive" (Hugging Face, December 2023) found:
// every other step, quirks included, is the reference's, and Score keeps
// the reference figure. It returns 0, 0 where Score does.
func ScoreFixed(prediction string, answers [][]string) (em, f1 float64) {
	em, f1, err := scoreSpans([]string{prediction}, answers, true)
	if err != nil {
		return 0, 0
	}
	return em, f1
}

// ErrEmptyGold is returned for a gold answer with no spans, where the
// reference raises IndexError (gold_answer[0]).
var ErrEmptyGold = errors.New("gold answer has no spans (reference raises IndexError)")

// ScoreSpans is the reference process_results(doc, results) with results
// = predictions, each prediction a span (get_metrics accepts a list), and
// doc["answers"] = answers. fixed selects the drop-fixed normalisation.
// It fails where the reference raises: a gold answer with no spans.
func ScoreSpans(predictions []string, answers [][]string, fixed bool) (em, f1 float64, err error) {
	return scoreSpans(predictions, answers, fixed)
}

func scoreSpans(predictions []string, answers [][]string, fixed bool) (em, f1 float64, err error) {
	// Normalise the predictions and every gold span once, in scratch space
	// that stays on the stack for typical sizes.
	var byteBuf [512]byte
	var wordBuf [64][2]int32
	var spanBuf [16]span
	bs := bags{buf: byteBuf[:0], words: wordBuf[:0], spans: spanBuf[:0]}
	for _, p := range predictions {
		bs = bs.add(p, fixed)
	}
	for _, g := range answers {
		for _, r := range g {
			bs = bs.add(r, fixed)
		}
	}
	b := &bs
	pred, off := b.spans[:len(predictions)], len(predictions)
	for k, gold := range answers {
		e, f := getMetrics(b, pred, b.spans[off:off+len(gold)])
		off += len(gold)
		if len(gold) == 0 {
			return 0, 0, fmt.Errorf("scoring DROP gold answer %d: %w", k, ErrEmptyGold)
		}
		if pyStrip(gold[0]) != "" {
			if e > em {
				em = e
			}
			if f > f1 {
				f1 = f
			}
		}
	}
	return em, f1, nil
}

// getMetrics is the reference get_metrics on bags already made.
func getMetrics(b *bags, pred, gold []span) (em, f1 float64) {
	if len(pred) == len(gold) && sameNormSet(b, pred, gold) && sameNormSet(b, gold, pred) {
		em = 1
	}
	return em, npRound2(alignedMean(b, pred, gold))
}

// sameNormSet reports whether every normalised span of xs is one of ys.
func sameNormSet(b *bags, xs, ys []span) bool {
	for _, x := range xs {
		found := false
		for _, y := range ys {
			if string(b.norm(x)) == string(b.norm(y)) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// alignedMean is np.mean(_align_bags(pred, gold)): per gold span, the F1
// of the prediction span linear_sum_assignment aligns it with (0 when
// unaligned), padded with zeros to max(len(gold), len(pred)) entries, and
// averaged with numpy's pairwise sum.
func alignedMean(b *bags, pred, gold []span) float64 {
	ng, np := len(gold), len(pred)
	if ng == 1 || np == 1 {
		// One row or column: scipy assigns the single row (column) its best
		// entry. Whichever of equal entries it picks, the per-gold vector
		// holds that value and zeros, whose pairwise sum is the value itself.
		best := 0.0
		for _, g := range gold {
			for _, p := range pred {
				if matchNumbers(b, g, p) {
					best = max(best, computeF1(b, p, g))
				}
			}
		}
		return (0.0 + best) / float64(max(ng, np))
	}
	return 0.0 + npsum.Mean(alignBags(b, pred, gold)) // numpy adds from 0.0: no -0
}

// alignBags is _align_bags: per gold span, the F1 of the prediction span
// linear_sum_assignment aligns it with (0 when unaligned), padded with
// zeros to max(len(gold), len(pred)) entries.
func alignBags(b *bags, pred, gold []span) []float64 {
	ng, np := len(gold), len(pred)
	out := make([]float64, max(ng, np))
	scores := make([]float64, ng*np)
	cost := make([]float64, ng*np)
	for g := range gold {
		for p := range pred {
			if matchNumbers(b, gold[g], pred[p]) {
				scores[g*np+p] = computeF1(b, pred[p], gold[g])
			}
			cost[g*np+p] = -scores[g*np+p]
		}
	}
	rows, cols := linearSumAssignment(ng, np, cost)
	for k, r := range rows {
		if s := scores[r*np+cols[k]]; s > out[r] {
			out[r] = s
		}
	}
	return out
}

// computeF1 is _compute_f1 on the bags of two spans.
func computeF1(b *bags, pred, gold span) float64 {
	inter := b.common(gold.w0, gold.w1, pred.w0, pred.w1, false)
	np, ng := b.nwords(pred), b.nwords(gold)
	precision, recall := 1.0, 1.0
	if np > 0 {
		precision = float64(inter) / float64(np)
	}
	if ng > 0 {
		recall = float64(inter) / float64(ng)
	}
	if precision == 0 && recall == 0 {
		return 0
	}
	return (2 * precision * recall) / (precision + recall)
}

// matchNumbers is _match_numbers_if_present: true when the gold span has no
// number or shares one with the prediction.
func matchNumbers(b *bags, gold, pred span) bool {
	return !b.hasNumbers(gold) || b.common(gold.w1, gold.n1, pred.w1, pred.n1, true) > 0
}

// common counts the words of words[a0:a1] found in words[b0:b1] (each
// range holds distinct words), stopping at the first one when first is
// set. Large ranges go through a map so that long generations stay linear.
func (b *bags) common(a0, a1, b0, b1 int32, first bool) int {
	n := 0
	if (a1-a0)*(b1-b0) > 1024 {
		set := make(map[string]struct{}, b1-b0)
		for k := b0; k < b1; k++ {
			set[string(b.word(k))] = struct{}{}
		}
		for k := a0; k < a1; k++ {
			if _, ok := set[string(b.word(k))]; ok {
				n++
				if first {
					return n
				}
			}
		}
		return n
	}
	for i := a0; i < a1; i++ {
		w := b.word(i)
		for j := b0; j < b1; j++ {
			if string(b.word(j)) == string(w) {
				n++
				if first {
					return n
				}
				break
			}
		}
	}
	return n
}

// npRound2 is np.round(x, 2) (what round(np.float64, 2) calls):
// rint(x*100)/100, half to even on the scaled value.
func npRound2(x float64) float64 {
	return math.RoundToEven(x*100) / 100
}
