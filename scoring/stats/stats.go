// Package stats holds the aggregations shared by tally's metrics and
// reports: means and seeded bootstrap confidence intervals, plain and paired.
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
