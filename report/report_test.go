package report

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"tally/generate"
)

func results() (*generate.Job, generate.Results) {
	job := &generate.Job{Task: "t", Settings: []generate.StopSetting{{Name: "dot", Seqs: []string{"."}}, {Name: "nl", Seqs: []string{"\n"}}}}
	res := generate.Results{"t": {
		"dot": {"em": {{SampleID: "a", Value: 0, Prediction: "12"}, {SampleID: "b", Value: 1, Prediction: "x|y"}}},
		"nl":  {"em": {{SampleID: "a", Value: 1, Prediction: "12.5"}, {SampleID: "b", Value: 1, Prediction: "<script>"}}},
	}}
	return job, res
}

// compare makes one row per (task, metric, column) of results, as run and
// compare print them: FromResults' figures, without samples (models name
// the columns when given).
func compare(jobs []*generate.Job, models []string, results []generate.Results) []Row {
	runs := make([]RunResults, len(results))
	for i, res := range results {
		runs[i].Results = res
		if i < len(models) {
			runs[i].Model = models[i]
		}
	}
	ds, err := FromResults(context.Background(), nil, jobs, runs, FromOptions{ModelLabels: len(models) > 0})
	if err != nil {
		panic(err) // no store read without FromOptions.Full
	}
	return ds.Rows()
}

func TestCompare(t *testing.T) {
	job, res := results()
	rows := compare([]*generate.Job{job}, nil, []generate.Results{res})
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	if rows[0].Setting != "dot=." || rows[0].Diff != nil || rows[0].Mean.Estimate != 0.5 {
		t.Errorf("first row %+v", rows[0])
	}
	if rows[1].Diff == nil || rows[1].Diff.Estimate != 0.5 || len(rows[1].Changed) != 1 || rows[1].Changed[0].SampleID != "a" {
		t.Errorf("second row %+v", rows[1])
	}
	// Two models: columns are prefixed by the model, paired with the first.
	rows = compare([]*generate.Job{job}, []string{"m1", "m2"}, []generate.Results{res, res})
	if len(rows) != 4 || rows[2].Setting != "m2 dot=." || rows[2].Diff.Estimate != 0 {
		t.Errorf("two models: %+v", rows)
	}
}

func TestRenderers(t *testing.T) {
	job, res := results()
	rows := compare([]*generate.Job{job}, nil, []generate.Results{res})
	tests := []struct {
		name   string
		render func(*bytes.Buffer) error
		want   []string
		not    []string
	}{
		{"text", func(b *bytes.Buffer) error { return Text(b, rows, 10) }, []string{"dot=.", `nl=\n`, "+0.5000", `"12" → "12.5"`}, nil},
		{"markdown", func(b *bytes.Buffer) error { return Markdown(b, "T|x", rows, 10) }, []string{"# T&#124;x", "| t | em | <code>dot=.</code> | 2 | 0 | 0.5000 |"}, nil},
		{"html", func(b *bytes.Buffer) error { return HTML(b, "<b>T</b>", rows, 10) }, []string{"<title>&lt;b&gt;T&lt;/b&gt;</title>", "12.5"}, []string{"<b>T</b>"}},
	}
	for _, tc := range tests {
		var b bytes.Buffer
		if err := tc.render(&b); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: missing %q in\n%s", tc.name, w, b.String())
			}
		}
		for _, w := range tc.not {
			if strings.Contains(b.String(), w) {
				t.Errorf("%s: unescaped %q", tc.name, w)
			}
		}
	}
}

// TestAgainstPairsSameSetting checks finding 9 of issue 11: with two
// models, model B's column at a setting is paired with model A's column at
// the same setting, not with A's first setting.
func TestAgainstPairsSameSetting(t *testing.T) {
	job, a := results()
	b := generate.Results{"t": {
		"dot": {"em": {{SampleID: "a", Value: 0}, {SampleID: "b", Value: 1}}}, // same as A's dot
		"nl":  {"em": {{SampleID: "a", Value: 1}, {SampleID: "b", Value: 0}}}, // differs from A's nl on b
	}}
	rows := compare([]*generate.Job{job}, []string{"A", "B"}, []generate.Results{a, b})
	if len(rows) != 4 {
		t.Fatalf("%d rows", len(rows))
	}
	bDot, bNl := rows[2], rows[3]
	if bDot.Against != "A dot=." || float64(bDot.Diff.Estimate) != 0 || len(bDot.Changed) != 0 {
		t.Errorf("B dot: against %q diff %v changed %v", bDot.Against, bDot.Diff, bDot.Changed)
	}
	if bNl.Against != `A nl=\n` || float64(bNl.Diff.Estimate) != -0.5 || len(bNl.Changed) != 1 || bNl.Changed[0].SampleID != "b" {
		t.Errorf("B nl: against %q diff %v changed %v", bNl.Against, bNl.Diff, bNl.Changed)
	}
}

