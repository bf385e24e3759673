package report

import (
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"tally/scoring/countingstars"
	"tally/scoring/stats"
)

// The charts are inline SVG drawn here, so the page needs no library and
// no network. Every text drawn is escaped with html.EscapeString.

const (
	chartWidth = 760
	labelWidth = 300
	rowHeight  = 22
)

// axis maps values in [lo, hi] to x pixels of the plot area.
type axis struct{ lo, hi float64 }

func (a axis) x(v float64) float64 {
	if a.hi == a.lo {
		return labelWidth
	}
	return labelWidth + (v-a.lo)/(a.hi-a.lo)*float64(chartWidth-labelWidth-20)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// intervalChart draws one labelled line per interval on an axis of the
// metric's range (a.lo to a.hi): the estimate as a dot, the 95% interval
// as a bar clipped to the range (a proportion's interval is never drawn
// past 1; a clipped end is drawn open, and the tooltip gives the interval
// as computed), a reference line at 0 when the range spans it, and the
// axis's title under it.
func intervalChart(class string, labels []string, ivs []stats.Interval, a axis, title string) template.HTML {
	h := rowHeight*len(labels) + 46
	base := h - 34 // the axis line's y
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart %s" role="img" width="%d" height="%d" viewBox="0 0 %d %d" xmlns="http://www.w3.org/2000/svg">`, class, chartWidth, h, chartWidth, h)
	for _, t := range []float64{a.lo, (a.lo + a.hi) / 2, a.hi} {
		x := a.x(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="0" x2="%.1f" y2="%d" stroke="#ddd"/><text x="%.1f" y="%d" font-size="11" text-anchor="middle" fill="#666">%.3g</text>`, x, x, base, x, base+14, t)
	}
	if a.lo < 0 && a.hi > 0 {
		x := a.x(0)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="0" x2="%.1f" y2="%d" stroke="#888" stroke-dasharray="3,3"/>`, x, x, base)
	}
	fmt.Fprintf(&b, `<text class="axis-title" x="%.1f" y="%d" font-size="12" text-anchor="middle" fill="#333">%s</text>`,
		a.x((a.lo+a.hi)/2), h-4, html.EscapeString(title))
	clip := func(v float64) (float64, bool) {
		switch {
		case v < a.lo:
			return a.lo, true
		case v > a.hi:
			return a.hi, true
		}
		return v, false
	}
	for i, l := range labels {
		y := float64(i*rowHeight) + rowHeight/2 + 2
		iv := ivs[i]
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="12" text-anchor="end" dominant-baseline="middle">%s</text>`, labelWidth-8, y, html.EscapeString(l))
		if finite(iv.Low) && finite(iv.High) {
			lo, loClipped := clip(iv.Low)
			hi, hiClipped := clip(iv.High)
			cls := "ci"
			if loClipped || hiClipped {
				cls = "ci clipped"
			}
			fmt.Fprintf(&b, `<line class="%s" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#4477aa" stroke-width="3"><title>95%% CI [%.4f, %.4f]</title></line>`,
				cls, a.x(lo), y, a.x(hi), y, iv.Low, iv.High)
			for _, end := range []struct {
				x       float64
				clipped bool
			}{{lo, loClipped}, {hi, hiClipped}} {
				if end.clipped {
					fmt.Fprintf(&b, `<circle class="clip" cx="%.1f" cy="%.1f" r="3" fill="#fff" stroke="#4477aa"/>`, a.x(end.x), y)
				}
			}
		}
		if finite(iv.Estimate) {
			est, _ := clip(iv.Estimate)
			fmt.Fprintf(&b, `<circle class="est" cx="%.1f" cy="%.1f" r="5" fill="#223355"><title>%.4f</title></circle>`, a.x(est), y, iv.Estimate)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// heatColor maps a score in [0, 1] from red through yellow to green.
func heatColor(v float64) string {
	if !finite(v) {
		return "#eee"
	}
	v = math.Max(0, math.Min(1, v))
	var r, g float64
	if v < 0.5 {
		r, g = 215, 48+v*2*(190-48)
	} else {
		r, g = 215-(v-0.5)*2*(215-26), 190-(v-0.5)*2*(190-150)
	}
	return fmt.Sprintf("rgb(%.0f,%.0f,%.0f)", r, g, 60.0)
}

// starsHeatmap draws the Counting-Stars paper's heatmap of one column: the
// reference's pivot (counting time = star depth down, context size
// across) of the per-star scores scoring/countingstars.Score gives each
// stored prediction. It returns "" when no sample carries the metadata.
func starsHeatmap(td *TaskData, ci int) (template.HTML, int) {
	var cells []countingstars.Cell
	n, misses := 0, 0
	for _, sd := range td.Samples {
		if n == 0 && misses >= 32 {
			return "", 0 // not a Counting-Stars task (its samples are alike)
		}
		sc := sd.Under[ci]
		if sc == nil || sd.Fingerprint != td.Columns[ci].Fingerprint {
			continue
		}
		var md struct {
			Lang        string  `json:"lang"`
			TestType    string  `json:"test_type"`
			M           int     `json:"m"`
			ContextSize float64 `json:"context_size"`
			Rule        string  `json:"scoring_rule"`
		}
		var refs []float64
		if json.Unmarshal(sd.Metadata, &md) != nil || md.Lang == "" || json.Unmarshal(sd.Refs, &refs) != nil {
			misses++
			continue
		}
		rule, err := countingstars.ResolveRule(md.Rule, md.TestType)
		if err != nil {
			continue
		}
		col, err := countingstars.Column(rule, md.Lang, md.TestType, md.ContextSize)
		if err != nil {
			continue
		}
		scores, err := countingstars.Score(rule, md.Lang, md.TestType, md.M, sc.Prediction, refs)
		if err != nil { // the reference drops answers it cannot parse: score them 0
			scores = make([]float64, md.M)
		}
		n++
		for i, s := range scores {
			cells = append(cells, countingstars.Cell{CountingTime: i + 1, Column: col, Score: s})
		}
	}
	if len(cells) == 0 {
		return "", 0
	}
	p := countingstars.MakePivot(cells)
	cw, ch := max(14, min(48, 600/max(len(p.Columns), 1))), max(6, min(18, 480/max(len(p.Rows), 1)))
	left, top := 60, 10
	w, h := left+cw*len(p.Columns)+20, top+ch*len(p.Rows)+50
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart heatmap" role="img" width="%d" height="%d" viewBox="0 0 %d %d" xmlns="http://www.w3.org/2000/svg">`, w, h, w, h)
	for r, depth := range p.Rows {
		for c, size := range p.Columns {
			v := p.Values[r][c]
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"><title>depth %d, context %d: %.3f</title></rect>`,
				left+c*cw, top+r*ch, cw, ch, heatColor(v), depth, size, v)
		}
		if r%max(1, len(p.Rows)/8) == 0 {
			fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10" text-anchor="end" dominant-baseline="middle">%d</text>`, left-4, top+r*ch+ch/2, depth)
		}
	}
	labelEvery := max(1, (48+cw-1)/cw) // about 48 px per label
	for c, size := range p.Columns {
		if c%labelEvery == 0 {
			fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="10" text-anchor="middle">%d</text>`, left+c*cw+cw/2, top+ch*len(p.Rows)+14, size)
		}
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" text-anchor="middle">context size (haystack length)</text>`, left+cw*len(p.Columns)/2, h-8)
	fmt.Fprintf(&b, `<text x="12" y="%d" font-size="11" text-anchor="middle" transform="rotate(-90 12 %d)">star (depth)</text>`, top+ch*len(p.Rows)/2, top+ch*len(p.Rows)/2)
	b.WriteString(`</svg>`)
	return template.HTML(b.String()), n
}

// dropAnswerType is the sample note holding the gold answer's type as
// DROP types it (tally/datasets/drop's NoteAnswerType).
const dropAnswerType = "answer_type"

// goldType is the type of a sample's gold answer in the DROP view: the
// type DROP's gold gives it (its note: number, date, or span for one span
// or several), else, for a sample stored without it, the type its first
// gold answer's text reads as (answerType).
func goldType(note string, first []string) string {
	switch note {
	case "number", "date":
		return note
	case "span", "spans":
		return "span"
	}
	return answerType(first)
}

// answerType classifies a DROP gold answer (a list of spans) by its text,
// for a sample stored without its type: number when every span parses as
// a number, date when it names a month or is a bare year range, else span.
func answerType(spans []string) string {
	if len(spans) == 0 {
		return "span"
	}
	num := true
	for _, s := range spans {
		if _, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSpace(s), ",", ""), 64); err != nil {
			num = false
		}
	}
	if num {
		return "number"
	}
	if len(spans) == 1 && dateRe.MatchString(spans[0]) {
		return "date"
	}
	return "span"
}

