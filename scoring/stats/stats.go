// Package stats holds the aggregations shared by tally's metrics and
// reports: means with analytic (normal) confidence intervals, plain and
// paired, and seeded bootstrap intervals for statistics that are not a
// mean.
package stats

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Mean returns the arithmetic mean of xs, or NaN when xs is empty.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Interval is a confidence interval around an estimate.
type Interval struct {
	Estimate float64 `json:"estimate"`
	Low      float64 `json:"low"`
	High     float64 `json:"high"`
}

// MeanStderr is the standard error of the mean of xs: the sample standard
// deviation (n-1 denominator) over sqrt(n), lm-evaluation-harness's
// mean_stderr (lm_eval/api/metrics.py, which stderr_for_metric uses for
// every "mean" aggregation and bootstraps only other aggregations). NaN for
// fewer than two values.
func MeanStderr(xs []float64) float64 {
	n := len(xs)
	if n < 2 {
		return math.NaN()
	}
	mu := Mean(xs)
	ss := 0.0
	for _, x := range xs {
		d := x - mu
		ss += d * d
	}
	return math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
}

// z returns the two-sided standard normal quantile for a confidence level
// (1.959963984540054 for 0.95).
func z(level float64) float64 { return math.Sqrt2 * math.Erfinv(level) }

// MeanInterval returns the mean of xs with the normal-approximation
// interval at the given confidence level: mean ± z·MeanStderr(xs), so a
// 95% interval is exactly mean ± 1.96 × the stderr lm-evaluation-harness
// reports for the same values. Its bounds are NaN for fewer than two values.
// It is deterministic and linear in len(xs).
func MeanInterval(xs []float64, level float64) Interval {
	est := Mean(xs)
	se := MeanStderr(xs)
	if math.IsNaN(se) {
		return Interval{est, math.NaN(), math.NaN()}
	}
	h := z(level) * se
	return Interval{est, est - h, est + h}
}

// PairedMeanInterval returns the mean difference b-a over paired
// observations with the normal-approximation interval of the mean of the
// per-pair differences (the paired-differences standard error of Miller,
// "Adding Error Bars to Evals", arXiv:2411.00640, §4). a and b must have
// the same length.
func PairedMeanInterval(a, b []float64, level float64) Interval {
	d := make([]float64, len(a))
	for i := range a {
		d[i] = b[i] - a[i]
	}
	return MeanInterval(d, level)
}

// Bootstrap returns the mean of xs with a percentile bootstrap interval at
// the given confidence level (0.95 for 95%), drawing n resamples from a PCG
// generator seeded with seed, so the same inputs always give the same
// interval.
func Bootstrap(xs []float64, n int, level float64, seed uint64) Interval {
	est := Mean(xs)
	if len(xs) == 0 || n <= 0 {
		return Interval{est, math.NaN(), math.NaN()}
	}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	means := make([]float64, n)
	for i := range means {
		s := 0.0
		for range xs {
			s += xs[r.IntN(len(xs))]
		}
		means[i] = s / float64(len(xs))
	}
	sort.Float64s(means)
	alpha := (1 - level) / 2
	return Interval{est, quantile(means, alpha), quantile(means, 1-alpha)}
}

// PairedBootstrap returns the mean difference b-a over paired observations
// with a percentile bootstrap interval that resamples pairs together. a and
// b must have the same length.
func PairedBootstrap(a, b []float64, n int, level float64, seed uint64) Interval {
	d := make([]float64, len(a))
	for i := range a {
		d[i] = b[i] - a[i]
	}
	return Bootstrap(d, n, level, seed)
}

// quantile returns the q-quantile of sorted xs by linear interpolation
// between closest ranks (numpy's default "linear" method).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 1 {
		return sorted[0]
	}
	pos := q * float64(len(sorted)-1)
	lo := int(math.Floor(pos))
	hi := int(math.Ceil(pos))
	frac := pos - float64(lo)
	return sorted[lo]*(1-frac) + sorted[hi]*frac
}

// Wilson returns the Wilson score interval (Wilson 1927, "Probable
// inference, the law of succession, and statistical inference") for a
// proportion p observed over n trials at the given confidence level. It
// lies within [0, 1] for any p in [0, 1] and n > 0.
func Wilson(p, n, level float64) (lo, hi float64) {
	z := z(level)
	z2 := z * z
	denom := 1 + z2/n
	center := (p + z2/(2*n)) / denom
	half := z / denom * math.Sqrt(p*(1-p)/n+z2/(4*n*n))
	return max(0, center-half), min(1, center+half)
}

// BoundedMeanInterval returns the mean of xs with an interval inside the
// scores' range, by construction: for scores that are all 0 or 1, the
// Wilson score interval over their number; for scores in [0, 1], the
// Wilson score interval at the effective number of trials
// p(1−p)/MeanStderr² (the number of 0/1 scores whose mean p would have the
// same standard error), a point when they do not vary; for any other
// scores, MeanInterval (their range is not known). Its bounds are NaN
// for fewer than two values.
func BoundedMeanInterval(xs []float64, level float64) Interval {
	est := Mean(xs)
	if len(xs) < 2 {
		return Interval{est, math.NaN(), math.NaN()}
	}
	binary, unit := true, true
	for _, x := range xs {
		binary = binary && (x == 0 || x == 1)
		unit = unit && x >= 0 && x <= 1
	}
	switch {
	case binary:
		lo, hi := Wilson(est, float64(len(xs)), level)
		return Interval{est, lo, hi}
	case unit:
		return effectiveWilson(est, MeanStderr(xs), level)
	}
	return MeanInterval(xs, level)
}

// effectiveWilson is the Wilson score interval of a mean p in [0, 1] with
// standard error se, at the effective number of trials p(1−p)/se².
func effectiveWilson(p, se, level float64) Interval {
	if se == 0 || p <= 0 || p >= 1 {
		return Interval{p, p, p}
	}
	lo, hi := Wilson(p, p*(1-p)/(se*se), level)
	return Interval{p, lo, hi}
}

// BoundedPairedInterval returns the mean difference b−a over paired
// observations with an interval inside the differences' range: for
// scores in [0, 1] (differences in [−1, 1]), the Wilson score interval at
// the effective number of trials of the differences mapped onto [0, 1]
// ((d+1)/2), mapped back; for any other scores, PairedMeanInterval. a and
// b must have the same length.
func BoundedPairedInterval(a, b []float64, level float64) Interval {
	unit := true
	for i := range a {
		unit = unit && a[i] >= 0 && a[i] <= 1 && b[i] >= 0 && b[i] <= 1
	}
	if !unit || len(a) < 2 {
		return PairedMeanInterval(a, b, level)
	}
	u := make([]float64, len(a))
	for i := range a {
		u[i] = (b[i] - a[i] + 1) / 2
	}
	iv := effectiveWilson(Mean(u), MeanStderr(u), level)
	return Interval{2*iv.Estimate - 1, 2*iv.Low - 1, 2*iv.High - 1}
}

// SampleStddev is lm-evaluation-harness's sample_stddev
// (lm_eval/api/metrics.py): the square root of the summed squared
// deviations from the mean over n-1, summed in order; NaN for fewer than
// two values.
func SampleStddev(xs []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	mu := Mean(xs)
	ss := 0.0
	for _, x := range xs {
		d := x - mu
		ss += d * d
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

// Percentile is the p-th percentile (0..100) of xs by linear
// interpolation between closest ranks (numpy's default); NaN when xs is
// empty. xs is not changed.
func Percentile(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return quantile(s, p/100)
}
