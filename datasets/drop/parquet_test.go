package drop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	scoredrop "tally/scoring/drop"
)

// hfAnswer is one answer in neutral form, from which the Parquet row types
// below are built.
type hfAnswer struct {
	number, day, month, year string
	spans                    []string
}

type hfRow struct {
	sectionID, queryID, passage, question string
	answer                                hfAnswer
	validated                             []hfAnswer
}

// hfRows turns questions in the original layout into Hugging Face rows.
func hfRows(t testing.TB, qs []Question) []hfRow {
	t.Helper()
	type orig struct {
		Number string `json:"number"`
		Date   struct {
			Day   string `json:"day"`
			Month string `json:"month"`
			Year  string `json:"year"`
		} `json:"date"`
		Spans []string `json:"spans"`
	}
	conv := func(o orig) hfAnswer {
		if o.Spans == nil {
			o.Spans = []string{}
		}
		return hfAnswer{o.Number, o.Date.Day, o.Date.Month, o.Date.Year, o.Spans}
	}
	out := make([]hfRow, len(qs))
	for i, q := range qs {
		var a orig
		var va []orig
		if err := json.Unmarshal(q.Answer, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(q.ValidatedAnswers, &va); err != nil {
			t.Fatal(err)
		}
		r := hfRow{sectionID: q.SectionID, queryID: q.QueryID, passage: q.Passage, question: q.Question, answer: conv(a)}
		for _, v := range va {
			r.validated = append(r.validated, conv(v))
		}
		out[i] = r
	}
	return out
}

// Row types as pyarrow writes datasets' features (everything nullable).

type optDate struct {
	Day   *string `parquet:"day,optional" json:"day"`
	Month *string `parquet:"month,optional" json:"month"`
	Year  *string `parquet:"year,optional" json:"year"`
}

type optAnswer struct {
	Number   *string  `parquet:"number,optional" json:"number"`
	Date     *optDate `parquet:"date,optional" json:"date"`
	Spans    []string `parquet:"spans,list,optional" json:"spans"`
	WorkerID *string  `parquet:"worker_id,optional" json:"worker_id"`
	HitID    *string  `parquet:"hit_id,optional" json:"hit_id"`
}

type optValidated struct {
	Number   []string   `parquet:"number,list,optional" json:"number"`
	Date     []optDate  `parquet:"date,list,optional" json:"date"`
	Spans    [][]string `parquet:"spans,list,optional" parquet-element:",list" json:"spans"`
	WorkerID []string   `parquet:"worker_id,list,optional" json:"worker_id"`
	HitID    []string   `parquet:"hit_id,list,optional" json:"hit_id"`
}

type optRow struct {
	SectionID        *string       `parquet:"section_id,optional" json:"section_id"`
	QueryID          *string       `parquet:"query_id,optional" json:"query_id"`
	Passage          *string       `parquet:"passage,optional" json:"passage"`
	Question         *string       `parquet:"question,optional" json:"question"`
	Answer           *optAnswer    `parquet:"answer,optional" json:"answer"`
	ValidatedAnswers *optValidated `parquet:"validated_answers,optional" json:"validated_answers"`
}

func (r hfRow) opt() optRow {
	s := func(v string) *string { return &v }
	date := func(a hfAnswer) optDate { return optDate{s(a.day), s(a.month), s(a.year)} }
	v := optValidated{Number: []string{}, Date: []optDate{}, Spans: [][]string{}, WorkerID: []string{}, HitID: []string{}}
	for i, a := range r.validated {
		v.Number = append(v.Number, a.number)
		v.Date = append(v.Date, date(a))
		v.Spans = append(v.Spans, a.spans)
		v.WorkerID = append(v.WorkerID, fmt.Sprintf("w%d", i))
		v.HitID = append(v.HitID, "")
	}
	d := date(r.answer)
	return optRow{s(r.sectionID), s(r.queryID), s(r.passage), s(r.question),
		&optAnswer{s(r.answer.number), &d, r.answer.spans, s("w"), s("h")}, &v}
}

// Row types with every field required and no worker_id or hit_id.

type reqDate struct {
	Day   string `parquet:"day" json:"day"`
	Month string `parquet:"month" json:"month"`
	Year  string `parquet:"year" json:"year"`
}

type reqAnswer struct {
	Number string   `parquet:"number" json:"number"`
	Date   reqDate  `parquet:"date" json:"date"`
	Spans  []string `parquet:"spans,list" json:"spans"`
}

type reqValidated struct {
	Number []string   `parquet:"number,list" json:"number"`
	Date   []reqDate  `parquet:"date,list" json:"date"`
	Spans  [][]string `parquet:"spans,list" parquet-element:",list" json:"spans"`
}

type reqRow struct {
	SectionID        string       `parquet:"section_id" json:"section_id"`
	QueryID          string       `parquet:"query_id" json:"query_id"`
	Passage          string       `parquet:"passage" json:"passage"`
	Question         string       `parquet:"question" json:"question"`
	Answer           reqAnswer    `parquet:"answer" json:"answer"`
	ValidatedAnswers reqValidated `parquet:"validated_answers" json:"validated_answers"`
}

func (r hfRow) req() reqRow {
	date := func(a hfAnswer) reqDate { return reqDate{a.day, a.month, a.year} }
	v := reqValidated{Number: []string{}, Date: []reqDate{}, Spans: [][]string{}}
	for _, a := range r.validated {
		v.Number = append(v.Number, a.number)
		v.Date = append(v.Date, date(a))
		v.Spans = append(v.Spans, a.spans)
	}
	return reqRow{r.sectionID, r.queryID, r.passage, r.question,
		reqAnswer{r.answer.number, date(r.answer), r.answer.spans}, v}
}

// Row type with validated_answers as a list of answers.

type listRow struct {
	SectionID        string      `parquet:"section_id" json:"section_id"`
	QueryID          string      `parquet:"query_id" json:"query_id"`
	Passage          string      `parquet:"passage" json:"passage"`
	Question         string      `parquet:"question" json:"question"`
	Answer           reqAnswer   `parquet:"answer" json:"answer"`
	ValidatedAnswers []reqAnswer `parquet:"validated_answers,list" json:"validated_answers"`
}

func (r hfRow) list() listRow {
	q := r.req()
	l := listRow{q.SectionID, q.QueryID, q.Passage, q.Question, q.Answer, []reqAnswer{}}
	for _, a := range r.validated {
		l.ValidatedAnswers = append(l.ValidatedAnswers, reqAnswer{a.number, reqDate{a.day, a.month, a.year}, a.spans})
	}
	return l
}

// encodeParquet writes rows as Parquet, in row groups of groupRows rows.
func encodeParquet[T any](t testing.TB, rows []T, groupRows int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf)
	for len(rows) > 0 {
		n := min(groupRows, len(rows))
		if _, err := w.Write(rows[:n]); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		rows = rows[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func encodeJSONL[T any](t testing.TB, rows []T) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, r := range rows {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(b, '\n'))
	}
	return buf.Bytes()
}

func mapRows[T any](rows []hfRow, f func(hfRow) T) []T {
	out := make([]T, len(rows))
	for i, r := range rows {
		out[i] = f(r)
	}
	return out
}

func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

// TestLoadParquetRoundTrip writes the shared subset as Hugging Face rows to
// Parquet and to JSON Lines, and checks that Load gives the JSON Lines
// path's questions byte for byte, the original questions' fields, and the
// original gold answers.
func TestLoadParquetRoundTrip(t *testing.T) {
	orig, err := Load(sharedData(t, "drop/drop_dataset_dev.subset.json"))
	if err != nil {
		t.Fatal(err)
	}
	rows := hfRows(t, orig)
	tests := []struct {
		name          string
		parquet, json []byte
		extra         map[string]bool // answer keys beyond the original's
	}{
		{"pyarrow-nullable", encodeParquet(t, mapRows(rows, hfRow.opt), 7), encodeJSONL(t, mapRows(rows, hfRow.opt)), map[string]bool{"worker_id": true, "hit_id": true}},
		{"required", encodeParquet(t, mapRows(rows, hfRow.req), 1000), encodeJSONL(t, mapRows(rows, hfRow.req)), nil},
		{"validated-list", encodeParquet(t, mapRows(rows, hfRow.list), 1), encodeJSONL(t, mapRows(rows, hfRow.list)), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			got, err := Load(writeFile(t, dir, "validation-00000-of-00001.parquet", tc.parquet))
			if err != nil {
				t.Fatal(err)
			}
			want, err := Load(writeFile(t, dir, "validation.jsonl", tc.json))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(orig) || len(want) != len(orig) {
				t.Fatalf("got %d questions (JSON Lines %d), want %d", len(got), len(want), len(orig))
			}
			for i, q := range got {
				if !reflect.DeepEqual(q, want[i]) {
					t.Errorf("question %d: Parquet\n%s\nJSON Lines\n%s", i, q.Doc(), want[i].Doc())
				}
				o := orig[i]
				if q.SectionID != o.SectionID || q.QueryID != o.QueryID || q.Passage != o.Passage || q.Question != o.Question {
					t.Errorf("question %d: fields differ from the original", i)
				}
				var ans map[string]json.RawMessage
				if err := json.Unmarshal(q.Answer, &ans); err != nil {
					t.Fatal(err)
				}
				for k := range tc.extra {
					delete(ans, k)
				}
				trimmed, _ := json.Marshal(ans)
				if !jsonEqual(t, trimmed, o.Answer) {
					t.Errorf("question %d: answer %s, want %s", i, q.Answer, o.Answer)
				}
				a, err := scoredrop.Answers(q.Doc())
				if err != nil {
					t.Fatal(err)
				}
				b, err := scoredrop.Answers(o.Doc())
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(a, b) {
					t.Errorf("question %d: gold %q, want %q", i, a, b)
				}
			}
		})
	}
}

