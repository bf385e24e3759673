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

func TestMeanInterval(t *testing.T) {
	tests := []struct {
		name      string
		xs        []float64
		est, se   float64
		undefined bool
	}{
		// mean_stderr of lm-eval: sample sd (n-1) / sqrt(n).
		{"binary", []float64{0, 1, 1, 0, 1, 1, 1, 0, 1, 1}, 0.7, math.Sqrt(2.1/9) / math.Sqrt(10), false},
		{"constant", []float64{0.5, 0.5, 0.5}, 0.5, 0, false},
		{"range", []float64{0, 1, 2, 3, 4}, 2, math.Sqrt(2.5) / math.Sqrt(5), false},
		{"one", []float64{3}, 3, 0, true},
		{"empty", nil, math.NaN(), 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			iv := MeanInterval(tc.xs, 0.95)
			if !near(iv.Estimate, tc.est) && !(math.IsNaN(tc.est) && math.IsNaN(iv.Estimate)) {
				t.Errorf("estimate %v, want %v", iv.Estimate, tc.est)
			}
			if tc.undefined {
				if !math.IsNaN(iv.Low) || !math.IsNaN(iv.High) {
					t.Errorf("bounds %v %v, want NaN", iv.Low, iv.High)
				}
				return
			}
			if se := MeanStderr(tc.xs); !near(se, tc.se) {
				t.Errorf("stderr %v, want %v", se, tc.se)
			}
			if h := 1.959963984540054 * tc.se; !near(iv.Low, tc.est-h) || !near(iv.High, tc.est+h) {
				t.Errorf("interval [%v, %v], want %v ± %v", iv.Low, iv.High, tc.est, h)
			}
		})
	}
	// The analytic interval agrees with the bootstrap it replaces on a
	// large sample (to the bootstrap's own Monte Carlo error).
	xs := make([]float64, 5000)
	for i := range xs {
		xs[i] = float64(i % 3 / 2)
	}
	a, b := MeanInterval(xs, 0.95), Bootstrap(xs, 2000, 0.95, 1)
	if math.Abs(a.Low-b.Low) > 0.002 || math.Abs(a.High-b.High) > 0.002 {
		t.Errorf("analytic %+v, bootstrap %+v", a, b)
	}
}

func TestPairedMeanInterval(t *testing.T) {
	a := []float64{0, 0, 1, 1, 0}
	b := []float64{1, 0, 1, 1, 1}
	d := PairedMeanInterval(a, b, 0.95)
	// differences 1,0,0,0,1: mean 0.4, sd sqrt(0.3).
	h := 1.959963984540054 * math.Sqrt(0.3) / math.Sqrt(5)
	if !near(d.Estimate, 0.4) || !near(d.Low, 0.4-h) || !near(d.High, 0.4+h) {
		t.Errorf("paired %+v", d)
	}
	same := PairedMeanInterval(a, a, 0.95)
	if same.Estimate != 0 || same.Low != 0 || same.High != 0 {
		t.Errorf("identical pairs %+v", same)
	}
}

func near(x, y float64) bool { return math.Abs(x-y) < 1e-12 }

// TestWilson: Wilson's score interval, against its closed forms (0 of n:
// [0, z²/(n+z²)]) and a value computed by hand (15 of 16).
func TestWilson(t *testing.T) {
	z2 := 1.959963984540054 * 1.959963984540054
	for _, tc := range []struct{ p, n, lo, hi float64 }{
		{0, 10, 0, z2 / (10 + z2)},
		{1, 10, 10 / (10 + z2), 1},
		{15.0 / 16, 16, 0.7167126242970107, 0.9888806552353576},
	} {
		lo, hi := Wilson(tc.p, tc.n, 0.95)
		if math.Abs(lo-tc.lo) > 1e-12 || math.Abs(hi-tc.hi) > 1e-12 {
			t.Errorf("Wilson(%v, %v) = [%v, %v], want [%v, %v]", tc.p, tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
}

// TestBoundedIntervals (issue 33): every interval of scores in [0, 1]
// stays inside [0, 1] (a difference's inside [−1, 1]) where the normal
// one leaves it, 0/1 scores get Wilson's, and other scores keep the
// normal interval.
func TestBoundedIntervals(t *testing.T) {
	ones := func(k, n int) []float64 {
		xs := make([]float64, n)
		for i := range k {
			xs[i] = 1
		}
		return xs
	}
	for _, tc := range []struct {
		name   string
		xs     []float64
		lo, hi float64 // the range the interval must stay in
	}{
		{"15 of 16", ones(15, 16), 0, 1},
		{"all 1", ones(16, 16), 0, 1},
		{"all 0", ones(0, 16), 0, 1},
		{"f1 near 1", []float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0.5}, 0, 1},
		{"f1 near 0", []float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 0.3, 0, 0}, 0, 1},
		{"constant", []float64{0.5, 0.5, 0.5}, 0, 1},
	} {
		iv := BoundedMeanInterval(tc.xs, 0.95)
		if iv.Low < tc.lo || iv.High > tc.hi || iv.Low > iv.Estimate || iv.High < iv.Estimate {
			t.Errorf("%s: %+v outside [%v, %v] or not around its estimate", tc.name, iv, tc.lo, tc.hi)
		}
		if normal := MeanInterval(tc.xs, 0.95); tc.name == "15 of 16" && normal.High <= 1 {
			t.Errorf("15 of 16: the normal interval %+v should pass 1 (the case the issue reports)", normal)
		}
	}
	iv := BoundedMeanInterval(ones(15, 16), 0.95)
	if lo, hi := Wilson(15.0/16, 16, 0.95); iv.Low != lo || iv.High != hi {
		t.Errorf("0/1 scores: %+v, want Wilson's [%v, %v]", iv, lo, hi)
	}
	wide := []float64{3, 5, 9, 12}
	if got, want := BoundedMeanInterval(wide, 0.95), MeanInterval(wide, 0.95); got != want {
		t.Errorf("scores beyond [0, 1]: %+v, want the normal interval %+v", got, want)
	}
	d := BoundedPairedInterval(ones(0, 16), ones(15, 16), 0.95)
	if d.Estimate != 15.0/16 || d.Low < -1 || d.High > 1 || d.Low > d.Estimate || d.High < d.Estimate {
		t.Errorf("paired difference 0 → 15 of 16: %+v, want inside [−1, 1] around 0.9375", d)
	}
	if d := BoundedPairedInterval(ones(3, 8), ones(3, 8), 0.95); d.Estimate != 0 || d.Low != 0 || d.High != 0 {
		t.Errorf("no difference: %+v", d)
	}
}
