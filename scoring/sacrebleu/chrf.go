package sacrebleu

import "strings"

// chrF's defaults (CHRF.CHAR_ORDER, WORD_ORDER, BETA).
const (
	charOrder = 6
	beta      = 2
)

// CHRFStatsLen is the length of a segment's chrF statistics: per
// character order 1..6, [hypothesis n-grams, reference n-grams, matched].
const CHRFStatsLen = 3 * charOrder

// charNgrams counts the 1..charOrder character n-grams of a line with its
// white space removed (extract_all_char_ngrams, whitespace False), over
// code points.
func charNgrams(line string) []map[string]int {
	runes := []rune(strings.Join(split(line), ""))
	out := make([]map[string]int, charOrder)
	for n := 1; n <= charOrder; n++ {
		m := map[string]int{}
		for i := 0; i+n <= len(runes); i++ {
			m[string(runes[i:i+n])]++
		}
		out[n-1] = m
	}
	return out
}

// matchStats is CHRF._get_match_statistics: the hypothesis' n-grams (0
// when the reference has none), the reference's, and the matches.
func matchStats(hyp, ref map[string]int) (h, r, m float64) {
	hypCount, match := 0, 0
	for ng, c := range hyp {
		hypCount += c
		if rc, ok := ref[ng]; ok {
			match += min(c, rc)
		}
	}
	refCount := 0
	for _, c := range ref {
		refCount += c
	}
	if len(ref) == 0 {
		hypCount = 0
	}
	return float64(hypCount), float64(refCount), float64(match)
}

// CHRFStats are a segment's chrF statistics against the reference whose
// sentence-level F is highest (the first of equals;
// CHRF._compute_segment_statistics). chrF neither strips nor lowercases.
func CHRFStats(hyp string, refs []string) []float64 {
	h := charNgrams(hyp)
	var best []float64
	bestF := -1.0
	for _, ref := range refs {
		r := charNgrams(ref)
		stats := make([]float64, 0, CHRFStatsLen)
		for i := range charOrder {
			a, b, c := matchStats(h[i], r[i])
			stats = append(stats, a, b, c)
		}
		if f := CHRFScore(stats); f > bestF {
			bestF, best = f, stats
		}
	}
	if best == nil {
		best = make([]float64, CHRFStatsLen)
	}
	return best
}

// CHRFScore is CHRF._compute_f_score on summed statistics: the F-beta of
// the precision and recall averaged over the orders where both the
// hypothesis and the reference have n-grams, times 100 (0 when both are
// 0).
func CHRFScore(stats []float64) float64 {
	const eps = 1e-16
	factor := float64(beta * beta)
	score, avgPrec, avgRec := 0.0, 0.0, 0.0
	effective := 0
	for i := range charOrder {
		nHyp, nRef, nMatch := stats[3*i], stats[3*i+1], stats[3*i+2]
		prec, rec := eps, eps
		if nHyp > 0 {
			prec = nMatch / nHyp
		}
		if nRef > 0 {
			rec = nMatch / nRef
		}
		denom := factor*prec + rec
		if denom > 0 {
			score += (1 + factor) * prec * rec / denom
		} else {
			score += eps
		}
		if nHyp > 0 && nRef > 0 {
			avgPrec += prec
			avgRec += rec
			effective++
		}
	}
	if effective == 0 {
		avgPrec, avgRec = 0, 0
	} else {
		avgPrec /= float64(effective)
		avgRec /= float64(effective)
	}
	if avgPrec+avgRec != 0 {
		score = (1 + factor) * avgPrec * avgRec
		score /= factor*avgPrec + avgRec
		return 100 * score
	}
	return 0
}
