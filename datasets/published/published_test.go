package published

import (
	"bytes"
	"compress/gzip"
	"math"
	"os"
	"path/filepath"
	"testing"

	"tally/internal/sharedtest"
)

// TestPublishedNumbers reads the published prediction files in
// ../shared/data as they are; the mean of each file's scores is the
// number its README gives.
func TestPublishedNumbers(t *testing.T) {
	for _, tc := range []struct {
		path   []string
		format Format
		metric string
		scale  float64
		want   float64
		tol    float64
		n      int
	}{
		{[]string{"leval", "Predictions", "exam_eval", "turbo-16k-0613", "coursera.pred.jsonl"}, LEval, "exact_match", 100, 63.5174, 5e-5, 0},
		{[]string{"leval", "Predictions", "exam_eval", "turbo-16k-0613", "quality.pred.jsonl"}, LEval, "exact_match", 100, 61.3861, 5e-5, 0},
		{[]string{"leval", "Predictions", "exam_eval", "turbo-16k-0613", "tpo.pred.jsonl"}, LEval, "exact_match", 100, 78.4387, 5e-5, 0},
		{[]string{"leval", "Predictions", "ngram_eval", "turbo-16k-0613", "financial_qa.pred.jsonl"}, LEval, "f1", 100, 45.3688, 5e-5, 0},
		{[]string{"counting_stars", "results", "stone_gpt4_32_16.txt"}, CountingStars, "counting_stars", 1, 0.978515625, 1e-12, 16},
		{[]string{"alpaca_eval", "results", "text_davinci_001", "alpaca_eval_gpt4", "annotations.json.gz"}, AlpacaAnnot, "win", 100, 15.17412935323383, 1e-9, 805},
		{[]string{"alpaca_eval", "results", "gpt-3.5-turbo-1106", "alpaca_eval_gpt4", "annotations.json.gz"}, AlpacaAnnot, "win", 100, 86.25621890547264, 1e-9, 805},
		{[]string{"alpaca_eval", "results", "gpt-3.5-turbo-1106", "weighted_alpaca_eval_gpt4_turbo", "annotations.json.gz"}, AlpacaAnnot, "win", 100, 9.177964561962735, 1e-9, 805},
	} {
		path := sharedtest.Path(t, append([]string{"data"}, tc.path...)...)
		f, recs, err := Read(path)
		if err != nil {
			t.Fatal(err)
		}
		if f != tc.format || (tc.n > 0 && len(recs) != tc.n) {
			t.Errorf("%s: format %s, %d records", path, f, len(recs))
		}
		var sum float64
		n := 0
		for _, r := range recs {
			if v, ok := r.Scores[tc.metric]; ok {
				sum += v
				n++
			}
		}
		if got := tc.scale * sum / float64(n); math.Abs(got-tc.want) > tc.tol {
			t.Errorf("%s: mean %s = %.10g, want %.10g", path, tc.metric, got, tc.want)
		}
	}
}

func TestModelOutputs(t *testing.T) {
	f, recs, err := Read(sharedtest.Path(t, "data", "alpaca_eval", "results", "gpt-3.5-turbo-1106", "model_outputs.json.gz"))
	if err != nil || f != AlpacaOutputs || len(recs) != 805 || recs[0].Model != "gpt-3.5-turbo-1106" || len(recs[0].Scores) != 0 {
		t.Fatalf("%s %d %v", f, len(recs), err)
	}
}

func TestAraGen(t *testing.T) {
	f, recs, err := Read(sharedtest.Path(t, "data", "threec3h", "answers", "AraGen-12-2024-dev", "Qwen_Qwen2.5-0.5B-Instruct_main_bfloat16_answers.json"))
	if err != nil || f != AraGen || len(recs) != 5 || recs[0].Model != "Qwen/Qwen2.5-0.5B-Instruct" || recs[0].ID != "1" || len(recs[0].Scores) != 0 {
		t.Fatalf("answers: %s %d %v %+v", f, len(recs), err, recs[0])
	}
	// testdata/aragen_judged.json: the first two real answers with judge
	// blocks in the pipeline's layout (invented scores).
	_, recs, err = Read("testdata/aragen_judged.json")
	if err != nil || len(recs) != 2 || recs[0].Scores["3c3h_final_score"] != 0.875 || recs[1].Scores["3c3h_correct"] != 0 || len(recs[0].Scores) != 7 {
		t.Fatalf("judged: %v %+v", err, recs)
	}
}

// TestDetect: Counting-Stars result files are known by their content
// (gzipped or not, whatever their name); other files are not claimed.
func TestDetect(t *testing.T) {
	dir := t.TempDir()
	line := `{"question": "…", "reference_counting_results": [1, 2], "answer": "{\"little_penguin\": [1, 2]}", "sky_size": 100}` + "\n"
	gz := func(s string) string {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write([]byte(s))
		w.Close()
		return b.String()
	}
	files := map[string]string{
		"cs.jsonl":        line + line,
		"cs.txt.gz":       gz(line),
		"notes.txt":       "Passage: not JSON at all\n",
		"other.jsonl":     `{"prompt": "x", "answers": ["y"]}` + "\n",
		"array.json":      `[{"reference_counting_results": [1], "answer": "1"}]`,
		"empty.jsonl":     "",
		"answer-only.txt": `{"answer": "1"}` + "\n",
	}
	want := map[string]bool{"cs.jsonl": true, "cs.txt.gz": true}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		f, ok := Detect(p)
		if ok != want[name] || (ok && f != CountingStars) {
			t.Errorf("Detect(%s) = %q, %v; want %v", name, f, ok, want[name])
		}
	}
	if _, ok := Detect(sharedtest.Path(t, "data", "counting_stars", "results", "stone_gpt4_32_16.txt")); !ok {
		t.Error("the shared Counting-Stars result file is not detected")
	}
	if _, ok := Detect(filepath.Join(dir, "missing.txt")); ok {
		t.Error("a missing file is detected")
	}
}
