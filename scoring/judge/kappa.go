// Package judge holds statistics for LLM-as-judge evaluations: pairwise
// verdicts judged in both orders (position consistency, win rate with
// ties and inconsistencies under a stated policy), Cohen's kappa between
// two raters, and self-preference bias, with bootstrap intervals from
// tally/scoring/stats.
package judge

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"tally/scoring/npsum"
)

// Label is one rater's label for kappa: a string, a number (float64) or a
// bool (Python's True == 1). Numbers are compared by value, so 1 and 1.0
// are the same label.
type Label any

// Kappa weightings accepted by CohenKappa.
const (
	Unweighted = ""
	Linear     = "linear"
	Quadratic  = "quadratic"
)

// CohenKappa reproduces scikit-learn's cohen_kappa_score(y1, y2,
// weights=weights) (sklearn/metrics/_classification.py as in release
// 1.2.1, unchanged at commit f5242163c8a4b80945a64dfc1ed726dd3f93fa14):
// labels are the sorted union of both raters' labels; the confusion matrix
// C counts (y1, y2) pairs; expected E[i][j] = colsum[i]*rowsum[j]/n; the
// weights are 1 off the diagonal (unweighted), |i-j| (linear) or (i-j)^2
// (quadratic) over the sorted label positions; kappa = 1 - sum(W*C) /
// sum(W*E), the second sum in numpy's pairwise order. When only one label
// occurs, or there are no pairs, the ratio is 0/0 and kappa is NaN, as in
// the reference.
//
// Errors where the reference raises: mixed string and number labels,
// non-integral numeric labels (type_of_target says "continuous"), labels
// of other types, an unknown weighting, and y1, y2 of different lengths.
func CohenKappa(y1, y2 []Label, weights string) (float64, error) {
	if len(y1) != len(y2) {
		return 0, fmt.Errorf("judge: kappa: %d labels against %d", len(y1), len(y2))
	}
	if weights != Unweighted && weights != Linear && weights != Quadratic {
		return 0, fmt.Errorf("judge: kappa: unknown weighting %q (want linear or quadratic)", weights)
	}
	if len(y1) == 0 {
		return math.NaN(), nil // an empty confusion matrix: 0/0
	}
	var strs []string
	var nums []float64
	for _, ys := range [][]Label{y1, y2} {
		for _, y := range ys {
			switch v := y.(type) {
			case string:
				strs = append(strs, v)
			case bool:
				if v {
					nums = append(nums, 1)
				} else {
					nums = append(nums, 0)
				}
			case float64:
				if v != math.Trunc(v) || math.IsInf(v, 0) {
					return 0, fmt.Errorf("judge: kappa: label %v is not a class label (the reference calls the target continuous)", v)
				}
				nums = append(nums, v)
			default:
				return 0, fmt.Errorf("judge: kappa: label %v of type %T is not a string or a number", y, y)
			}
		}
	}
	if len(strs) > 0 && len(nums) > 0 {
		return 0, errors.New("judge: kappa: mix of string and number labels (the reference raises)")
	}
	index := map[any]int{}
	if len(strs) > 0 {
		sort.Strings(strs)
		for _, s := range strs {
			if _, ok := index[s]; !ok {
				index[s] = len(index)
			}
		}
	} else {
		sort.Float64s(nums)
		for _, f := range nums {
			if _, ok := index[f]; !ok {
				index[f] = len(index)
			}
		}
	}
	k := len(index)
	conf := make([]int64, k*k)
	key := func(y Label) any {
		if b, ok := y.(bool); ok {
			if b {
				return 1.0
			}
			return 0.0
		}
		return y
	}
	for i := range y1 {
		conf[index[key(y1[i])]*k+index[key(y2[i])]]++
	}
	sum0 := make([]int64, k) // column sums (np.sum(confusion, axis=0))
	sum1 := make([]int64, k) // row sums
	var total int64
	for i := 0; i < k; i++ {
		for j := 0; j < k; j++ {
			sum0[j] += conf[i*k+j]
			sum1[i] += conf[i*k+j]
			total += conf[i*k+j]
		}
	}
	w := func(i, j int) int64 {
		d := int64(i - j)
		switch weights {
		case Linear:
			if d < 0 {
				d = -d
			}
			return d
		case Quadratic:
			return d * d
		}
		if i == j {
			return 0
		}
		return 1
	}
	var num int64
	den := make([]float64, k*k)
	for i := 0; i < k; i++ {
		for j := 0; j < k; j++ {
			num += w(i, j) * conf[i*k+j]
			expected := float64(sum0[i]*sum1[j]) / float64(total)
			den[i*k+j] = float64(w(i, j)) * expected
		}
	}
	return 1 - float64(num)/npsum.Sum(den), nil
}
