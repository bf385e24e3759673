package drop

import "testing"

// benchScore scores every vector of scores.jsonl per iteration and reports
// samples/s.
func benchScore(b *testing.B, score func(string, [][]string) (float64, float64)) {
	vs := readJSONL[scoreVector](b, "scores.jsonl")
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, v := range vs {
			score(v.Prediction, v.Answers)
		}
	}
	b.ReportMetric(float64(b.N*len(vs))/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkScore(b *testing.B)      { benchScore(b, Score) }
func BenchmarkScoreFixed(b *testing.B) { benchScore(b, ScoreFixed) }

func BenchmarkNormalize(b *testing.B) {
	vs := readJSONL[normVector](b, "normalize.jsonl")
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for _, v := range vs {
			Normalize(v.Text)
		}
	}
	b.ReportMetric(float64(b.N*len(vs))/b.Elapsed().Seconds(), "texts/s")
}
