package drop

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"tally/internal/sharedtest"
	"testing"
)

// sharedDir returns ../shared relative to the module root (the directory
// holding go.mod), failing the test when it cannot be found.
func sharedDir(t testing.TB) string {
	t.Helper()
	return sharedtest.Dir(t)
}

// readJSONL decodes every line of testdata/name into a T.
func readJSONL[T any](t testing.TB, name string) []T {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("reading vectors: %v", err)
	}
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s line %d: %v", name, len(out)+1, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no vectors", name)
	}
	return out
}

type scoreVector struct {
	Prediction string     `json:"prediction"`
	Answers    [][]string `json:"answers"`
	EM         float64    `json:"em"`
	F1         float64    `json:"f1"`
	EMFixed    float64    `json:"em_fixed"`
	F1Fixed    float64    `json:"f1_fixed"`
}

func TestVectorsScore(t *testing.T) {
	vs := readJSONL[scoreVector](t, "scores.jsonl")
	bad, badFixed, differ := 0, 0, 0
	for i, v := range vs {
		em, f1 := Score(v.Prediction, v.Answers)
		if em != v.EM || f1 != v.F1 {
			bad++
			if bad <= 10 {
				t.Errorf("line %d: Score(%q, %q) = %v, %v; reference %v, %v", i+1, v.Prediction, v.Answers, em, f1, v.EM, v.F1)
			}
		}
		em, f1 = ScoreFixed(v.Prediction, v.Answers)
		if em != v.EMFixed || f1 != v.F1Fixed {
			badFixed++
			if badFixed <= 10 {
				t.Errorf("line %d: ScoreFixed(%q, %q) = %v, %v; reference %v, %v", i+1, v.Prediction, v.Answers, em, f1, v.EMFixed, v.F1Fixed)
			}
		}
		if v.EM != v.EMFixed || v.F1 != v.F1Fixed {
			differ++
		}
	}
	t.Logf("drop: %d/%d match; drop-fixed: %d/%d match; %d vectors where the fix changes the score",
		len(vs)-bad, len(vs), len(vs)-badFixed, len(vs), differ)
	if differ == 0 {
		t.Errorf("no vector exercises the drop-fixed change")
	}
}

type errorVector struct {
	Prediction string     `json:"prediction"`
	Answers    [][]string `json:"answers"`
	Error      *string    `json:"error"`
}

func TestVectorsScoreErrors(t *testing.T) {
	for i, v := range readJSONL[errorVector](t, "score_errors.jsonl") {
		_, _, err := ScoreSpans([]string{v.Prediction}, v.Answers, false)
		if (err != nil) != (v.Error != nil) {
			t.Errorf("line %d: error %v; reference raised %v", i+1, err, v.Error)
		}
		if em, f1 := Score(v.Prediction, v.Answers); v.Error != nil && (em != 0 || f1 != 0) {
			t.Errorf("line %d: Score on a reference error = %v, %v; want 0, 0", i+1, em, f1)
		}
	}
}

type multiVector struct {
	Predictions []string   `json:"predictions"`
	Answers     [][]string `json:"answers"`
	EM          float64    `json:"em"`
	F1          float64    `json:"f1"`
	Error       string     `json:"error"`
}

func TestVectorsMultiSpan(t *testing.T) {
	vs := readJSONL[multiVector](t, "multispan.jsonl")
	bad := 0
	for i, v := range vs {
		em, f1, err := ScoreSpans(v.Predictions, v.Answers, false)
		if (err != nil) != (v.Error != "") || em != v.EM || f1 != v.F1 {
			bad++
			t.Errorf("line %d: ScoreSpans(%q, %q) = %v, %v, %v; reference %v, %v, %q",
				i+1, v.Predictions, v.Answers, em, f1, err, v.EM, v.F1, v.Error)
		}
	}
	t.Logf("multi-span: %d/%d match", len(vs)-bad, len(vs))
}

type lsapVector struct {
	Num  [][]int `json:"num"`
	Den  int     `json:"den"`
	Rows []int   `json:"rows"`
	Cols []int   `json:"cols"`
}

func TestVectorsLSAP(t *testing.T) {
	vs := readJSONL[lsapVector](t, "lsap.jsonl")
	bad := 0
	for i, v := range vs {
		nr, nc := len(v.Num), len(v.Num[0])
		cost := make([]float64, 0, nr*nc)
		for _, row := range v.Num {
			for _, k := range row {
				cost = append(cost, float64(-k)/float64(v.Den))
			}
		}
		rows, cols := linearSumAssignment(nr, nc, cost)
		if !slices.Equal(rows, v.Rows) || !slices.Equal(cols, v.Cols) {
			bad++
			t.Errorf("line %d: %v/%d: got %v %v; scipy %v %v", i+1, v.Num, v.Den, rows, cols, v.Rows, v.Cols)
		}
	}
	t.Logf("linear_sum_assignment: %d/%d identical assignments", len(vs)-bad, len(vs))
}