// TestLoadParquetNulls checks that nulls inside answers are kept as JSON
// null, as the JSON Lines path keeps them.
func TestLoadParquetNulls(t *testing.T) {
	s := func(v string) *string { return &v }
	rows := []optRow{{
		SectionID: nil, QueryID: s("q1"), Passage: s("p"), Question: s("q"),
		Answer:           &optAnswer{Number: nil, Date: &optDate{Day: s("1")}, Spans: nil},
		ValidatedAnswers: &optValidated{Number: []string{"3"}, Date: []optDate{{}}, Spans: [][]string{{}}},
	}}
	dir := t.TempDir()
	got, err := Load(writeFile(t, dir, "n.parquet", encodeParquet(t, rows, 10)))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Load(writeFile(t, dir, "n.jsonl", encodeJSONL(t, rows)))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parquet %s\nJSON Lines %s", got[0].Doc(), want[0].Doc())
	}
}

// Row types for bad input.

type noValidatedRow struct {
	SectionID string    `parquet:"section_id"`
	QueryID   string    `parquet:"query_id"`
	Passage   string    `parquet:"passage"`
	Question  string    `parquet:"question"`
	Answer    reqAnswer `parquet:"answer"`
}

type intQueryRow struct {
	SectionID        string       `parquet:"section_id"`
	QueryID          int64        `parquet:"query_id"`
	Passage          string       `parquet:"passage"`
	Question         string       `parquet:"question"`
	Answer           reqAnswer    `parquet:"answer"`
	ValidatedAnswers reqValidated `parquet:"validated_answers"`
}

