// Package report turns stored scores into comparison rows and renders them
// as text, Markdown or HTML. It aggregates (means, bootstrap intervals,
// paired differences) but never recomputes a score.
package report

import (
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"tally/generate"
	"tally/scoring/stats"
)

// Bootstrap settings: fixed, so the same scores always give the same
// intervals.
const (
	Resamples = 2000
	Seed      = 20261122
)

// Row is one (task, metric, column) line of a comparison; a column is a
// stop setting, prefixed by the model when models are compared.
type Row struct {
	Task    string         `json:"task"`
	Metric  string         `json:"metric"`
	Setting string         `json:"setting"`
	N       int            `json:"n"`
	Mean    stats.Interval `json:"mean"`
	// Diff is the paired difference against the first column, over the
	// samples both scored (absent for the first column).
	Diff    *stats.Interval `json:"diff_vs_first,omitempty"`
	Changed []Changed       `json:"changed,omitempty"`
}

// Changed is a sample whose score differs from the first column's.
type Changed struct {
	SampleID        string  `json:"sample_id"`
	First           float64 `json:"first"`
	This            float64 `json:"this"`
	FirstPrediction string  `json:"first_prediction"`
	ThisPrediction  string  `json:"this_prediction"`
}

// Compare makes one row per (task, metric, column): every stop setting of
// every model's results (models names them when there are several), each
// paired by sample with the first column.
func Compare(jobs []*generate.Job, models []string, results []generate.Results) []Row {
	var rows []Row
	for _, j := range jobs {
		metrics := map[string]bool{}
		for _, res := range results {
			for _, m := range res.Metrics(j.Task) {
				metrics[m] = true
			}
		}
		names := make([]string, 0, len(metrics))
		for m := range metrics {
			names = append(names, m)
		}
		sort.Strings(names)
		for _, m := range names {
			var first map[string]generate.SampleScore
			for mi, res := range results {
				for _, set := range j.Settings {
					xs := res[j.Task][set.Name][m]
					vals := make([]float64, len(xs))
					byID := make(map[string]generate.SampleScore, len(xs))
					for i, x := range xs {
						vals[i] = x.Value
						byID[x.SampleID] = x
					}
					label := set.String()
					if len(models) > 0 {
						label = models[mi] + " " + label
					}
					row := Row{Task: j.Task, Metric: m, Setting: label, N: len(xs), Mean: stats.Bootstrap(vals, Resamples, 0.95, Seed)}
					if first == nil {
						first = byID
					} else {
						row.Diff, row.Changed = pair(first, byID)
					}
					rows = append(rows, row)
				}
			}
		}
	}
	return rows
}

// pair pairs a column's scores with the first column's by sample id and
// returns the paired difference and the samples whose score changed.
func pair(first, this map[string]generate.SampleScore) (*stats.Interval, []Changed) {
	ids := make([]string, 0, len(this))
	for id := range this {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var a, b []float64
	var ch []Changed
	for _, id := range ids {
		x, ok := first[id]
		if !ok {
			continue
		}
		y := this[id]
		a, b = append(a, x.Value), append(b, y.Value)
		if x.Value != y.Value {
			ch = append(ch, Changed{id, x.Value, y.Value, x.Prediction, y.Prediction})
		}
	}
	d := stats.PairedBootstrap(a, b, Resamples, 0.95, Seed)
	return &d, ch
}

// cells formats a row's figures as the renderers show them.
func (r Row) cells() (mean, ci, diff, dci string) {
	mean = fmt.Sprintf("%.4f", r.Mean.Estimate)
	ci = fmt.Sprintf("[%.4f, %.4f]", r.Mean.Low, r.Mean.High)
	if r.Diff != nil {
		diff = fmt.Sprintf("%+.4f", r.Diff.Estimate)
		dci = fmt.Sprintf("[%+.4f, %+.4f]", r.Diff.Low, r.Diff.High)
	}
	return
}

// Text writes the rows as an aligned table, then at most showChanged
// changed samples per row.
func Text(w io.Writer, rows []Row, showChanged int) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "task\tmetric\tsetting\tn\tmean\t95% CI\tdiff vs first\t95% CI\tchanged")
	for _, r := range rows {
		mean, ci, diff, dci := r.cells()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\n", r.Task, r.Metric, r.Setting, r.N, mean, ci, diff, dci, len(r.Changed))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range rows {
		if len(r.Changed) == 0 || showChanged <= 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s %s: samples whose score changed under %s\n", r.Task, r.Metric, r.Setting)
		for i, c := range r.Changed {
			if i == showChanged {
				fmt.Fprintf(w, "  … %d more (use --format json)\n", len(r.Changed)-i)
				break
			}
			fmt.Fprintf(w, "  %s: %.4g → %.4g  %q → %q\n", c.SampleID, c.First, c.This, c.FirstPrediction, c.ThisPrediction)
		}
	}
	return nil
}

