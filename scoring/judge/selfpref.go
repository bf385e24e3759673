package judge

import (
	"fmt"
	"sort"

	"tally/scoring/stats"
)

// Judgment is one pairwise verdict for self-preference analysis: the judge's
// model family, the families of the outputs shown as A and B, and the
// verdict (for pairs judged in both orders, the agreed verdict, with
// inconsistent pairs passed as Tie). Item identifies the comparison, so
// that judges can be compared on the same items.
type Judgment struct {
	Item    string
	Judge   string
	A, B    string
	Verdict Verdict
}

// SelfPref is a judge family's self-preference.
//
// Definition: over judgments where exactly one output comes from family F,
// F's score is 1 when F's output wins, 0.5 for a tie and 0 for a loss. Own
// is F's mean score when the judge is of family F, Others when it is not;
// Bias = Own - Others: how much more a judge favours its own family than
// other judges favour that family on the same kind of comparisons. Paired
// restricts both to items judged by an F judge and by another judge,
// averaging per item, and bootstraps the per-item difference.
type SelfPref struct {
	Family string `json:"family"`
	// Own and Others are F's mean scores with bootstrap 95% intervals.
	Own    stats.Interval `json:"own"`
	Others stats.Interval `json:"others"`
	NOwn   int            `json:"n_own"`
	NOther int            `json:"n_others"`
	// Bias is Own.Estimate - Others.Estimate.
	Bias float64 `json:"bias"`
	// Paired is the mean per-item difference (own - others) over items
	// judged both ways, with its paired bootstrap interval; NPaired items.
	Paired  stats.Interval `json:"paired"`
	NPaired int            `json:"n_paired"`
}

// SelfPreference computes family's self-preference from judgments, with
// resamples bootstrap draws seeded by seed.
func SelfPreference(js []Judgment, family string, resamples int, seed uint64) (SelfPref, error) {
	var own, others []float64
	ownItem := map[string][]float64{}
	otherItem := map[string][]float64{}
	for i, j := range js {
		if _, err := ParseVerdict(string(j.Verdict)); err != nil {
			return SelfPref{}, fmt.Errorf("judgment %d: %w", i+1, err)
		}
		var score float64
		switch {
		case j.A == family && j.B != family:
			score = map[Verdict]float64{A: 1, Tie: 0.5, B: 0}[j.Verdict]
		case j.B == family && j.A != family:
			score = map[Verdict]float64{B: 1, Tie: 0.5, A: 0}[j.Verdict]
		default:
			continue
		}
		if j.Judge == family {
			own = append(own, score)
			ownItem[j.Item] = append(ownItem[j.Item], score)
		} else {
			others = append(others, score)
			otherItem[j.Item] = append(otherItem[j.Item], score)
		}
	}
	r := SelfPref{Family: family, NOwn: len(own), NOther: len(others)}
	r.Own = stats.Bootstrap(own, resamples, 0.95, seed)
	r.Others = stats.Bootstrap(others, resamples, 0.95, seed+1)
	r.Bias = r.Own.Estimate - r.Others.Estimate
	var items []string
	for it := range ownItem {
		if _, ok := otherItem[it]; ok {
			items = append(items, it)
		}
	}
	sort.Strings(items)
	a := make([]float64, len(items))
	b := make([]float64, len(items))
	for i, it := range items {
		a[i] = stats.Mean(otherItem[it])
		b[i] = stats.Mean(ownItem[it])
	}
	r.NPaired = len(items)
	r.Paired = stats.PairedBootstrap(a, b, resamples, 0.95, seed+2)
	return r, nil
}