type stringSpansRow struct {
	SectionID string `parquet:"section_id"`
	QueryID   string `parquet:"query_id"`
	Passage   string `parquet:"passage"`
	Question  string `parquet:"question"`
	Answer    struct {
		Number string  `parquet:"number"`
		Date   reqDate `parquet:"date"`
		Spans  string  `parquet:"spans"`
	} `parquet:"answer"`
	ValidatedAnswers reqValidated `parquet:"validated_answers"`
}

func TestLoadParquetBad(t *testing.T) {
	dir := t.TempDir()
	good := func(id string) reqRow {
		return reqRow{"s", id, "p", "q", reqAnswer{"1", reqDate{}, []string{}}, reqValidated{[]string{}, []reqDate{}, [][]string{}}}
	}
	emptyQ := []reqRow{good("1"), good("2"), good("3")}
	emptyQ[2].Question = ""
	badUTF8 := []reqRow{good("1"), good("2")}
	badUTF8[1].Passage = "p\xff"
	hf := hfRow{sectionID: "s", queryID: "1", passage: "p", question: "q", answer: hfAnswer{number: "1"}}
	nullAnswer := mapRows([]hfRow{hf, hf}, hfRow.opt)
	nullAnswer[1].Answer = nil
	nullQuery := mapRows([]hfRow{hf}, hfRow.opt)
	nullQuery[0].QueryID = nil
	valid := encodeParquet(t, []reqRow{good("1"), good("2")}, 1)

	tests := []struct {
		name string
		data []byte
		want []string // substrings of the error
	}{
		{"missing-column.parquet", encodeParquet(t, []noValidatedRow{{QueryID: "1"}}, 10), []string{"row 1", `column "validated_answers"`, "missing"}},
		{"wrong-type.parquet", encodeParquet(t, []intQueryRow{{QueryID: 1}}, 10), []string{"row 1", `column "query_id"`, "not a string"}},
		{"spans-string.parquet", encodeParquet(t, []stringSpansRow{{QueryID: "1"}}, 10), []string{"row 1", `column "answer.spans"`, "want list<string>"}},
		{"empty-question.parquet", encodeParquet(t, emptyQ, 2), []string{"row 3", `column "question"`, "missing or empty"}},
		{"bad-utf8.parquet", encodeParquet(t, badUTF8, 10), []string{"row 2", `column "passage"`, "UTF-8"}},
		{"null-answer.parquet", encodeParquet(t, nullAnswer, 10), []string{"row 2", `column "answer"`, "null"}},
		{"null-query.parquet", encodeParquet(t, nullQuery, 10), []string{"row 1", `column "query_id"`}},
		{"junk.parquet", []byte("not parquet at all"), nil},
		{"empty.parquet", nil, nil},
		{"truncated.parquet", valid[:len(valid)/2], nil},
		{"no-magic.parquet", valid[4:], nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, dir, tc.name, tc.data)
			_, err := Load(p)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			t.Log(msg)
			if !strings.Contains(msg, p) || strings.Contains(msg, "\n") {
				t.Errorf("error %q does not name %s on one line", msg, p)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q, want containing %q", msg, w)
				}
			}
		})
	}
	if _, err := Load(filepath.Join(dir, "absent.parquet")); err == nil || !strings.Contains(err.Error(), "absent.parquet") {
		t.Errorf("absent file: error %v", err)
	}
}

