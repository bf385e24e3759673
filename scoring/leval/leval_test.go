package leval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"tally/internal/sharedtest"
	"testing"
)

// sharedDir returns ../shared relative to the directory holding go.mod.
func sharedDir(t testing.TB) string {
	t.Helper()
	return sharedtest.Dir(t)
}

// readLines calls fn for each line of a JSONL file, gunzipping .gz files.
func readLines(t testing.TB, path string, fn func([]byte)) {
	t.Helper()
	sharedtest.ReadLines(t, path, fn)
}

// predRow is one line of an L-Eval prediction file.
type predRow struct {
	Pred, GT, Evaluation string
}

// decodePredRow takes the first key containing "_pred" in file order, as
// auto_eval.py does.
func decodePredRow(t testing.TB, b []byte) predRow {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		t.Fatalf("decoding prediction line: %v", err)
	}
	var row predRow
	found := false
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatalf("decoding prediction line: %v", err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("decoding prediction line: %v", err)
		}
		switch key := k.(string); {
		case key == "gt":
			_ = json.Unmarshal(v, &row.GT)
		case key == "evaluation":
			_ = json.Unmarshal(v, &row.Evaluation)
		case !found && strings.Contains(key, "_pred"):
			found = true
			_ = json.Unmarshal(v, &row.Pred)
		}
	}
	return row
}

// loadPredFile reads a prediction file from ../shared, keeping the rows
// auto_eval.py scores (evaluation exam, f1 or rouge) with their index.
func loadPredFile(t testing.TB, rel string) (rows []predRow, index []int) {
	t.Helper()
	i := 0
	readLines(t, filepath.Join(sharedDir(t), rel), func(b []byte) {
		r := decodePredRow(t, b)
		switch r.Evaluation {
		case "exam", "f1", "rouge":
			rows = append(rows, r)
			index = append(index, i)
		}
		i++
	})
	return rows, index
}

// itemVector is one per-item reference output (testdata/leval_*.jsonl.gz).
type itemVector struct {
	File   string    `json:"file"`
	Index  int       `json:"index"`
	Task   string    `json:"task"`
	P      string    `json:"p"`
	G      string    `json:"g"`
	PP     string    `json:"pp"`
	PG     string    `json:"pg"`
	FPP    string    `json:"fpp"`
	FPG    string    `json:"fpg"`
	Score  *float64  `json:"score"`
	FScore *float64  `json:"fscore"`
	Rouge  []float64 `json:"rouge"`
	Error  string    `json:"error"`
}

// check compares an Item with the reference's per-item output.
func (v itemVector) check(it Item, err error) string {
	if v.Error != "" {
		if err == nil {
			return fmt.Sprintf("want error %s, got %+v", v.Error, it)
		}
		return ""
	}
	if err != nil {
		return fmt.Sprintf("unexpected error %v", err)
	}
	if it.Prediction != v.PP || it.Reference != v.PG {
		return fmt.Sprintf("processed (%q, %q), want (%q, %q)", it.Prediction, it.Reference, v.PP, v.PG)
	}
	if v.Task == "sci_fi" {
		if it.Fact == nil || it.Fact.Prediction != v.FPP || it.Fact.Reference != v.FPG ||
			it.Loyalty.Score != *v.Score || it.Fact.Score != *v.FScore {
			return fmt.Sprintf("sci_fi %+v %+v, want fact (%q, %q) scores %v %v", it.Loyalty, it.Fact, v.FPP, v.FPG, *v.Score, *v.FScore)
		}
		return ""
	}
	if v.Rouge != nil {
		got := []float64{it.Rouge.Rouge1.FMeasure, it.Rouge.Rouge2.FMeasure, it.Rouge.RougeL.FMeasure}
		if !reflect.DeepEqual(got, v.Rouge) {
			return fmt.Sprintf("rouge %v, want %v", got, v.Rouge)
		}
		return ""
	}
	if it.Score != *v.Score {
		return fmt.Sprintf("score %v, want %v", it.Score, *v.Score)
	}
	return ""
}

// TestVectorsSharedItems checks every scored question of the shared
// turbo-16k prediction files against the reference's processing and
// per-item scores.
func TestVectorsSharedItems(t *testing.T) {
	files := map[string]map[int]predRow{}
	n, bad := 0, 0
	readLines(t, "testdata/leval_shared.jsonl.gz", func(b []byte) {
		var v itemVector
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("decoding vector: %v", err)
		}
		rows, ok := files[v.File]
		if !ok {
			rows = map[int]predRow{}
			rs, idx := loadPredFile(t, v.File)
			for k, i := range idx {
				rows[i] = rs[k]
			}
			files[v.File] = rows
		}
		r, ok := rows[v.Index]
		if !ok {
			t.Fatalf("%s has no scored row %d", v.File, v.Index)
		}
		it, err := ScoreItem(v.Task, r.Pred, r.GT)
		n++
		if msg := v.check(it, err); msg != "" {
			bad++
			if bad <= 10 {
				t.Errorf("%s[%d]: %s", v.File, v.Index, msg)
			}
		}
	})
	t.Logf("leval shared items: %d/%d match", n-bad, n)
	if bad > 0 || n == 0 {
		t.Errorf("leval shared items: %d mismatches of %d", bad, n)
	}
}

