// Package report turns scores into comparison rows and renders them as
// text, Markdown, HTML or JSON. It aggregates (means, 95% intervals,
// paired differences) but never computes a score. Failed samples (backend
// error, prompt beyond the context) count as 0 in every mean, and every
// row says how many there were; an undefined figure is "n/a" in text and
// null in JSON, never NaN.
package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"
	"text/tabwriter"

	"tally/generate"
	"tally/scoring/stats"
)

// Level is the confidence level of every interval a report shows. Every
// figure is a mean of per-sample scores, so, as lm-evaluation-harness does
// for its "mean" aggregations (stderr_for_metric in lm_eval/api/metrics.py
// picks the analytic mean_stderr and bootstraps only other aggregations),
// intervals are analytic: mean ± 1.96 × the standard error of the mean, the
// same standard error written to lm-eval results files; a paired difference
// uses the standard error of the per-sample differences. They are exact,
// deterministic and linear in the number of samples (a bootstrap of 2,000
// resamples costs 2,000 passes over them).
const Level = 0.95

// Row is one (task, metric, column) line of a comparison; a column is a
// stop setting, prefixed by the model when models are compared.
type Row struct {
	Task    string `json:"task"`
	Metric  string `json:"metric"`
	Setting string `json:"setting"`
	// N is the number of samples in the mean: Scored plus Failed (which
	// count as 0).
	N      int      `json:"n"`
	Scored int      `json:"n_scored"`
	Failed int      `json:"n_failed"`
	Mean   Interval `json:"mean"`
	// Diff is the paired difference against the column named by Against,
	// over the samples both have (absent for the first column): for the
	// first model, its first setting; for a model compared with --against,
	// the first model at the same setting.
	Diff    *Interval `json:"diff,omitempty"`
	Against string    `json:"diff_against,omitempty"`
	Changed []Changed `json:"changed,omitempty"`
}

// Interval is a stats.Interval whose undefined bounds are written to JSON
// as null.
type Interval struct {
	Estimate generate.Mean `json:"estimate"`
	Low      generate.Mean `json:"low"`
	High     generate.Mean `json:"high"`
}

// stats is the interval as plain numbers (NaN where undefined).
func (x Interval) stats() stats.Interval {
	return stats.Interval{Estimate: float64(x.Estimate), Low: float64(x.Low), High: float64(x.High)}
}

func interval(x stats.Interval) Interval {
	return Interval{generate.Mean(x.Estimate), generate.Mean(x.Low), generate.Mean(x.High)}
}

// Changed is a sample whose score differs from the compared column's.
type Changed struct {
	SampleID        string        `json:"sample_id"`
	First           generate.Mean `json:"first"`
	This            generate.Mean `json:"this"`
	FirstPrediction string        `json:"first_prediction"`
	ThisPrediction  string        `json:"this_prediction"`
}

// FailedNote says how failed samples enter the figures.
const FailedNote = "failed samples (backend error, prompt beyond the context) count as 0 in the mean; n includes them"

// num formats a figure, "n/a" when it is undefined.
func num(format string, x generate.Mean) string {
	f := float64(x)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "n/a"
	}
	return fmt.Sprintf(format, f)
}

// Compare makes one row per (task, metric, column): every stop setting of
// every model's results (models names them when there are several). The
// first model's columns are paired by sample with its first setting (stop
// settings compared); every other model's column is paired by sample with
// the first model's column at the same setting (models compared).
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
			base := make([]map[string]generate.SampleScore, len(j.Settings))
			labels := make([]string, len(j.Settings))
			for mi, res := range results {
				for si, set := range j.Settings {
					xs := res[j.Task][set.Name][m]
					vals := make([]float64, len(xs))
					byID := make(map[string]generate.SampleScore, len(xs))
					failed := 0
					for i, x := range xs {
						vals[i] = x.Value
						byID[x.SampleID] = x
						if x.Failed != "" {
							failed++
						}
					}
					label := set.String()
					if len(models) > 0 {
						label = models[mi] + " " + label
					}
					row := Row{Task: j.Task, Metric: m, Setting: label, N: len(xs), Scored: len(xs) - failed, Failed: failed,
						Mean: interval(stats.MeanInterval(vals, Level))}
					if len(xs) == 0 {
						nan := generate.Mean(math.NaN())
						row.Mean = Interval{nan, nan, nan}
					}
					switch {
					case mi == 0 && si == 0:
					case mi == 0:
						row.Diff, row.Changed = pair(base[0], byID)
						row.Against = labels[0]
					default:
						row.Diff, row.Changed = pair(base[si], byID)
						row.Against = labels[si]
					}
					if mi == 0 {
						base[si], labels[si] = byID, label
					}
					rows = append(rows, row)
				}
			}
		}
	}
	return rows
}

// pair pairs a column's scores with another column's by sample id and
// returns the paired difference (this minus other) and the samples whose
// score changed.
func pair(first, this map[string]generate.SampleScore) (*Interval, []Changed) {
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
			ch = append(ch, Changed{id, generate.Mean(x.Value), generate.Mean(y.Value), x.Prediction, y.Prediction})
		}
	}
	return pairedInterval(a, b), ch
}

// pairedInterval is the paired difference b-a with its interval (all NaN
// when nothing pairs).
func pairedInterval(a, b []float64) *Interval {
	if len(a) == 0 {
		nan := generate.Mean(math.NaN())
		return &Interval{nan, nan, nan}
	}
	d := interval(stats.PairedMeanInterval(a, b, Level))
	return &d
}

