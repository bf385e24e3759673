package drop

import (
	"encoding/json"
	"testing"
)

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

// BenchmarkAnswersOf reads the gold answers of a Hugging Face row whose
// validated answers are in the column form (three of them).
func BenchmarkAnswersOf(b *testing.B) {
	answer := json.RawMessage(`{"number":"","date":{"day":"","month":"","year":""},"spans":["Tom","Ann"]}`)
	validated := json.RawMessage(`{"number":["","","12"],"date":[{"day":"","month":"","year":""},{"day":"","month":"","year":""},{"day":"","month":"","year":""}],"spans":[["Tom","Ann"],["Ann"],[]]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := AnswersOf(answer, validated); err != nil {
			b.Fatal(err)
		}
	}
}