// embeddedItems reads testdata/leval_embedded.jsonl.gz: items of
// prediction files not in ../shared, with their texts.
func embeddedItems(t testing.TB) []itemVector {
	var out []itemVector
	readLines(t, "testdata/leval_embedded.jsonl.gz", func(b []byte) {
		var v itemVector
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("decoding vector: %v", err)
		}
		out = append(out, v)
	})
	return out
}

func TestVectorsEmbeddedItems(t *testing.T) {
	n, bad := 0, 0
	for _, v := range embeddedItems(t) {
		it, err := ScoreItem(v.Task, v.P, v.G)
		n++
		if msg := v.check(it, err); msg != "" {
			bad++
			if bad <= 10 {
				t.Errorf("%s[%d]: %s", v.File, v.Index, msg)
			}
		}
	}
	t.Logf("leval embedded items: %d/%d match", n-bad, n)
	if bad > 0 || n == 0 {
		t.Errorf("leval embedded items: %d mismatches of %d", bad, n)
	}
}

// aggregateVectors reads what the unmodified auto_eval.py printed for
// each file (testdata/leval_aggregates.jsonl).
func aggregateVectors(t testing.TB) []struct {
	File, Task string
	Aggregate  map[string]float64
} {
	var out []struct {
		File, Task string
		Aggregate  map[string]float64
	}
	readLines(t, "testdata/leval_aggregates.jsonl", func(b []byte) {
		var v struct {
			File, Task string
			Aggregate  map[string]float64
		}
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatalf("decoding vector: %v", err)
		}
		out = append(out, v)
	})
	return out
}

// itemsFor scores a whole prediction file, from ../shared or from the
// embedded vectors.
func itemsFor(t testing.TB, file, task string, embedded []itemVector) []Item {
	t.Helper()
	var items []Item
	add := func(p, g string) {
		it, err := ScoreItem(task, p, g)
		if err != nil {
			t.Fatalf("%s: ScoreItem: %v", file, err)
		}
		items = append(items, it)
	}
	if strings.HasPrefix(file, "data/") {
		rows, _ := loadPredFile(t, file)
		for _, r := range rows {
			add(r.Pred, r.GT)
		}
		return items
	}
	for _, v := range embedded {
		if v.File == file {
			add(v.P, v.G)
		}
	}
	return items
}

// TestVectorsAggregates recomputes, from the items, every figure
// auto_eval.py printed, and compares them exactly.
func TestVectorsAggregates(t *testing.T) {
	embedded := embeddedItems(t)
	n, bad := 0, 0
	for _, v := range aggregateVectors(t) {
		got, err := Aggregate(v.Task, itemsFor(t, v.File, v.Task, embedded))
		if err != nil {
			t.Fatalf("%s: Aggregate: %v", v.File, err)
		}
		for k, want := range v.Aggregate {
			n++
			if g, ok := got[k]; !ok || g != want {
				bad++
				t.Errorf("%s: %s = %v (present %v), want %v", v.File, k, g, ok, want)
			}
		}
		if len(got) != len(v.Aggregate) {
			t.Errorf("%s: %d keys, want %d: %v", v.File, len(got), len(v.Aggregate), got)
		}
	}
	t.Logf("leval aggregate figures: %d/%d match", n-bad, n)
	if n == 0 {
		t.Error("no aggregate vectors")
	}
}