// cells formats a row's figures as the renderers show them ("n/a" for an
// undefined figure).
func (r Row) cells() (mean, ci, diff, dci string) {
	mean = num("%.4f", r.Mean.Estimate)
	ci = "[" + num("%.4f", r.Mean.Low) + ", " + num("%.4f", r.Mean.High) + "]"
	if r.Diff != nil {
		diff = num("%+.4f", r.Diff.Estimate)
		dci = "[" + num("%+.4f", r.Diff.Low) + ", " + num("%+.4f", r.Diff.High) + "]"
	}
	return
}

// anyFailed reports whether any row has failed samples.
func anyFailed(rows []Row) bool {
	for _, r := range rows {
		if r.Failed > 0 {
			return true
		}
	}
	return false
}

// Text writes the rows as an aligned table, then at most showChanged
// changed samples per row.
func Text(w io.Writer, rows []Row, showChanged int) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "task\tmetric\tsetting\tn\tfailed\tmean\t95% CI\tdiff\t95% CI\tagainst\tchanged")
	for _, r := range rows {
		mean, ci, diff, dci := r.cells()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%d\n", r.Task, r.Metric, r.Setting, r.N, r.Failed, mean, ci, diff, dci, r.Against, len(r.Changed))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if anyFailed(rows) {
		fmt.Fprintln(w, "note: "+FailedNote)
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
			fmt.Fprintf(w, "  %s: %s → %s  %q → %q\n", c.SampleID, num("%.4g", c.First), num("%.4g", c.This), c.FirstPrediction, c.ThisPrediction)
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
	fmt.Fprintf(w, "# %s\n\n| task | metric | setting | n | failed | mean | 95%% CI | diff | 95%% CI | against | changed |\n|---|---|---|---|---|---|---|---|---|---|---|\n", mdEscape(title))
	for _, r := range rows {
		mean, ci, diff, dci := r.cells()
		against := ""
		if r.Against != "" {
			against = "`" + mdEscape(r.Against) + "`"
		}
		fmt.Fprintf(w, "| %s | %s | `%s` | %d | %d | %s | %s | %s | %s | %s | %d |\n", mdEscape(r.Task), mdEscape(r.Metric), mdEscape(r.Setting), r.N, r.Failed, mean, ci, diff, dci, against, len(r.Changed))
	}
	if anyFailed(rows) {
		fmt.Fprintf(w, "\n%s.\n", FailedNote)
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
			fmt.Fprintf(w, "| %s | %s | %s | `%s` | `%s` |\n", mdEscape(c.SampleID), num("%.4g", c.First), num("%.4g", c.This), mdEscape(c.FirstPrediction), mdEscape(c.ThisPrediction))
		}
	}
	return nil
}

var htmlPage = template.Must(template.New("report").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>{{.Title}}</title>
<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}td.n{text-align:right}code{white-space:pre-wrap}</style>
</head><body><h1>{{.Title}}</h1>
<table><tr><th>task</th><th>metric</th><th>setting</th><th>n</th><th>failed</th><th>mean</th><th>95% CI</th><th>diff</th><th>95% CI</th><th>against</th><th>changed</th></tr>
{{range .Rows}}<tr><td>{{.Task}}</td><td>{{.Metric}}</td><td><code>{{.Setting}}</code></td><td class="n">{{.N}}</td><td class="n">{{.Failed}}</td><td class="n">{{.Mean}}</td><td>{{.CI}}</td><td class="n">{{.Diff}}</td><td>{{.DCI}}</td><td><code>{{.Against}}</code></td><td class="n">{{.Changed}}</td></tr>
{{end}}</table>{{if .Note}}<p>{{.Note}}.</p>{{end}}
{{range .Changed}}<h2>{{.Head}}</h2><table><tr><th>sample</th><th>first</th><th>this</th><th>first prediction</th><th>this prediction</th></tr>
{{range .Items}}<tr><td>{{.SampleID}}</td><td class="n">{{.First}}</td><td class="n">{{.This}}</td><td><code>{{.FirstPrediction}}</code></td><td><code>{{.ThisPrediction}}</code></td></tr>
{{end}}</table>{{if .More}}<p>… {{.More}} more.</p>{{end}}
{{end}}</body></html>
`))

// HTML writes the rows as a self-contained HTML page (escaped by
// html/template).
func HTML(w io.Writer, title string, rows []Row, showChanged int) error {
	type line struct {
		Task, Metric, Setting, Mean, CI, Diff, DCI, Against string
		N, Failed, Changed                                  int
	}
	type item struct {
		SampleID, First, This, FirstPrediction, ThisPrediction string
	}
	type section struct {
		Head  string
		Items []item
		More  int
	}
	data := struct {
		Title, Note string
		Rows        []line
		Changed     []section
	}{Title: title}
	if anyFailed(rows) {
		data.Note = FailedNote
	}
	for _, r := range rows {
		mean, ci, diff, dci := r.cells()
		data.Rows = append(data.Rows, line{r.Task, r.Metric, r.Setting, mean, ci, diff, dci, r.Against, r.N, r.Failed, len(r.Changed)})
		if len(r.Changed) > 0 && showChanged > 0 {
			n := min(showChanged, len(r.Changed))
			sec := section{Head: fmt.Sprintf("%s %s: changed under %s", r.Task, r.Metric, r.Setting), More: len(r.Changed) - n}
			for _, c := range r.Changed[:n] {
				sec.Items = append(sec.Items, item{c.SampleID, num("%.4g", c.First), num("%.4g", c.This), c.FirstPrediction, c.ThisPrediction})
			}
			data.Changed = append(data.Changed, sec)
		}
	}
	return htmlPage.Execute(w, data)
}
