package npsum

import (
	"math"
	"testing"
)

func TestSum(t *testing.T) {
	// 0.1 summed 10 times: left to right gives 0.9999999999999999; numpy's
	// pairwise order gives 1.0 (numpy.sum([0.1]*10) == 1.0).
	tens := make([]float64, 10)
	for i := range tens {
		tens[i] = 0.1
	}
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"empty", nil, 0},
		{"short is in order", []float64{1e16, 1, -1e16}, 0},
		{"eight-way partial sums", tens, 1.0},
		{"recursive halves", make([]float64, 300), 0},
	}
	for _, tc := range tests {
		if got := Sum(tc.in); got != tc.want {
			t.Errorf("%s: Sum = %.17g, want %.17g", tc.name, got, tc.want)
		}
	}
	if !math.IsNaN(Mean(nil)) || Mean([]float64{1, 2}) != 1.5 {
		t.Error("Mean")
	}
}