// TestPublishedNumbers checks the numbers published for the shared files
// (../shared/data/leval/README.md, from the unmodified auto_eval.py) and
// the L-Eval README's GPT4-32k row (two decimals, truncated as printed
// there) against the embedded GPT4-32k predictions.
func TestPublishedNumbers(t *testing.T) {
	tests := []struct {
		file, task, key string
		want            float64
	}{
		{"data/leval/Predictions/exam_eval/turbo-16k-0613/coursera.pred.jsonl", "coursera", "exact_match", 63.5174},
		{"data/leval/Predictions/exam_eval/turbo-16k-0613/quality.pred.jsonl", "quality", "exact_match", 61.3861},
		{"data/leval/Predictions/exam_eval/turbo-16k-0613/tpo.pred.jsonl", "tpo", "exact_match", 78.4387},
		{"data/leval/Predictions/exam_eval/turbo-16k-0613/codeU.pred.jsonl", "codeU", "exact_match", 12.2222},
		{"data/leval/Predictions/exam_eval/turbo-16k-0613/topic_retrieval_longchat.pred.jsonl", "topic_retrieval_longchat", "first 1 sentence retrieval score/exact_match", 96},
		{"data/leval/Predictions/exam_eval/turbo-16k-0613/topic_retrieval_longchat.pred.jsonl", "topic_retrieval_longchat", "first 2 sentence retrieval score/exact_match", 98},
		{"data/leval/Predictions/exam_eval/turbo-16k-0613/topic_retrieval_longchat.pred.jsonl", "topic_retrieval_longchat", "first 3 sentence retrieval score/exact_match", 44},
		{"data/leval/Predictions/exam_eval/turbo-16k-0613/topic_retrieval_longchat.pred.jsonl", "topic_retrieval_longchat", "average score of the 1st/2nd/3rd sentence retrieval", 79.3333},
		{"data/leval/Predictions/ngram_eval/turbo-16k-0613/financial_qa.pred.jsonl", "financial_qa", "f1", 45.3688},
		{"data/leval/Predictions/ngram_eval/turbo-16k-0613/scientific_qa.pred.jsonl", "scientific_qa", "f1", 28.2501},
	}
	for _, tt := range tests {
		got, err := Aggregate(tt.task, itemsFor(t, tt.file, tt.task, nil))
		if err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		if g := pyRound(got[tt.key], 4); g != tt.want {
			t.Errorf("%s %s = %v, want %v", tt.task, tt.key, got[tt.key], tt.want)
		}
	}
	embedded := embeddedItems(t)
	gpt4 := []struct {
		task string
		want float64
	}{{"tpo", 84.38}, {"quality", 82.17}, {"coursera", 75.58}, {"gsm100", 96.00}, {"codeU", 25.55}}
	for _, tt := range gpt4 {
		file := "Predictions/exam_eval/gpt4-32k/" + tt.task + ".pred.jsonl"
		got, err := Aggregate(tt.task, itemsFor(t, file, tt.task, embedded))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if g := math.Floor(got["exact_match"]*100) / 100; math.Abs(g-tt.want) > 1e-9 {
			t.Errorf("GPT4-32k %s = %v, README says %v", tt.task, got["exact_match"], tt.want)
		}
	}
}

// TestVectorsCases checks each processing and metric function on edge
// cases run through the reference (testdata/leval_cases.jsonl).
func TestVectorsCases(t *testing.T) {
	n, bad := 0, 0
	readLines(t, "testdata/leval_cases.jsonl", func(b []byte) {
		var c struct {
			Fn    string          `json:"fn"`
			Task  string          `json:"task"`
			Args  []string        `json:"args"`
			Want  json.RawMessage `json:"want"`
			Error string          `json:"error"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("decoding case: %v", err)
		}
		var got any
		var err error
		switch c.Fn {
		case "process_output_mc":
			got = ProcessOutputMC(c.Args[0], c.Task == "coursera")
		case "process_gt_mc":
			got, err = ProcessGTMC(c.Args[0])
		case "process_math":
			got = ProcessMath(c.Args[0])
		case "process_gt_code":
			got = ProcessGTCode(c.Args[0])
		case "process_output_code":
			got = ProcessOutputCode(c.Args[0], c.Args[1])
		case "process_gt_judge":
			var l, f string
			l, f, err = ProcessGTJudge(c.Args[0])
			got = []string{l, f}
		case "process_output_judge":
			var l, f string
			l, f, err = ProcessOutputJudge(c.Args[0])
			got = []string{l, f}
		case "exact_match_score":
			got = ExactMatch(c.Args[0], c.Args[1])
		case "f1_score":
			got = F1(c.Args[0], c.Args[1])
		case "em_normalize":
			got = NormalizeAnswerEM(c.Args[0])
		case "f1_normalize":
			got = NormalizeAnswerF1(c.Args[0])
		case "word_count":
			got = WordCount(c.Args[0])
		default:
			t.Fatalf("unknown fn %q", c.Fn)
		}
		n++
		if c.Error != "" {
			if err == nil {
				bad++
				t.Errorf("%s(%q): got %v, want error %s", c.Fn, c.Args, got, c.Error)
			}
			return
		}
		if err != nil {
			bad++
			t.Errorf("%s(%q): unexpected error %v", c.Fn, c.Args, err)
			return
		}
		gj, _ := json.Marshal(got)
		var g, w any
		_ = json.Unmarshal(gj, &g)
		_ = json.Unmarshal(c.Want, &w)
		if !reflect.DeepEqual(g, w) {
			bad++
			t.Errorf("%s[%s](%q) = %s, want %s", c.Fn, c.Task, c.Args, gj, c.Want)
		}
	})
	t.Logf("leval cases: %d/%d match", n-bad, n)
	if n == 0 {
		t.Error("no cases")
	}
}