var dateRe = regexp.MustCompile(`(?i)^\s*(\d{1,2}\s+)?(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?(\s+\d{1,2})?,?(\s+\d{3,4})?\s*$|^\s*\d{1,2}\s+\d{3,4}\s*$`)

// isFloatAnswer reports whether a gold answer is a number written with a
// decimal point (the answers lm-eval's DROP scoring mishandles most).
func isFloatAnswer(spans []string) bool {
	if len(spans) != 1 {
		return false
	}
	s := strings.TrimSpace(spans[0])
	_, err := strconv.ParseFloat(s, 64)
	return err == nil && strings.Contains(s, ".")
}

// dropView is the DROP investigation's figures for one task.
type dropView struct {
	Samples    int
	FloatShare float64
	// Cuts is, per column, the share of predictions each stop sequence cut
	// ("(none)": not cut).
	Cuts []labelShares
	// ByType is, per column, the mean of Metric by answer type.
	Metric string
	Types  []string
	ByType []labelShares
}

type labelShares struct {
	Label  string
	Shares []share
}

type share struct {
	Key   string
	Value float64
	N     int
}

// isDROP reports whether a task gets the DROP view: its name says DROP or
// it is scored with a DROP metric (drop.*, drop-fixed.*), as the demo is.
func isDROP(td *TaskData) bool {
	if strings.Contains(strings.ToLower(td.Name()), "drop") {
		return true
	}
	for _, m := range td.Metrics {
		if strings.HasPrefix(m, "drop.") || strings.HasPrefix(m, "drop-") {
			return true
		}
	}
	return false
}

