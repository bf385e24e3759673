// Package sacrebleu computes corpus BLEU, chrF and TER as sacrebleu 2.6.0
// computes them with its defaults (github.com/mjpost/sacrebleu, tag
// v2.6.0, commit 2277caccfc7b956671a6a09f1646f62250034157), which is what
// lm-evaluation-harness's bleu, chrf and ter aggregations call
// (lm_eval/api/metrics.py: sacrebleu.corpus_bleu, corpus_chrf and
// corpus_ter on the predictions and references):
//
//   - BLEU: sacrebleu/metrics/bleu.py BLEU with smooth_method "exp",
//     tokenize "13a" (sacrebleu/tokenizers/tokenizer_13a.py Tokenizer13a
//     and tokenizer_re.py TokenizerRegexp), max n-gram order 4, no
//     lowercasing, no effective order; closest reference length, n-gram
//     counts clipped by the maximum over references;
//   - chrF: sacrebleu/metrics/chrf.py CHRF with char_order 6, word_order
//     0, beta 2, whitespace removed, the sacreBLEU 2 effective-order
//     averaging (eps_smoothing false), the best reference by sentence F;
//   - TER: sacrebleu/metrics/ter.py TER and lib_ter.py
//     translation_edit_rate with tokenizer_ter.py TercomTokenizer
//     (case-insensitive, not normalised, punctuation kept): the beam edit
//     distance and Tercom's shift heuristics, the best reference's edits
//     over the average reference length.
//
// A corpus score is a function of the sum of per-segment statistics
// (sacrebleu's Metric._extract_corpus_statistics then
// _aggregate_and_compute, sum_of_lists), so a segment's statistics are
// computed once (BLEUStats, CHRFStats, TERStats) and any selection of
// segments, a bootstrap resample included, is scored from their sums
// (BLEUScore, CHRFScore, TERScore).
//
// The code is a transcription, not a library: no Go library computes
// these with sacrebleu's tokenisation, smoothing and tie-breaking, which
// decide the scores' digits. Python's semantics are kept where they
// matter: str.split() and str.rstrip() on Python's white space, code
// points (not bytes) for character n-grams, the re patterns of the
// tokenisers through tally/internal/pyre, str.lower(), float arithmetic in
// Python's order, and math.exp and math.log correctly rounded (CPython
// calls the C library's; glibc's are correctly rounded but for rare
// arguments, about 1 in 1,500 for exp and 1 in 8,000 for log, where a BLEU
// can then differ from sacrebleu's on glibc in its last bit). Sums are
// sequential, as Python 3.11's sum() (3.12's compensated sum can differ in
// the last bit).
package sacrebleu

import (
	"strings"
	"sync"

	"tally/internal/pyre"
	"tally/internal/pystr"
)

// Commit is sacrebleu's commit whose behaviour is reproduced (tag v2.6.0).
const Commit = "2277caccfc7b956671a6a09f1646f62250034157"

// maxOrder is BLEU's MAX_NGRAM_ORDER.
const maxOrder = 4

// BLEUStatsLen is the length of a segment's BLEU statistics:
// [hyp_len, ref_len, correct_1..4, total_1..4].
const BLEUStatsLen = 2 + 2*maxOrder

