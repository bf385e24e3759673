// Package rouge computes ROUGE-1, ROUGE-2, ROUGE-L and ROUGE-Lsum exactly as
// Google's rouge_score package does with its default settings (the
// DefaultTokenizer, no stemmer, split_summaries=False).
//
// Reference: google-research/google-research, folder rouge/ (published on
// PyPI as rouge_score 0.1.2): rouge_scorer.py RougeScorer.score,
// RougeScorer.score_multi, _create_ngrams, _score_ngrams, _score_lcs,
// _lcs_table, _backtrack_norec, _summary_level_lcs, _union_lcs; tokenize.py
// tokenize; scoring.py fmeasure. Read at google-research commit
// 61ce9f0ca76025dac5b671c0631e443a9975a8a3 (rouge_scorer.py) and
// 7ce52c05d1ef3f54233faf14772609f45994a7ae (tokenize.py); score_multi from
// the rouge_score 0.1.2 release source (as vendored in
// Qcompiler/MixQ_Tensorrt_LLM@766cc5b277600216e392818e1747b7d051265a06).
//
// Behaviour reproduced, quirks included:
//   - Tokens: the text is lowercased with Python's str.lower, every run of
//     characters outside [a-z0-9] becomes a separator, so any non-ASCII
//     letter splits a word ("café" gives "caf"). Only two non-ASCII
//     characters survive lowercasing as ASCII: U+212A KELVIN SIGN gives "k",
//     and U+0130 (İ) gives "i" followed by a combining dot, which then acts
//     as a separator ("İx" gives "i", "x").
//   - ROUGE-N precision and recall divide by max(count, 1); F is
//     2PR/(P+R), or 0 when P+R is 0.
//   - ROUGE-L is 0 when either side has no tokens.
//   - ROUGE-Lsum splits on "\n" only (no sentence splitter), drops empty
//     lines but keeps lines without tokens, and counts union-LCS hits with
//     the per-token clipping of ROUGE-1.5.5, taking one particular LCS per
//     sentence pair as _backtrack_norec reads it out.
//   - ScoreMulti picks, per ROUGE type, the first reference with the
//     highest F-measure (numpy argmax).
//
// L-Eval (OpenLMLab/LEval Evaluation/rouge.py) uses this scorer with the
// same four types and use_stemmer=False, but first rewrites both texts with
// one nltk punkt sentence per line; that leaves ROUGE-1/2/L unchanged and
// alters only ROUGE-Lsum, for which this package splits on the newlines
// already present (rouge_score's default).
package rouge

import (
	"unicode/utf8"
)

// Measure is a precision, recall and F-measure triple, as rouge_score's
// scoring.Score namedtuple.
type Measure struct {
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	FMeasure  float64 `json:"fmeasure"`
}

// Scores holds the four ROUGE variants rouge_score computes for the types
// ["rouge1", "rouge2", "rougeL", "rougeLsum"]. All values are fractions in
// [0, 1].
type Scores struct {
	// Rouge1 is unigram overlap.
	Rouge1 Measure `json:"rouge1"`
	// Rouge2 is bigram overlap.
	Rouge2 Measure `json:"rouge2"`
	// RougeL is the longest common subsequence over the whole token lists.
	RougeL Measure `json:"rougeL"`
	// RougeLsum is the summary-level union LCS over newline-separated
	// sentences.
	RougeLsum Measure `json:"rougeLsum"`
}

// fmeasure is rouge_score scoring.fmeasure.
func fmeasure(p, r float64) float64 {
	if p+r > 0 {
		return 2 * p * r / (p + r)
	}
	return 0
}

// Tokenize returns the tokens rouge_score's default tokenizer produces for
// text (tokenize.tokenize with stemmer=None): lowercase, split on every
// character outside [a-z0-9].
func Tokenize(text string) []string {
	var toks []string
	forEachToken(text, func(tok []byte, _ int) {
		toks = append(toks, string(tok))
	})
	return toks
}