func makeDropView(td *TaskData) *dropView {
	v := &dropView{Types: []string{"number", "date", "span"}}
	// Prefer F1 under the reference normalisation ("f1", "drop.f1"), then
	// any F1, then the first metric.
	for _, ok := range []func(string) bool{
		func(m string) bool { return m == "f1" || strings.HasSuffix(m, ".f1") && !strings.Contains(m, "fixed") },
		func(m string) bool { return strings.Contains(m, "f1") },
	} {
		for _, m := range td.Metrics {
			if v.Metric == "" && ok(m) {
				v.Metric = m
			}
		}
	}
	if v.Metric == "" && len(td.Metrics) > 0 {
		v.Metric = td.Metrics[0]
	}
	types := map[string]string{}
	floats := 0
	for _, sd := range td.Samples {
		if _, ok := types[sd.ID]; ok {
			continue
		}
		var refs [][]string
		_ = json.Unmarshal(sd.Refs, &refs)
		first := []string{}
		if len(refs) > 0 {
			first = refs[0]
		}
		types[sd.ID] = goldType(sd.Notes[dropAnswerType], first)
		if isFloatAnswer(first) {
			floats++
		}
	}
	v.Samples = len(types)
	if v.Samples > 0 {
		v.FloatShare = float64(floats) / float64(v.Samples)
	}
	for ci, c := range td.Columns {
		cut := map[string]int{}
		sum, cnt := map[string]float64{}, map[string]int{}
		n := 0
		for _, sd := range td.Samples {
			sc := sd.Under[ci]
			if sc == nil || sd.Fingerprint != c.Fingerprint {
				continue
			}
			n++
			key := "(not cut)"
			if sc.Cut >= 0 {
				key = strconv.Quote(sc.Seq)
			}
			cut[key]++
			if x, ok := sc.Value(v.Metric); ok {
				sum[types[sd.ID]] += x
				cnt[types[sd.ID]]++
			}
		}
		ls := labelShares{Label: c.Label}
		keys := make([]string, 0, len(cut))
		for k := range cut {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			ls.Shares = append(ls.Shares, share{k, float64(cut[k]) / float64(max(n, 1)), cut[k]})
		}
		v.Cuts = append(v.Cuts, ls)
		bt := labelShares{Label: c.Label}
		for _, t := range v.Types {
			mean := math.NaN()
			if cnt[t] > 0 {
				mean = sum[t] / float64(cnt[t])
			}
			bt.Shares = append(bt.Shares, share{t, mean, cnt[t]})
		}
		v.ByType = append(v.ByType, bt)
	}
	return v
}
