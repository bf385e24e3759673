package report

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"unicode/utf16"

	"tally/scoring/stats"
)

// browserItem is one (sample, model) of the per-sample browser, in the
// compact JSON the page's script reads.
type browserItem struct {
	Task   string        `json:"t"`
	ID     string        `json:"id"`
	Model  string        `json:"m"`
	Prompt int           `json:"p"` // index into browserData.Prompts
	Gold   string        `json:"g"`
	Text   string        `json:"x"`
	Finish string        `json:"f"`
	Error  string        `json:"e,omitempty"`
	Cut    bool          `json:"imp,omitempty"` // imported: text already cut
	Under  []browserEval `json:"u"`
}

type browserEval struct {
	Col        int                `json:"c"`
	Cut        int                `json:"cut"`
	Seq        string             `json:"seq,omitempty"`
	Prediction string             `json:"pred"`
	Values     map[string]float64 `json:"v"`
}

type browserData struct {
	// Columns and Metrics are per task.
	Columns map[string][]string `json:"cols"`
	Metrics map[string][]string `json:"metrics"`
	Prompts []string            `json:"prompts"`
	Items   []browserItem       `json:"items"`
}

// pack gzips and base64-encodes the browser's JSON: the page decodes it
// with the browser's DecompressionStream. Base64 holds no character that
// could end the script element, whatever the outputs contain.
func pack(d browserData) (string, int, error) {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	enc := json.NewEncoder(zw)
	if err := enc.Encode(d); err != nil {
		return "", 0, fmt.Errorf("encode samples: %w", err)
	}
	if err := zw.Close(); err != nil {
		return "", 0, err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), buf.Len(), nil
}

func browserOf(ds *Dataset) browserData {
	d := browserData{Columns: map[string][]string{}, Metrics: map[string][]string{}}
	promptIdx := map[string]int{}
	for _, td := range ds.Tasks {
		labels := make([]string, len(td.Columns))
		for i, c := range td.Columns {
			labels[i] = c.Label
		}
		d.Columns[td.Task], d.Metrics[td.Task] = labels, td.Metrics
		for _, sd := range td.Samples {
			pk := td.Task + "\x00" + sd.ID
			pi, ok := promptIdx[pk]
			if !ok {
				pi = len(d.Prompts)
				promptIdx[pk] = pi
				d.Prompts = append(d.Prompts, sd.Prompt)
			}
			it := browserItem{Task: td.Task, ID: sd.ID, Model: ModelLabel(sd.Model, sd.Chat), Prompt: pi, Gold: string(sd.Refs), Text: sd.Text,
				Finish: sd.Finish, Error: sd.Error, Cut: sd.Imported}
			for ci := range td.Columns {
				sc := sd.Under[ci]
				if sc == nil {
					continue
				}
				vals := make(map[string]float64, len(sc.Values))
				for k, v := range sc.Values {
					if finite(v) {
						vals[k] = v
					}
				}
				it.Under = append(it.Under, browserEval{Col: ci, Cut: utf16Offset(sd.Text, sc.Cut), Seq: sc.Seq, Prediction: sc.Prediction, Values: vals})
			}
			d.Items = append(d.Items, it)
		}
	}
	return d
}

// utf16Offset converts a byte offset in s to the UTF-16 offset the page's
// script slices strings by (-1 stays -1).
func utf16Offset(s string, off int) int {
	if off < 0 {
		return off
	}
	n := 0
	for _, r := range s[:min(off, len(s))] {
		n += utf16.RuneLen(r)
	}
	return n
}

type htmlMetric struct {
	Metric string
	Means  template.HTML
	Diffs  template.HTML
	Rows   []htmlRow
}

type htmlRow struct {
	Setting, Mean, CI, Diff, DCI string
	N, Changed                   int
}

type htmlHeat struct {
	Label string
	N     int
	SVG   template.HTML
}

type htmlTask struct {
	Task    string
	Samples int
	Metrics []htmlMetric
	Heat    []htmlHeat
	Drop    *dropView
}

// WriteHTML writes the store-wide HTML report: one self-contained page
// (inline SVG charts, inline script, no network) with per task the means
// and paired differences, Counting-Stars heatmaps, the DROP view and a
// browser over every sample.
func WriteHTML(w io.Writer, ds *Dataset) error {
	data := struct {
		Title   string
		Tasks   []htmlTask
		Packed  string
		Samples int
	}{Title: ds.Title}
	if data.Title == "" {
		data.Title = "tally report"
	}
	for _, td := range ds.Tasks {
		ht := htmlTask{Task: td.Task, Samples: len(td.Samples)}
		for _, m := range td.Metrics {
			hm := htmlMetric{Metric: m}
			var labels, dlabels []string
			var ivs, divs []stats.Interval
			for _, r := range td.Rows {
				if r.Metric != m {
					continue
				}
				mean, ci, diff, dci := r.cells()
				hm.Rows = append(hm.Rows, htmlRow{r.Setting, mean, ci, diff, dci, r.N, len(r.Changed)})
				labels, ivs = append(labels, r.Setting), append(ivs, r.Mean.stats())
				if r.Diff != nil {
					dlabels, divs = append(dlabels, r.Setting), append(divs, r.Diff.stats())
				}
			}
			hm.Means = intervalChart("means", labels, ivs, false)
			if len(divs) > 0 {
				hm.Diffs = intervalChart("diffs", dlabels, divs, true)
			}
			ht.Metrics = append(ht.Metrics, hm)
		}
		for ci, c := range td.Columns {
			if svg, n := starsHeatmap(td, ci); svg != "" {
				ht.Heat = append(ht.Heat, htmlHeat{c.Label, n, svg})
			}
		}
		if isDROP(td) {
			ht.Drop = makeDropView(td)
		}
		data.Samples += len(td.Samples)
		data.Tasks = append(data.Tasks, ht)
	}
	packed, _, err := pack(browserOf(ds))
	if err != nil {
		return err
	}
	data.Packed = packed
	if err := htmlReport.Execute(w, data); err != nil {
		return fmt.Errorf("write HTML report: %w", err)
	}
	return nil
}

var htmlFuncs = template.FuncMap{
	"pct": func(v float64) string {
		if math.IsNaN(v) {
			return "–"
		}
		return fmt.Sprintf("%.1f%%", 100*v)
	},
	"f4": func(v float64) string {
		if math.IsNaN(v) {
			return "–"
		}
		return fmt.Sprintf("%.4f", v)
	},
	"bar": func(v float64) template.CSS {
		if math.IsNaN(v) {
			v = 0
		}
		return template.CSS(fmt.Sprintf("width:%.1fpx", 120*math.Max(0, math.Min(1, v))))
	},
}

var htmlReport = template.Must(template.New("report").Funcs(htmlFuncs).Parse(htmlPageText))
