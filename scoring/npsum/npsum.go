// Package npsum reproduces numpy's floating-point summation, which metrics
// need to match their Python references to the last bit: np.sum (and so
// np.mean and pandas' mean) add contiguous float64 arrays pairwise, not left
// to right.
package npsum

import "math"

// blockSize is numpy's PW_BLOCKSIZE.
const blockSize = 128

// Sum is numpy's pairwise summation of a contiguous float64 array
// (numpy/_core/src/umath/loops_utils.h.src, DOUBLE_pairwise_sum): fewer than
// 8 values are added in order; up to 128 in eight interleaved partial sums
// combined as a tree; more are split in halves (rounded to a multiple of 8)
// recursively.
func Sum(a []float64) float64 {
	n := len(a)
	switch {
	case n < 8:
		res := 0.0
		for _, x := range a {
			res += x
		}
		return res
	case n <= blockSize:
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
		return Sum(a[:n2]) + Sum(a[n2:])
	}
}

// Mean is np.mean of a float64 array: Sum divided by the count, NaN when
// empty.
func Mean(a []float64) float64 {
	if len(a) == 0 {
		return math.NaN()
	}
	return Sum(a) / float64(len(a))
}