// forEachToken calls fn for every token of text with the index of the
// "\n"-separated line it lies in. The token bytes are reused between calls.
func forEachToken(text string, fn func(tok []byte, line int)) {
	buf := make([]byte, 0, 32)
	line := 0
	flush := func() {
		if len(buf) > 0 {
			fn(buf, line)
			buf = buf[:0]
		}
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
				buf = append(buf, c)
			case c >= 'A' && c <= 'Z':
				buf = append(buf, c+('a'-'A'))
			default:
				flush()
				if c == '\n' {
					line++
				}
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		switch r {
		case 0x212A: // KELVIN SIGN lowercases to ASCII "k".
			buf = append(buf, 'k')
		case 0x130: // İ lowercases to "i" + U+0307, a separator.
			buf = append(buf, 'i')
			flush()
		default:
			flush()
		}
	}
	flush()
}

// doc is one text as token ids, with its "\n"-separated sentences.
type doc struct {
	ids []int32
	// sents are the non-empty lines, each as a sub-slice of ids.
	sents [][]int32
}

// interner maps token strings to dense ids shared by the texts of one
// comparison.
type interner struct {
	m map[string]int32
}

// newInterner returns an interner sized for texts of about n bytes.
func newInterner(n int) *interner { return &interner{m: make(map[string]int32, min(n/8, 4096))} }

func (in *interner) id(tok []byte) int32 {
	if v, ok := in.m[string(tok)]; ok {
		return v
	}
	v := int32(len(in.m))
	in.m[string(tok)] = v
	return v
}

// encode tokenises text once, recording the token ids and, for
// ROUGE-Lsum, the token range of every non-empty line.
func (in *interner) encode(text string) doc {
	var d doc
	lineStart := make([]int, 0, 8) // token index where each line starts
	lineStart = append(lineStart, 0)
	cur := 0
	forEachToken(text, func(tok []byte, line int) {
		for cur < line {
			cur++
			lineStart = append(lineStart, len(d.ids))
		}
		d.ids = append(d.ids, in.id(tok))
	})
	// Lines after the last token.
	start := 0
	lineIdx := 0
	for i := 0; i <= len(text); i++ {
		if i == len(text) || text[i] == '\n' {
			if i > start { // Python keeps lines with len(x) > 0.
				var lo, hi int
				if lineIdx < len(lineStart) {
					lo = lineStart[lineIdx]
				} else {
					lo = len(d.ids)
				}
				if lineIdx+1 < len(lineStart) {
					hi = lineStart[lineIdx+1]
				} else {
					hi = len(d.ids)
				}
				d.sents = append(d.sents, d.ids[lo:hi:hi])
			}
			lineIdx++
			start = i + 1
		}
	}
	return d
}

// Score compares prediction with one reference, as
// RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"]).score(reference,
// prediction).
func Score(prediction, reference string) Scores {
	in := newInterner(len(prediction) + len(reference))
	ref := in.encode(reference)
	pred := in.encode(prediction)
	return scorePair(ref, pred, len(in.m))
}

// ScoreMulti compares prediction with several references, as rouge_score's
// RougeScorer.score_multi: for each ROUGE type independently, the scores of
// the first reference with the highest F-measure. With no references the
// reference raises (numpy argmax of an empty list); ScoreMulti then returns
// zero Scores.
func ScoreMulti(prediction string, references []string) Scores {
	var best Scores
	for i, r := range references {
		s := Score(prediction, r)
		if i == 0 {
			best = s
			continue
		}
		if s.Rouge1.FMeasure > best.Rouge1.FMeasure {
			best.Rouge1 = s.Rouge1
		}
		if s.Rouge2.FMeasure > best.Rouge2.FMeasure {
			best.Rouge2 = s.Rouge2
		}
		if s.RougeL.FMeasure > best.RougeL.FMeasure {
			best.RougeL = s.RougeL
		}
		if s.RougeLsum.FMeasure > best.RougeLsum.FMeasure {
			best.RougeLsum = s.RougeLsum
		}
	}
	return best
}

func scorePair(ref, pred doc, vocab int) Scores {
	var b bitLCS
	return Scores{
		Rouge1:    scoreNgrams(ref.ids, pred.ids, 1, vocab),
		Rouge2:    scoreNgrams(ref.ids, pred.ids, 2, vocab),
		RougeL:    scoreLCS(&b, ref.ids, pred.ids, vocab),
		RougeLsum: summaryLevelLCS(&b, ref.sents, pred.sents, vocab),
	}
}