// FuzzParseParquet checks that no input makes the Parquet reader panic,
// and that what it accepts is a well-formed question.
func FuzzParseParquet(f *testing.F) {
	s := func(v string) *string { return &v }
	row := optRow{s("s"), s("q1"), s("p"), s("q"),
		&optAnswer{Number: s(""), Date: &optDate{s("1"), s("May"), s("2000")}, Spans: []string{"a", "b"}},
		&optValidated{Number: []string{"1", ""}, Date: []optDate{{}, {}}, Spans: [][]string{{}, {"x"}}}}
	for _, data := range [][]byte{
		encodeParquet(f, []optRow{row, row}, 1),
		encodeParquet(f, []reqRow{{"s", "q", "p", "q", reqAnswer{"1", reqDate{}, []string{"a"}}, reqValidated{[]string{"2"}, []reqDate{{}}, [][]string{{"b", "c"}}}}}, 1),
		[]byte("PAR1PAR1"),
	} {
		f.Add(data)
		f.Add(data[:len(data)*3/4])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		qs, err := parseParquet("fuzz.parquet", bytes.NewReader(data), int64(len(data)))
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.parquet") || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q", err)
			}
			return
		}
		for _, q := range qs {
			if q.QueryID == "" || q.Passage == "" || q.Question == "" || !json.Valid(q.Answer) || !json.Valid(q.ValidatedAnswers) {
				t.Errorf("bad question %+v", q)
			}
		}
	})
}

// BenchmarkLoadParquet loads the shared subset replicated to about the size
// of the DROP validation split (9,536 questions), reporting rows/s and MB/s
// of Parquet file.
func BenchmarkLoadParquet(b *testing.B) {
	orig, err := Load(sharedData(b, "drop/drop_dataset_dev.subset.json"))
	if err != nil {
		b.Fatal(err)
	}
	base := hfRows(b, orig)
	var rows []optRow
	for i := 0; len(rows) < 9536; i++ {
		for _, r := range base {
			r.queryID = fmt.Sprintf("%s-%d", r.queryID, i)
			r.sectionID = fmt.Sprintf("%s-%d", r.sectionID, i)
			rows = append(rows, r.opt())
		}
	}
	data := encodeParquet(b, rows, 100000)
	p := writeFile(b, b.TempDir(), "validation-00000-of-00001.parquet", data)
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		qs, err := Load(p)
		if err != nil || len(qs) != len(rows) {
			b.Fatalf("%d questions, %v", len(qs), err)
		}
	}
	b.ReportMetric(float64(len(rows))*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}