// TestUndefinedFigures checks finding 8 of issue 11: an undefined value
// (NaN) is null in JSON and "n/a" in text, Markdown and HTML, and failed
// samples are counted beside the mean and said to count as 0.
func TestUndefinedFigures(t *testing.T) {
	job := &generate.Job{Task: "t", Settings: []generate.StopSetting{{Name: "dot", Seqs: []string{"."}}, {Name: "nl", Seqs: []string{"\n"}}}}
	res := generate.Results{"t": {
		"dot": {"m": {{SampleID: "a", Value: math.NaN()}, {SampleID: "b", Failed: "backend error"}}},
	}}
	rows := compare([]*generate.Job{job}, nil, []generate.Results{res})
	js, err := json.Marshal(rows)
	if err != nil {
		t.Fatalf("JSON: %v", err)
	}
	if !strings.Contains(string(js), `"estimate":null`) || !strings.Contains(string(js), `"n_failed":1`) {
		t.Errorf("JSON %s", js)
	}
	for name, render := range map[string]func(*bytes.Buffer) error{
		"text":     func(b *bytes.Buffer) error { return Text(b, rows, 10) },
		"markdown": func(b *bytes.Buffer) error { return Markdown(b, "T", rows, 10) },
		"html":     func(b *bytes.Buffer) error { return HTML(b, "T", rows, 10) },
	} {
		var b bytes.Buffer
		if err := render(&b); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "NaN") || !strings.Contains(b.String(), "n/a") || !strings.Contains(b.String(), "count as 0") {
			t.Errorf("%s:\n%s", name, b.String())
		}
	}
}

// TestMarkdownEscapes is issue 23's finding that the Markdown report
// printed task names and paths raw: a "|" in a task, a path or a setting
// cannot split a table cell, an <img onerror=…> reaches no renderer as
// HTML, and a backtick cannot end a code span.
func TestMarkdownEscapes(t *testing.T) {
	hostile := "x|y<img src=x onerror=alert(1)>"
	job := &generate.Job{Task: hostile, Settings: []generate.StopSetting{{Name: "a`|b", Seqs: []string{"."}}, {Name: "nl", Seqs: []string{"\n"}}}}
	res := generate.Results{hostile: {
		"a`|b": {"em|<b>": {{SampleID: "s|1", Value: 0, Prediction: "<img src=y>|"}, {SampleID: "s2", Failed: "error: <script>|"}}},
		"nl":   {"em|<b>": {{SampleID: "s|1", Value: 1, Prediction: "`|`"}, {SampleID: "s2", Failed: "error: <script>|"}}},
	}}
	rows := compare([]*generate.Job{job}, nil, []generate.Results{res})
	var b bytes.Buffer
	if err := Markdown(&b, "tally report: /tmp/a|b/<img src=z onerror=alert(2)>.db", rows, 10); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	if strings.Contains(md, "<img") || strings.Contains(md, "<script") || strings.Contains(md, "<b>") {
		t.Errorf("raw HTML in the Markdown:\n%s", md)
	}
	for _, l := range strings.Split(md, "\n") {
		if !strings.HasPrefix(l, "|") {
			continue
		}
		want := 12 // 11 cells
		if strings.HasPrefix(l, "| sample") || strings.Count(l, "|") == 6 {
			want = 6
		}
		if n := strings.Count(l, "|"); n != want {
			t.Errorf("row split into %d cells by a '|' from the store: %s", n-1, l)
		}
	}
	if !strings.Contains(md, "# tally report: /tmp/a&#124;b/&lt;img src=z onerror=alert(2)&gt;.db") {
		t.Errorf("title not escaped:\n%s", md)
	}
}
