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
	"strings"
	"text/tabwriter"

	"tally/generate"
	"tally/scoring/stats"
)

// Level is the confidence level of every interval a report shows. Every
// figure is a mean of per-sample scores, and its interval stays inside the
// scores' range by construction (stats.BoundedMeanInterval): Wilson's
// score interval for 0/1 scores, and for other scores in [0, 1] Wilson's
// at the effective number of trials p(1−p)/SE², SE being the standard
// error of the mean that lm-evaluation-harness writes (its mean_stderr,
// which stderr_for_metric in lm_eval/api/metrics.py uses for every "mean"
// aggregation; lm-eval files still carry it as it is); a paired
// difference's likewise over the differences mapped onto [0, 1]. Scores
// beyond [0, 1] keep mean ± 1.96 standard errors. They are exact,
// deterministic and linear in the number of samples (a bootstrap of 2,000
// resamples costs 2,000 passes over them).
const Level = 0.95

// Row is one (task, metric, column) line of a comparison; a column is a
// stop setting, prefixed by the model when models are compared. Every
// command and report makes its rows with one function (summarise), from
// the store (Load) or from a run's results (FromResults, Compare), so
// that n, failed and the means cannot disagree between them.
type Row struct {
	// Task labels the task: its name, and what sets its variant apart
	// when the report holds several of that name ("drop (0-shot)").
	Task string `json:"task"`
	// Variant is the task as stored: its variant's key
	// (tally/tasks/variant), or an earlier tally's task name.
	Variant string `json:"variant"`
	Metric  string `json:"metric"`
	// Setting labels the column ("setting" alone, or "model setting"
	// when models are compared; "(chat)" marks a chat run).
	Setting string `json:"setting"`
	// Model, Chat, Stop, Seqs and Budget are the column the label names:
	// the model, whether it was prompted through its chat template, the
	// stop setting's name and sequences, and the token budget.
	Model  string   `json:"model,omitempty"`
	Chat   bool     `json:"chat,omitempty"`
	Stop   string   `json:"stop"`
	Seqs   []string `json:"stop_sequences"`
	Budget int      `json:"budget,omitempty"`
	// N is the number of samples in the mean: Scored plus Failed (which
	// count as 0).
	N      int `json:"n"`
	Scored int `json:"n_scored"`
	Failed int `json:"n_failed"`
	// FailedSamples lists the failed samples with the reason, in sample
	// order.
	FailedSamples []FailedSample `json:"failed_samples,omitempty"`
	Mean          Interval       `json:"mean"`
	// Stderr is the standard error of the mean (lm-eval's mean_stderr:
	// the sample standard deviation over sqrt(n)), null below two samples.
	Stderr generate.Mean `json:"stderr"`
	// Diff is the paired difference against the column named by Against,
	// over the samples both have (absent for the first column): for the
	// first model, its first setting; for a model compared with --against,
	// the first model at the same setting.
	Diff    *Interval `json:"diff,omitempty"`
	Against string    `json:"diff_against,omitempty"`
	Changed []Changed `json:"changed,omitempty"`
}