// RougeN returns ROUGE-N of prediction against reference for n >= 1, as
// rouge_score's "rougeN" types. For n <= 0 the reference raises; RougeN
// returns a zero Measure.
func RougeN(prediction, reference string, n int) Measure {
	if n <= 0 {
		return Measure{}
	}
	in := newInterner(len(prediction) + len(reference))
	ref := in.encode(reference)
	pred := in.encode(prediction)
	return scoreNgrams(ref.ids, pred.ids, n, len(in.m))
}

// scoreNgrams is _score_ngrams(_create_ngrams(target, n),
// _create_ngrams(prediction, n)). Token ids are below vocab.
func scoreNgrams(target, prediction []int32, n, vocab int) Measure {
	tc := len(target) - n + 1
	pc := len(prediction) - n + 1
	if tc < 0 {
		tc = 0
	}
	if pc < 0 {
		pc = 0
	}
	inter := 0
	if tc > 0 && pc > 0 {
		switch n {
		case 1:
			counts := make([]int32, vocab)
			for _, t := range prediction {
				counts[t]++
			}
			for _, t := range target {
				if counts[t] > 0 {
					counts[t]--
					inter++
				}
			}
		case 2:
			counts := make(map[uint64]int, pc)
			for i := 0; i < pc; i++ {
				counts[uint64(uint32(prediction[i]))<<32|uint64(uint32(prediction[i+1]))]++
			}
			for i := 0; i < tc; i++ {
				k := uint64(uint32(target[i]))<<32 | uint64(uint32(target[i+1]))
				if counts[k] > 0 {
					counts[k]--
					inter++
				}
			}
		default:
			counts := make(map[string]int, pc)
			key := func(s []int32) string {
				b := make([]byte, 0, 4*len(s))
				for _, v := range s {
					b = append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
				}
				return string(b)
			}
			for i := 0; i < pc; i++ {
				counts[key(prediction[i:i+n])]++
			}
			for i := 0; i < tc; i++ {
				k := key(target[i : i+n])
				if counts[k] > 0 {
					counts[k]--
					inter++
				}
			}
		}
	}
	p := float64(inter) / float64(max(pc, 1))
	r := float64(inter) / float64(max(tc, 1))
	return Measure{p, r, fmeasure(p, r)}
}

// scoreLCS is _score_lcs.
func scoreLCS(b *bitLCS, target, prediction []int32, vocab int) Measure {
	if len(target) == 0 || len(prediction) == 0 {
		return Measure{}
	}
	l := float64(b.length(target, prediction, vocab))
	p := l / float64(len(prediction))
	r := l / float64(len(target))
	return Measure{p, r, fmeasure(p, r)}
}

// summaryLevelLCS is _summary_level_lcs over tokenised sentences.
func summaryLevelLCS(scratch *bitLCS, refSents, canSents [][]int32, vocab int) Measure {
	if len(refSents) == 0 || len(canSents) == 0 {
		return Measure{}
	}
	m, n := 0, 0
	for _, s := range refSents {
		m += len(s)
	}
	for _, s := range canSents {
		n += len(s)
	}
	if m == 0 || n == 0 {
		return Measure{}
	}
	cntR := make([]int32, vocab)
	cntC := make([]int32, vocab)
	for _, s := range refSents {
		for _, t := range s {
			cntR[t]++
		}
	}
	for _, s := range canSents {
		for _, t := range s {
			cntC[t]++
		}
	}
	hits := 0
	var mark []bool
	for _, r := range refSents {
		if cap(mark) < len(r) {
			mark = make([]bool, len(r))
		}
		mark = mark[:len(r)]
		clear(mark)
		for _, c := range canSents {
			for _, k := range scratch.indices(r, c, vocab) {
				mark[k] = true
			}
		}
		// Union of indices in increasing order (sorted(set().union(...))).
		for k, ok := range mark {
			if !ok {
				continue
			}
			t := r[k]
			if cntC[t] > 0 && cntR[t] > 0 {
				hits++
				cntC[t]--
				cntR[t]--
			}
		}
	}
	rec := float64(hits) / float64(m)
	prec := float64(hits) / float64(n)
	return Measure{prec, rec, fmeasure(prec, rec)}
}