// mdEscape escapes what would break a Markdown table cell.
func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", `\n`, "\r", `\r`).Replace(s)
}

// Markdown writes the rows as a Markdown document with a title.
func Markdown(w io.Writer, title string, rows []Row, showChanged int) error {
	fmt.Fprintf(w, "# %s\n\n| task | metric | setting | n | mean | 95%% CI | diff vs first | 95%% CI | changed |\n|---|---|---|---|---|---|---|---|---|\n", mdEscape(title))
	for _, r := range rows {
		mean, ci, diff, dci := r.cells()
		fmt.Fprintf(w, "| %s | %s | `%s` | %d | %s | %s | %s | %s | %d |\n", mdEscape(r.Task), mdEscape(r.Metric), mdEscape(r.Setting), r.N, mean, ci, diff, dci, len(r.Changed))
	}
	for _, r := range rows {
		if len(r.Changed) == 0 || showChanged <= 0 {
			continue
		}
		fmt.Fprintf(w, "\n## %s %s: changed under `%s`\n\n| sample | first | this | first prediction | this prediction |\n|---|---|---|---|---|\n", mdEscape(r.Task), mdEscape(r.Metric), mdEscape(r.Setting))
		for i, c := range r.Changed {
			if i == showChanged {
				fmt.Fprintf(w, "\n… %d more.\n", len(r.Changed)-i)
				break
			}
			fmt.Fprintf(w, "| %s | %.4g | %.4g | `%s` | `%s` |\n", mdEscape(c.SampleID), c.First, c.This, mdEscape(c.FirstPrediction), mdEscape(c.ThisPrediction))
		}
	}
	return nil
}

var htmlPage = template.Must(template.New("report").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}td.n{text-align:right}code{white-space:pre-wrap}</style>
</head><body><h1>{{.Title}}</h1>
<table><tr><th>task</th><th>metric</th><th>setting</th><th>n</th><th>mean</th><th>95% CI</th><th>diff vs first</th><th>95% CI</th><th>changed</th></tr>
{{range .Rows}}<tr><td>{{.Task}}</td><td>{{.Metric}}</td><td><code>{{.Setting}}</code></td><td class="n">{{.N}}</td><td class="n">{{.Mean}}</td><td>{{.CI}}</td><td class="n">{{.Diff}}</td><td>{{.DCI}}</td><td class="n">{{.Changed}}</td></tr>
{{end}}</table>
{{range .Changed}}<h2>{{.Head}}</h2><table><tr><th>sample</th><th>first</th><th>this</th><th>first prediction</th><th>this prediction</th></tr>
{{range .Items}}<tr><td>{{.SampleID}}</td><td class="n">{{printf "%.4g" .First}}</td><td class="n">{{printf "%.4g" .This}}</td><td><code>{{.FirstPrediction}}</code></td><td><code>{{.ThisPrediction}}</code></td></tr>
{{end}}</table>{{if .More}}<p>… {{.More}} more.</p>{{end}}
{{end}}</body></html>
`))

// HTML writes the rows as a self-contained HTML page (escaped by
// html/template).
func HTML(w io.Writer, title string, rows []Row, showChanged int) error {
	type line struct {
		Task, Metric, Setting, Mean, CI, Diff, DCI string
		N, Changed                                 int
	}
	type section struct {
		Head  string
		Items []Changed
		More  int
	}
	data := struct {
		Title   string
		Rows    []line
		Changed []section
	}{Title: title}
	for _, r := range rows {
		mean, ci, diff, dci := r.cells()
		data.Rows = append(data.Rows, line{r.Task, r.Metric, r.Setting, mean, ci, diff, dci, r.N, len(r.Changed)})
		if len(r.Changed) > 0 && showChanged > 0 {
			n := min(showChanged, len(r.Changed))
			data.Changed = append(data.Changed, section{fmt.Sprintf("%s %s: changed under %s", r.Task, r.Metric, r.Setting), r.Changed[:n], len(r.Changed) - n})
		}
	}
	return htmlPage.Execute(w, data)
}
