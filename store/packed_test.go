package store

import (
	"math"
	"slices"
	"testing"
)

// unpacked is a key's scores unpacked from b under the row digest.
func unpacked(b []byte, rowDigest string) ([]Score, error) {
	return unpackedScores(ScoreKey{}, b, rowDigest)
}

// samePacked reports whether a and b hold the same scores, a NaN or
// infinite value of a being NULL (NaN) in b.
func samePacked(a, b []Score) bool {
	return slices.EqualFunc(a, b, func(x, y Score) bool {
		vx := x.Value
		if math.IsInf(vx, 0) {
			vx = math.NaN()
		}
		return x.Metric == y.Metric && x.Setting == y.Setting && x.Prediction == y.Prediction && x.Digest == y.Digest &&
			(vx == y.Value || math.IsNaN(vx) && math.IsNaN(y.Value))
	})
}

func TestPackScores(t *testing.T) {
	for _, tc := range [][]Score{
		{{Metric: "em", Setting: "dot", Prediction: "12.5", Digest: "d", Value: 1}},
		{{Metric: "em", Setting: "dot", Prediction: "p", Digest: "d", Value: 1}, {Metric: "f1", Setting: "dot", Prediction: "p", Digest: "d", Value: 0.5}},
		{{Metric: "em", Setting: "dot", Prediction: "", Digest: "d1", Value: math.NaN()}, {Metric: "f1", Setting: "period", Prediction: "x\xff\x00", Digest: "d2", Value: math.Inf(-1)},
			{Metric: "", Setting: "", Prediction: "", Digest: "", Value: -0.0}},
	} {
		d := rowDigestOf(tc)
		got, err := unpacked(packScores(nil, tc, d), d)
		if err != nil || !samePacked(tc, got) {
			t.Errorf("%v: unpacked %v, %v", tc, got, err)
		}
	}
	for _, bad := range []string{"\x00", "\x10\x00", "\x03\x05em", "\x03\x02em\x01x\x01y", "\x00\x02em"} {
		if _, err := unpacked([]byte(bad), "d"); err == nil {
			t.Errorf("%q: unpacked without an error", bad)
		}
	}
}

// FuzzPackedScores: a key's scores unpack as packed, and no bytes make
// unpackScores panic.
func FuzzPackedScores(f *testing.F) {
	f.Add("em", "dot", "p", "d", 1.0, "f1", "nl", "q", "e", 0.5, []byte("\x03\x02em\x03dot\x01p"))
	f.Fuzz(func(t *testing.T, m1, s1, p1, d1 string, v1 float64, m2, s2, p2, d2 string, v2 float64, raw []byte) {
		unpacked(raw, d1)
		scores := []Score{{Metric: m1, Setting: s1, Prediction: p1, Digest: d1, Value: v1}, {Metric: m2, Setting: s2, Prediction: p2, Digest: d2, Value: v2}}
		for n := 1; n <= 2; n++ {
			d := rowDigestOf(scores[:n])
			got, err := unpacked(packScores(nil, scores[:n], d), d)
			if err != nil || !samePacked(scores[:n], got) {
				t.Fatalf("%v: unpacked %v, %v", scores[:n], got, err)
			}
		}
	})
}