// tokenizer13aRes are TokenizerRegexp's substitutions, in order.
var tokenizer13aRes = sync.OnceValue(func() [][2]any {
	return [][2]any{
		{pyre.MustCompile(`([\{-\~\[-\` + "`" + ` -\&\(-\+\:-\@\/])`), ` \1 `},
		{pyre.MustCompile(`([^0-9])([\.,])`), `\1 \2 `},
		{pyre.MustCompile(`([\.,])([^0-9])`), ` \1 \2`},
		{pyre.MustCompile(`([0-9])(-)`), `\1 \2 `},
	}
})

// Tokenize13a is Tokenizer13a: mteval-v13a's language-independent
// normalisation (<skipped> removed, "-\n" joined, newlines as spaces,
// &quot; &amp; &lt; &gt; decoded when the line has "&"), then
// TokenizerRegexp's punctuation splitting and single spaces.
func Tokenize13a(line string) string {
	line = strings.ReplaceAll(line, "<skipped>", "")
	line = strings.ReplaceAll(line, "-\n", "")
	line = strings.ReplaceAll(line, "\n", " ")
	if strings.Contains(line, "&") {
		line = strings.ReplaceAll(line, "&quot;", `"`)
		line = strings.ReplaceAll(line, "&amp;", "&")
		line = strings.ReplaceAll(line, "&lt;", "<")
		line = strings.ReplaceAll(line, "&gt;", ">")
	}
	line = " " + line + " "
	for _, r := range tokenizer13aRes() {
		s, err := r[0].(*pyre.Regexp).Sub(r[1].(string), line)
		if err != nil {
			// The patterns are single characters and pairs: linear, far
			// within pyre's step budget for any line that fits in memory.
			panic("sacrebleu: 13a tokenizer: " + err.Error())
		}
		line = s
	}
	return strings.Join(split(line), " ")
}

// split is Python's str.split(): runs of Python white space separate the
// fields, none empty.
func split(s string) []string { return strings.FieldsFunc(s, pystr.IsSpace) }

// rstrip is Python's str.rstrip().
func rstrip(s string) string { return strings.TrimRightFunc(s, pystr.IsSpace) }

// wordNgrams counts the 1..maxOrder-grams of a tokenised line
// (extract_all_word_ngrams), keyed by the n-gram's tokens joined by "\x00"
// with its order.
func wordNgrams(line string) (map[string]int, int) {
	tokens := split(line)
	out := map[string]int{}
	for n := 1; n <= maxOrder; n++ {
		for i := 0; i+n <= len(tokens); i++ {
			out[ngramKey(tokens[i:i+n])]++
		}
	}
	return out, len(tokens)
}

func ngramKey(toks []string) string {
	return string(rune('0'+len(toks))) + "\x00" + strings.Join(toks, "\x00")
}

// BLEUStats are a segment's BLEU statistics against its references
// (BLEU._compute_segment_statistics, after _preprocess_segment: rstrip,
// then 13a): the hypothesis' length, the closest reference length (the
// shorter on a tie), and per order the n-grams matched (clipped by the
// most any reference has) and the hypothesis' n-grams.
func BLEUStats(hyp string, refs []string) []float64 {
	var refNgrams map[string]int
	var refLens []int
	for _, ref := range refs {
		ng, n := wordNgrams(Tokenize13a(rstrip(ref)))
		refLens = append(refLens, n)
		if refNgrams == nil {
			refNgrams = ng
			continue
		}
		for k, c := range ng {
			refNgrams[k] = max(refNgrams[k], c)
		}
	}
	hypNgrams, hypLen := wordNgrams(Tokenize13a(rstrip(hyp)))
	closestDiff, closestLen := -1, -1
	for _, l := range refLens {
		diff := hypLen - l
		if diff < 0 {
			diff = -diff
		}
		if closestDiff == -1 || diff < closestDiff {
			closestDiff, closestLen = diff, l
		} else if diff == closestDiff && l < closestLen {
			closestLen = l
		}
	}
	out := make([]float64, BLEUStatsLen)
	out[0], out[1] = float64(hypLen), float64(closestLen)
	for k, c := range hypNgrams {
		n := int(k[0] - '1')
		out[2+maxOrder+n] += float64(c)
		if r, ok := refNgrams[k]; ok {
			out[2+n] += float64(min(c, r))
		}
	}
	return out
}

// myLog is sacrebleu's my_log: log, with log(0) floored to -9999999999.
func myLog(x float64) float64 {
	if x == 0 {
		return -9999999999
	}
	return crLog(x)
}

// BLEUScore is BLEU.compute_bleu on summed statistics (a corpus's, or a
// resample's), smooth_method "exp": the brevity penalty times the
// geometric mean of the n-gram precisions, an order with no match counted
// as 100 / (2^k · total) for its k-th such order, 0 when nothing matched.
func BLEUScore(stats []float64) float64 {
	sysLen, refLen := stats[0], stats[1]
	correct, total := stats[2:2+maxOrder], stats[2+maxOrder:]
	bp := 1.0
	if sysLen < refLen {
		if sysLen > 0 {
			bp = crExp(1 - refLen/sysLen)
		} else {
			bp = 0
		}
	}
	any := false
	for _, c := range correct {
		any = any || c != 0
	}
	if !any {
		return 0
	}
	precisions := make([]float64, maxOrder)
	smooth := 1.0
	for n := 1; n <= maxOrder; n++ {
		if total[n-1] == 0 {
			break
		}
		if correct[n-1] == 0 {
			smooth *= 2
			precisions[n-1] = 100 / (smooth * total[n-1])
		} else {
			precisions[n-1] = 100 * correct[n-1] / total[n-1]
		}
	}
	sum := 0.0
	for _, p := range precisions {
		sum += myLog(p)
	}
	return bp * crExp(sum/maxOrder)
}

// Sum adds segments' statistics in order (sum_of_lists): the corpus's.
func Sum(stats [][]float64) []float64 {
	if len(stats) == 0 {
		return nil
	}
	out := make([]float64, len(stats[0]))
	for _, s := range stats {
		for i := range out {
			out[i] += s[i]
		}
	}
	return out
}