// FailedSample is a sample whose generation failed (backend error, prompt
// beyond the context): it counts as 0 in every mean.
type FailedSample struct {
	SampleID string `json:"sample_id"`
	Reason   string `json:"reason"`
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

// pairedInterval is the paired difference b-a with its interval (all NaN
// when nothing pairs).
func pairedInterval(a, b []float64) *Interval {
	if len(a) == 0 {
		nan := generate.Mean(math.NaN())
		return &Interval{nan, nan, nan}
	}
	d := interval(stats.BoundedPairedInterval(a, b, Level))
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

// failedList is every failed sample of the rows once per task and model:
// "task/id (model): reason" (the model when rows name one).
func failedList(rows []Row) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range rows {
		for _, f := range r.FailedSamples {
			who := ""
			if r.Model != "" {
				who = " (" + ModelLabel(r.Model, r.Chat) + ")"
			}
			line := r.Task + "/" + f.SampleID + who + ": " + f.Reason
			if !seen[line] {
				seen[line] = true
				out = append(out, line)
			}
		}
	}
	return out
}

// WriteFailed writes, when any row has failed samples, how they enter the
// figures and at most max of them (then how many more), one a line.
func WriteFailed(w io.Writer, rows []Row, max int) {
	if !anyFailed(rows) {
		return
	}
	fmt.Fprintln(w, "note: "+FailedNote)
	list := failedList(rows)
	for i, l := range list {
		if i == max {
			fmt.Fprintf(w, "  … and %d more failed samples (--format json lists them all)\n", len(list)-i)
			break
		}
		fmt.Fprintf(w, "  failed: %s\n", l)
	}
}

// Text writes the rows as an aligned table, the failed samples, then at
// most showChanged changed samples per row.
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
	WriteFailed(w, rows, max(showChanged, 10))
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

// mdEscape makes text from the store (task names, paths, sample ids,
// model output) plain text in a Markdown cell or heading: HTML is written
// as entities (no <img onerror=…> reaches a renderer), Markdown's
// punctuation is backslash-escaped, a "|" cannot end a table cell, and
// line breaks show as \n.
func mdEscape(s string) string { return mdReplacer.Replace(s) }

var mdReplacer = strings.NewReplacer(
	"&", "&amp;", "<", "&lt;", ">", "&gt;", "|", "&#124;",
	"\\", "\\\\", "`", "\\`", "*", "\\*", "_", "\\_", "[", "\\[", "]", "\\]", "~", "\\~",
	"\n", "\\n", "\r", "\\r",
)

// mdCode is text from the store as inline code in a Markdown cell: a
// <code> element whose content is HTML-escaped (a backtick in it cannot
// end it, a "|" cannot end the cell), with line breaks shown as \n.
func mdCode(s string) string {
	return "<code>" + mdCodeReplacer.Replace(s) + "</code>"
}

var mdCodeReplacer = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "|", "&#124;", "\n", "\\n", "\r", "\\r")

// Markdown writes the rows as a Markdown document with a title.
func Markdown(w io.Writer, title string, rows []Row, showChanged int) error {
	fmt.Fprintf(w, "# %s\n\n| task | metric | setting | n | failed | mean | 95%% CI | diff | 95%% CI | against | changed |\n|---|---|---|---|---|---|---|---|---|---|---|\n", mdEscape(title))
	for _, r := range rows {
		mean, ci, diff, dci := r.cells()
		against := ""
		if r.Against != "" {
			against = mdCode(r.Against)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d | %d | %s | %s | %s | %s | %s | %d |\n", mdEscape(r.Task), mdEscape(r.Metric), mdCode(r.Setting), r.N, r.Failed, mean, ci, diff, dci, against, len(r.Changed))
	}
	if anyFailed(rows) {
		fmt.Fprintf(w, "\n%s.\n\n", FailedNote)
		list := failedList(rows)
		for i, l := range list {
			if i == max(showChanged, 10) {
				fmt.Fprintf(w, "- … and %d more failed samples (--format json lists them all)\n", len(list)-i)
				break
			}
			fmt.Fprintf(w, "- failed: %s\n", mdEscape(l))
		}
	}
	for _, r := range rows {
		if len(r.Changed) == 0 || showChanged <= 0 {
			continue
		}
		fmt.Fprintf(w, "\n## %s %s: changed under %s\n\n| sample | first | this | first prediction | this prediction |\n|---|---|---|---|---|\n", mdEscape(r.Task), mdEscape(r.Metric), mdCode(r.Setting))
		for i, c := range r.Changed {
			if i == showChanged {
				fmt.Fprintf(w, "\n… %d more.\n", len(r.Changed)-i)
				break
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", mdEscape(c.SampleID), num("%.4g", c.First), num("%.4g", c.This), mdCode(c.FirstPrediction), mdCode(c.ThisPrediction))
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
{{if .Failed}}<h2>failed samples</h2><ul class="failed">{{range .Failed}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
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
		Failed      []string
		Changed     []section
	}{Title: title}
	if anyFailed(rows) {
		data.Note, data.Failed = FailedNote, failedList(rows)
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
