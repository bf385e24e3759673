package drop

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"tally/datasets/jsonl"
	scoredrop "tally/scoring/drop"
)

// roundTripRows is how DROP rows were read before they were decoded
// directly: each line into a generic row, written again, and read into a
// Question.
func roundTripRows(data string) ([]Question, error) {
	res, err := jsonl.Read(strings.NewReader(data), "f.jsonl", false)
	if err != nil {
		return nil, err
	}
	var out []Question
	for _, row := range res.Rows {
		b, _ := json.Marshal(row)
		var q Question
		if err := json.Unmarshal(b, &q); err != nil {
			return nil, err
		}
		if q.QueryID == "" || q.Passage == "" || q.Question == "" || len(q.Answer) == 0 {
			return nil, json.Unmarshal([]byte("x"), &q)
		}
		out = append(out, q)
	}
	return out, nil
}

// TestLoadRowsAsRoundTrip: DROP rows decoded directly are the questions
// the generic round trip made (answers with their keys sorted, numbers as
// written, HTML characters escaped as json.Marshal writes them), and
// their gold answers (AnswersOf, of the answers as written) are those
// Answers reads from q.Doc();
// rows the round trip refused are refused.
func TestLoadRowsAsRoundTrip(t *testing.T) {
	good := []string{
		`{"section_id":"s1","query_id":"q1","passage":"P <b>&</b>","question":"How many?","answer":{"spans":[],"number":"5","date":{"year":"","month":"","day":""}},"validated_answers":{"number":["5", "6"],"date":[{"day":"","month":"","year":""},{"day":"","month":"","year":""}],"spans":[[],[]]}}`,
		"\n" + `{"query_id":"q2","passage":"p","question":"q","answer":{"number":7.50,"date":{"day":"1","month":null,"year":null},"spans":null},"extra":[1,2]}` + "\r\n",
		`{"query_id":"q3","passage":"p","question":"q","answer":{"number":"","date":{"day":"","month":"","year":""},"spans":["a \u00e9","b"]},"validated_answers":[{"number":"","date":{"day":"","month":"","year":""},"spans":["b"]}]}`,
		`{"Query_ID":"q4","passage":"p","question":"q","answer":{"number":"1"},"validated_answers":{"number":[],"date":[],"spans":[]}}`,
		`{"query_id":"q5","passage":"p","question":"q","answer":null,"validated_answers":null}`,
		`{"query_id":"q6","passage":"dup","passage":"p","question":"q","answer":{"number":"1"}}`,
	}
	data := strings.Join(good, "\n")
	want, err := roundTripRows(data)
	if err != nil {
		t.Fatal(err)
	}
	got, err := LoadRows([]byte(data), "f.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(normal(got), normal(want)) {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
	// The task's loader reads the answers as written (not canonical):
	// the same gold answers.
	raw, err := loadData([]byte(data), "f.jsonl", false)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range raw {
		va := q.ValidatedAnswers
		if len(va) == 0 {
			va = json.RawMessage("null")
		}
		a, errA := scoredrop.AnswersOf(q.Answer, va)
		b, errB := scoredrop.Answers(want[i].Doc())
		if !reflect.DeepEqual(a, b) || (errA == nil) != (errB == nil) {
			t.Errorf("%s: AnswersOf %q (%v), Answers of the doc %q (%v)", q.QueryID, a, errA, b, errB)
		}
	}
	for _, bad := range []string{
		`{"query_id":"q1","passage":"p","question":"q"}`,
		`{"query_id":"","passage":"p","question":"q","answer":{}}`,
		`{"query_id":5,"passage":"p","question":"q","answer":{}}`,
		`{"query_id":"q1","passage":"p","question":"q","answer":{}} {}`,
		`{"query_id":"q1","passage":"p","question":"q","answer":{`,
		`[1]`,
		`null`,
		"{\"query_id\":\"q\xff\",\"passage\":\"p\",\"question\":\"q\",\"answer\":{}}",
	} {
		if _, err := roundTripRows(bad); err == nil {
			t.Fatalf("the round trip takes %q", bad)
		}
		if _, err := LoadRows([]byte(bad), "f.jsonl"); err == nil || !strings.Contains(err.Error(), "f.jsonl line 1") {
			t.Errorf("%q: error %v, want one naming f.jsonl line 1", bad, err)
		}
	}
}

// normal makes nil and empty raw JSON alike (both mean absent).
func normal(qs []Question) []Question {
	out := make([]Question, len(qs))
	for i, q := range qs {
		if len(q.ValidatedAnswers) == 0 {
			q.ValidatedAnswers = nil
		}
		q.Answer = bytes.Clone(q.Answer)
		out[i] = q
	}
	return out
}
