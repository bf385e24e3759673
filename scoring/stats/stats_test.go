package stats

import (
	"math"
	"testing"
)

func TestMean(t *testing.T) {
	if !math.IsNaN(Mean(nil)) || Mean([]float64{1, 2, 3}) != 2 {
		t.Error("Mean")
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{1, 2, 3, 4}
	tests := []struct{ q, want float64 }{{0, 1}, {1, 4}, {0.5, 2.5}, {0.25, 1.75}}
	for _, tc := range tests {
		if got := quantile(xs, tc.q); got != tc.want {
			t.Errorf("quantile(%v) = %v, want %v (numpy linear)", tc.q, got, tc.want)
		}
	}
}

func TestBootstrap(t *testing.T) {
	xs := []float64{0, 1, 1, 0, 1, 1, 1, 0, 1, 1}
	a := Bootstrap(xs, 2000, 0.95, 42)
	b := Bootstrap(xs, 2000, 0.95, 42)
	if a != b {
		t.Fatalf("same seed, different intervals: %v %v", a, b)
	}
	if a.Estimate != 0.7 || !(a.Low < 0.7 && 0.7 < a.High) || a.Low < 0 || a.High > 1 {
		t.Errorf("interval %+v", a)
	}
	// Constant data: a degenerate interval.
	c := Bootstrap([]float64{0.5, 0.5, 0.5}, 100, 0.95, 1)
	if c.Low != 0.5 || c.High != 0.5 {
		t.Errorf("constant data %+v", c)
	}
	e := Bootstrap(nil, 100, 0.95, 1)
	if !math.IsNaN(e.Estimate) || !math.IsNaN(e.Low) {
		t.Errorf("empty %+v", e)
	}
}

func TestPairedBootstrap(t *testing.T) {
	a := []float64{0, 0, 1, 1, 0}
	b := []float64{1, 0, 1, 1, 1}
	d := PairedBootstrap(a, b, 2000, 0.95, 7)
	if d.Estimate != 0.4 || d.Low < 0 || d.High > 1 {
		t.Errorf("paired %+v", d)
	}
	same := PairedBootstrap(a, a, 100, 0.95, 7)
	if same.Estimate != 0 || same.Low != 0 || same.High != 0 {
		t.Errorf("identical pairs %+v", same)
	}
}
