package winrate

import "math"

// pwBlockSize is numpy's PW_BLOCKSIZE (numpy/_core/src/umath/loops_utils.h.src).
const pwBlockSize = 128

// pairwiseSum reproduces numpy's pairwise summation of a contiguous float64
// array (pairwise_sum_DOUBLE), which np.sum, and therefore pandas' mean and
// variance, use: fewer than 8 values are added in order; up to 128 values
// use eight interleaved accumulators; longer runs split in two halves whose
// first part is a multiple of 8.
func pairwiseSum(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		res := 0.0
		for _, x := range a {
			res += x
		}
		return res
	case n <= pwBlockSize:
		var r [8]float64
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := range r {
				r[j] += a[i+j]
			}
		}
		res := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			res += a[i]
		}
		return res
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return pairwiseSum(a[:n2]) + pairwiseSum(a[n2:])
	}
}

// pandasMean is pandas' Series.mean on NaN-free float64 values
// (nanops.nanmean): the numpy sum divided by the count; NaN when empty.
func pandasMean(a []float64) float64 {
	if len(a) == 0 {
		return math.NaN()
	}
	return pairwiseSum(a) / float64(len(a))
}

// pandasSem is pandas' Series.sem (ddof=1) on NaN-free float64 values
// without bottleneck (nanops.nansem and the two-pass nanops.nanvar):
// sqrt(sum((mean-x)^2)/(n-1)) / sqrt(n); NaN when n < 2.
func pandasSem(a []float64) float64 {
	n := len(a)
	if n <= 1 {
		return math.NaN()
	}
	avg := pairwiseSum(a) / float64(n)
	sqr := make([]float64, n)
	for i, x := range a {
		d := avg - x
		sqr[i] = d * d
	}
	v := pairwiseSum(sqr) / float64(n-1)
	return math.Sqrt(v) / math.Sqrt(float64(n))
}
