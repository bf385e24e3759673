package winrate

import (
	"math"

	"tally/scoring/npsum"
)

// pandasMean is pandas' Series.mean on NaN-free float64 values
// (nanops.nanmean): the numpy sum divided by the count; NaN when empty.
func pandasMean(a []float64) float64 {
	if len(a) == 0 {
		return math.NaN()
	}
	return npsum.Sum(a) / float64(len(a))
}

// pandasSem is pandas' Series.sem (ddof=1) on NaN-free float64 values
// without bottleneck (nanops.nansem and the two-pass nanops.nanvar):
// sqrt(sum((mean-x)^2)/(n-1)) / sqrt(n); NaN when n < 2.
func pandasSem(a []float64) float64 {
	n := len(a)
	if n <= 1 {
		return math.NaN()
	}
	avg := npsum.Sum(a) / float64(n)
	sqr := make([]float64, n)
	for i, x := range a {
		d := avg - x
		sqr[i] = d * d
	}
	v := npsum.Sum(sqr) / float64(n-1)
	return math.Sqrt(v) / math.Sqrt(float64(n))
}