type normVector struct {
	Text            string   `json:"text"`
	Normalized      string   `json:"normalized"`
	Bag             []string `json:"bag"`
	NormalizedFixed string   `json:"normalized_fixed"`
	BagFixed        []string `json:"bag_fixed"`
}

func TestVectorsNormalize(t *testing.T) {
	vs := readJSONL[normVector](t, "normalize.jsonl")
	bad := 0
	for i, v := range vs {
		n, nf := Normalize(v.Text), NormalizeFixed(v.Text)
		b, bf := slices.Sorted(slices.Values(Bag(v.Text))), slices.Sorted(slices.Values(BagFixed(v.Text)))
		if n != v.Normalized || nf != v.NormalizedFixed || !slices.Equal(b, v.Bag) || !slices.Equal(bf, v.BagFixed) {
			bad++
			t.Errorf("line %d: %q: got %q %q %q %q; reference %q %q %q %q", i+1, v.Text,
				n, b, nf, bf, v.Normalized, v.Bag, v.NormalizedFixed, v.BagFixed)
		}
	}
	t.Logf("normalize: %d/%d match", len(vs)-bad, len(vs))
}

type floatVector struct {
	S    string `json:"s"`
	OK   bool   `json:"ok"`
	Repr string `json:"repr"`
}

func TestVectorsPyFloat(t *testing.T) {
	vs := readJSONL[floatVector](t, "pyfloat.jsonl")
	bad := 0
	for i, v := range vs {
		f, ok := pyFloat(v.S)
		var r string
		if ok {
			r = pyRepr(f)
		}
		if ok != v.OK || r != v.Repr {
			bad++
			t.Errorf("line %d: float(%q) = %q, %v; Python %q, %v", i+1, v.S, r, ok, v.Repr, v.OK)
		}
	}
	t.Logf("float/repr: %d/%d match", len(vs)-bad, len(vs))
}

type answersVector struct {
	QueryID string          `json:"query_id"`
	Doc     json.RawMessage `json:"doc"`
	Answers [][]string      `json:"answers"`
}

func TestVectorsAnswers(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(sharedDir(t), "data", "drop", "drop_dataset_dev.subset.json"))
	if err != nil {
		t.Fatalf("reading DROP subset: %v", err)
	}
	var passages map[string]struct {
		QAPairs []json.RawMessage `json:"qa_pairs"`
	}
	if err := json.Unmarshal(raw, &passages); err != nil {
		t.Fatalf("decoding DROP subset: %v", err)
	}
	byID := map[string]json.RawMessage{}
	for _, p := range passages {
		for _, qa := range p.QAPairs {
			var id struct {
				QueryID string `json:"query_id"`
			}
			if err := json.Unmarshal(qa, &id); err != nil {
				t.Fatalf("decoding qa pair: %v", err)
			}
			byID[id.QueryID] = qa
		}
	}
	vs := readJSONL[answersVector](t, "answers.jsonl")
	bad, fromShared := 0, 0
	for i, v := range vs {
		doc := v.Doc
		if v.QueryID != "" {
			var ok bool
			if doc, ok = byID[v.QueryID]; !ok {
				t.Fatalf("line %d: query %s not in the shared subset", i+1, v.QueryID)
			}
			fromShared++
		}
		got, err := Answers(doc)
		if err != nil || !slices.EqualFunc(got, v.Answers, slices.Equal) {
			bad++
			t.Errorf("line %d: Answers = %q, %v; reference %q", i+1, got, err, v.Answers)
		}
		if v.QueryID != "" {
			// The same record in the Hugging Face column form.
			col, err := Answers(toColumns(t, doc))
			if err != nil || !slices.EqualFunc(col, v.Answers, slices.Equal) {
				bad++
				t.Errorf("line %d: column form: Answers = %q, %v; reference %q", i+1, col, err, v.Answers)
			}
		}
	}
	if fromShared != 40 {
		t.Errorf("%d vectors from the shared subset, want 40", fromShared)
	}
	t.Logf("get_answers: %d/%d match (%d from the shared subset)", len(vs)-bad, len(vs), fromShared)
}

// toColumns rewrites an AllenAI qa pair in the Hugging Face EleutherAI/drop
// form, validated_answers column-oriented.
func toColumns(t *testing.T, qa json.RawMessage) json.RawMessage {
	t.Helper()
	var d struct {
		Answer    json.RawMessage   `json:"answer"`
		Validated []json.RawMessage `json:"validated_answers"`
	}
	if err := json.Unmarshal(qa, &d); err != nil {
		t.Fatalf("decoding qa pair: %v", err)
	}
	cols := map[string][]json.RawMessage{"number": {}, "date": {}, "spans": {}}
	for _, v := range d.Validated {
		var a map[string]json.RawMessage
		if err := json.Unmarshal(v, &a); err != nil {
			t.Fatalf("decoding validated answer: %v", err)
		}
		for k := range cols {
			cols[k] = append(cols[k], a[k])
		}
	}
	out, err := json.Marshal(map[string]any{"answer": d.Answer, "validated_answers": cols})
	if err != nil {
		t.Fatalf("encoding: %v", err)
	}
	return out
}
