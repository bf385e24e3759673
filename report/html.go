package report

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode/utf16"

	"github.com/klauspost/compress/gzip"

	"tally/scoring/stats"
	"tally/store"
)

// The store-wide HTML page is one self-contained file (inline SVG charts,
// inline script, no network): per task the means and paired differences,
// Counting-Stars heatmaps and the DROP view, then a browser over every
// (sample, model) pair. The browser's data is not inlined whole: an index
// (task, id, model, failed and changed flags of every item) is decoded
// when the page opens, and the items themselves sit in chunks of
// chunkItems, each gzip+base64 in a script element of its own, decoded
// only when a page of the browser shows one of its items (or a text search
// needs them all). The page is built task by task (LoadEach), so that a
// large store is never held whole.

// chunkItems is the number of items per data chunk.
const chunkItems = 100

// browserIndex is the JSON of the index the page decodes first.
type browserIndex struct {
	Tasks   []string            `json:"tasks"`
	Columns map[string][]string `json:"cols"`
	Metrics map[string][]string `json:"metrics"`
	Models  []string            `json:"models"`
	// The items, one entry each in these parallel arrays: the task (an
	// index into Tasks), the sample id, the model (an index into Models),
	// flags (bit 0: the sample failed), changed (bit i set when metric i
	// of the task differs between the item's settings), and where the
	// item is (chunk, position in it).
	Task     []int32  `json:"t"`
	ID       []string `json:"id"`
	Model    []int32  `json:"m"`
	Flags    []int32  `json:"f"`
	Changed  []int32  `json:"ch"`
	Chunk    []int32  `json:"c"`
	Position []int32  `json:"p"`
	Chunks   int      `json:"chunks"`
}

// browserItem is one (sample, model) of the browser, in a chunk.
type browserItem struct {
	Prompt int           `json:"p"` // index into the chunk's prompts
	Gold   []string      `json:"g"` // gold answers as text
	Text   string        `json:"x"`
	Finish string        `json:"f"`
	Error  string        `json:"e,omitempty"`
	Failed string        `json:"fr,omitempty"`
	Cut    bool          `json:"imp,omitempty"` // imported: text already cut
	Under  []browserEval `json:"u"`
}

type browserEval struct {
	Col        int        `json:"c"`
	Cut        int        `json:"cut"`
	Seq        string     `json:"seq,omitempty"`
	Prediction string     `json:"pred"`
	Values     evalValues `json:"v"`
}

type browserChunk struct {
	Prompts []string      `json:"p"`
	Items   []browserItem `json:"i"`
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
	N, Failed, Changed           int
}

type htmlHeat struct {
	Label string
	N     int
	SVG   template.HTML
}

type htmlTask struct {
	Task    string
	Samples int
	Failed  []string
	Metrics []htmlMetric
	Heat    []htmlHeat
	Drop    *dropView
}

// pageBuilder assembles the page task by task: sections, the browser's
// index, and its data chunks, encoded (JSON, gzip, base64) on every core
// as they fill.
type pageBuilder struct {
	title   string
	tasks   []htmlTask
	samples int
	index   browserIndex
	models  map[string]int
	cur     browserChunk
	prompts map[string]int
	// queued is the number of chunks queued (that of the chunk being
	// filled).
	queued int

	mu     sync.Mutex
	chunks [][]byte // gzip, until spilled
	// spill holds the chunks written so far, in order (a temporary file:
	// the page's data need not be held until the page is written);
	// spans are their offsets and lengths in it.
	spill   *os.File
	spans   [][2]int64
	spilled int
	err     error
	wg      sync.WaitGroup
	sem     chan struct{}
}

func newPageBuilder(title string) *pageBuilder {
	if title == "" {
		title = "tally report"
	}
	return &pageBuilder{title: title, models: map[string]int{}, prompts: map[string]int{},
		index: browserIndex{Columns: map[string][]string{}, Metrics: map[string][]string{}},
		sem:   make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))}
}

// addTask adds a task's section and its samples to the browser.
func (b *pageBuilder) addTask(td *TaskData) {
	b.tasks = append(b.tasks, taskSection(td))
	b.samples += len(td.Samples)
	ti := len(b.index.Tasks)
	b.index.Tasks = append(b.index.Tasks, td.label())
	labels := make([]string, len(td.Columns))
	for i, c := range td.Columns {
		labels[i] = c.Label
	}
	b.index.Columns[td.label()], b.index.Metrics[td.label()] = labels, td.Metrics
	if x, n := &b.index, len(td.Samples); cap(x.ID)-len(x.ID) < n {
		// Room for the task's items, and as much again, at once.
		n += len(x.ID)
		x.Task, x.ID, x.Model, x.Flags = slices.Grow(x.Task, n), slices.Grow(x.ID, n), slices.Grow(x.Model, n), slices.Grow(x.Flags, n)
		x.Changed, x.Chunk, x.Position = slices.Grow(x.Changed, n), slices.Grow(x.Chunk, n), slices.Grow(x.Position, n)
	}
	for _, sd := range td.Samples {
		model := ModelLabel(sd.Model, sd.Chat)
		mi, ok := b.models[model]
		if !ok {
			mi = len(b.index.Models)
			b.models[model] = mi
			b.index.Models = append(b.index.Models, model)
		}
		pi, ok := b.prompts[sd.Prompt]
		if !ok {
			pi = len(b.cur.Prompts)
			b.prompts[sd.Prompt] = pi
			b.cur.Prompts = append(b.cur.Prompts, sd.Prompt)
		}
		it := browserItem{Prompt: pi, Gold: goldAnswers(sd.Refs), Text: sd.Text, Finish: sd.Finish, Error: sd.Error, Failed: sd.FailReason,
			Cut: sd.Imported}
		changed := 0
		for mi := range td.Metrics {
			first, seen := 0.0, false
			for _, sc := range sd.Under {
				if x := sc.values[mi]; x.ok {
					v := x.v
					if seen && v != first && mi < 31 {
						changed |= 1 << mi
						break
					}
					first, seen = v, true
				}
			}
		}
		if len(sd.Under) > 0 {
			it.Under = make([]browserEval, 0, len(sd.Under))
		}
		for ci := range td.Columns {
			sc := sd.Under[ci]
			if sc == nil {
				continue
			}
			it.Under = append(it.Under, browserEval{Col: ci, Cut: utf16Offset(sd.Text, sc.Cut), Seq: sc.Seq, Prediction: sc.Prediction, Values: finiteValues(sc)})
		}
		flags := 0
		if sd.Failed() {
			flags |= 1
		}
		x := &b.index
		x.Task, x.ID, x.Model, x.Flags = append(x.Task, int32(ti)), append(x.ID, sd.ID), append(x.Model, int32(mi)), append(x.Flags, int32(flags))
		x.Changed, x.Chunk, x.Position = append(x.Changed, int32(changed)), append(x.Chunk, int32(b.queued)), append(x.Position, int32(len(b.cur.Items)))
		b.cur.Items = append(b.cur.Items, it)
		if len(b.cur.Items) == chunkItems {
			b.flush()
		}
	}
}

// flush queues the chunk being filled for encoding.
func (b *pageBuilder) flush() {
	if len(b.cur.Items) == 0 {
		return
	}
	c := b.cur
	b.cur, b.prompts = browserChunk{Items: make([]browserItem, 0, chunkItems)}, map[string]int{}
	n := b.queued
	b.queued++
	b.mu.Lock()
	b.chunks = append(b.chunks, nil)
	b.mu.Unlock()
	b.sem <- struct{}{}
	b.wg.Add(1)
	go func() {
		defer func() { <-b.sem; b.wg.Done() }()
		z, err := gzipChunk(&c)
		b.mu.Lock()
		defer b.mu.Unlock()
		b.chunks[n] = z
		if err == nil {
			err = b.spillReady()
		}
		if err != nil && b.err == nil {
			b.err = err
		}
	}()
}

// spillReady writes the chunks that are ready, in order, to the spill
// file and lets them go. The caller holds mu.
func (b *pageBuilder) spillReady() error {
	if b.spill == nil {
		f, err := os.CreateTemp("", "tally-report-*.data")
		if err != nil {
			return fmt.Errorf("write HTML report: %w", err)
		}
		os.Remove(f.Name()) // gone when closed
		b.spill = f
	}
	for b.spilled < len(b.chunks) && b.chunks[b.spilled] != nil {
		z := b.chunks[b.spilled]
		off, _ := b.spill.Seek(0, io.SeekCurrent)
		if _, err := b.spill.Write(z); err != nil {
			return fmt.Errorf("write HTML report: %w", err)
		}
		b.spans = append(b.spans, [2]int64{off, int64(len(z))})
		b.chunks[b.spilled] = nil
		b.spilled++
	}
	return nil
}

// pack gzips and base64-encodes a value's JSON: the page decodes it with
// the browser's DecompressionStream. Base64 holds no character that could
// end the script element, whatever the outputs contain.
func pack(v any) (string, error) {
	z, err := gzipJSON(v)
	return base64.StdEncoding.EncodeToString(z), err
}

// gzipChunk is a chunk's JSON (appendChunkJSON), gzipped.
func gzipChunk(c *browserChunk) ([]byte, error) {
	bufs := chunkBuffers.Get().(*chunkBuffer)
	defer chunkBuffers.Put(bufs)
	bufs.js = appendChunkJSON(bufs.js[:0], c)
	bufs.z.Reset()
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&bufs.z)
	if _, err := zw.Write(bufs.js); err != nil {
		return nil, fmt.Errorf("encode samples: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return bytes.Clone(bufs.z.Bytes()), nil
}

// chunkBuffer is the room gzipChunk encodes a chunk in: its JSON and the
// gzip of it.
type chunkBuffer struct {
	js []byte
	z  bytes.Buffer
}

// chunkBuffers are reused: a page's chunks are encoded in turn on every
// core, each in a megabyte or so (2.4 million scores: half a gigabyte
// allocated, and collected, when each chunk had its own).
var chunkBuffers = sync.Pool{New: func() any { return new(chunkBuffer) }}

// gzipJSON is a value's JSON, gzipped.
func gzipJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&buf)
	if err := json.NewEncoder(zw).Encode(v); err != nil {
		return nil, fmt.Errorf("encode samples: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return bytes.Clone(buf.Bytes()), nil // without the buffer's spare room
}

// gzipWriters are reused: each holds about a megabyte of compression
// state, which a page of thousands of chunks would otherwise allocate
// thousands of times. klauspost/compress's fastest level, where the
// standard library's took 1.7 times the CPU for a tenth more bytes (issue
// 23's scale store: 0.21 against 0.36 CPU s, a page of 18.6 MB against
// 20.7 MB); the page's DecompressionStream reads any gzip.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return zw
}}

// write writes the page.
func (b *pageBuilder) write(w io.Writer) error {
	b.flush()
	b.wg.Wait()
	if b.err != nil {
		return b.err
	}
	b.index.Chunks = len(b.spans)
	index, err := pack(b.index)
	if err != nil {
		return err
	}
	if b.spill != nil {
		defer b.spill.Close()
	}
	// Base64 holds none of < > & ' ": the data is written as it is, each
	// chunk read back and encoded as the template reaches it.
	chunks := make([]spilledChunk, len(b.spans))
	for i, sp := range b.spans {
		chunks[i] = spilledChunk{b.spill, sp[0], sp[1]}
	}
	data := struct {
		Title   string
		Tasks   []htmlTask
		Samples int
		Index   template.HTML
		Chunks  []spilledChunk
	}{b.title, b.tasks, b.samples, template.HTML(index), chunks}
	if err := htmlReport.Execute(w, data); err != nil {
		return fmt.Errorf("write HTML report: %w", err)
	}
	return nil
}

// spilledChunk is a chunk's gzip data in the spill file, which the page
// template writes as base64 (which holds none of < > & ' ").
type spilledChunk struct {
	f        *os.File
	off, len int64
}

// HTML reads the chunk back and returns it as base64.
func (c spilledChunk) HTML() (template.HTML, error) {
	z := make([]byte, c.len)
	if _, err := c.f.ReadAt(z, c.off); err != nil {
		return "", fmt.Errorf("write HTML report: read back samples: %w", err)
	}
	return template.HTML(base64.StdEncoding.EncodeToString(z)), nil
}

// WriteHTML writes the store-wide HTML report of a fully loaded Dataset.
func WriteHTML(w io.Writer, ds *Dataset) error {
	b := newPageBuilder(ds.Title)
	for _, td := range ds.Tasks {
		b.addTask(td)
	}
	return b.write(w)
}

// WriteHTMLStore writes the store-wide HTML report of what the filter
// selects, reading the store one task at a time (LoadEach), and returns
// the Dataset's figures (no samples).
func WriteHTMLStore(ctx context.Context, w io.Writer, st *store.Store, f store.Filter, title string, opt LoadOptions) (*Dataset, error) {
	b := newPageBuilder(title)
	opt.NoDataRows = true // the page shows no data row
	ds, err := LoadEach(ctx, st, f, opt, func(td *TaskData) error {
		b.addTask(td)
		return nil
	})
	if err != nil {
		return nil, err
	}
	ds.Title = b.title
	return ds, b.write(w)
}

// taskSection is a task's part of the page above the browser: per metric
// the charts and the table, heatmaps, the DROP view and the failed samples.
func taskSection(td *TaskData) htmlTask {
	ht := htmlTask{Task: td.label(), Samples: len(td.Samples), Failed: failedList(td.Rows)}
	for _, m := range td.Metrics {
		if !slices.ContainsFunc(td.Rows, func(r Row) bool { return r.Metric == m }) {
			continue // no figures of its own (a corpus metric's statistic)
		}
		hm := htmlMetric{Metric: m}
		var labels, dlabels []string
		var ivs, divs []stats.Interval
		for _, r := range td.Rows {
			if r.Metric != m {
				continue
			}
			mean, ci, diff, dci := r.cells()
			hm.Rows = append(hm.Rows, htmlRow{r.Setting, mean, ci, diff, dci, r.N, r.Failed, len(r.Changed)})
			labels, ivs = append(labels, r.Setting), append(ivs, r.Mean.stats())
			if r.Diff != nil {
				dlabels, divs = append(dlabels, r.Setting), append(divs, r.Diff.stats())
			}
		}
		lo, hi := metricRange(td, m)
		hm.Means = intervalChart("means", labels, ivs, axis{lo, hi}, m+": mean and 95% interval")
		if len(divs) > 0 {
			hm.Diffs = intervalChart("diffs", dlabels, divs, axis{-(hi - lo), hi - lo}, m+": difference against the model's first setting, with 95% interval")
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
	return ht
}

// metricRange is the range a metric's values can take, as far as the
// task shows: [0, 1] when every value lies in it (a proportion, a score
// out of 1), else from the least to the largest value (and 0).
func metricRange(td *TaskData, metric string) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, sd := range td.Samples {
		for _, sc := range sd.Under {
			if v, ok := sc.Value(metric); ok && finite(v) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	for _, r := range td.Rows {
		if r.Metric == metric && finite(float64(r.Mean.Estimate)) {
			lo, hi = math.Min(lo, float64(r.Mean.Estimate)), math.Max(hi, float64(r.Mean.Estimate))
		}
	}
	switch {
	case math.IsInf(lo, 1):
		return 0, 1
	case lo >= 0 && hi <= 1:
		return 0, 1
	}
	lo, hi = math.Min(lo, 0), math.Max(hi, 0)
	if hi == lo {
		hi = lo + 1
	}
	return lo, hi
}

// goldAnswers are a sample's references as the text of each gold answer:
// a string, each string of a list, each answer of DROP's list of span
// lists (its spans joined by " | "), else the JSON.
func goldAnswers(refs json.RawMessage) []string {
	refs = bytes.TrimSpace(refs)
	if len(refs) > 1 && refs[0] == '[' {
		// Most references are a list of strings or of span lists: try
		// the one the second character says first.
		if bytes.HasPrefix(bytes.TrimSpace(refs[1:]), []byte("[")) {
			var spans [][]string
			if json.Unmarshal(refs, &spans) == nil {
				out := make([]string, len(spans))
				for i, sp := range spans {
					out[i] = strings.Join(sp, " | ")
				}
				return out
			}
		}
	}
	var s string
	if json.Unmarshal(refs, &s) == nil {
		return []string{s}
	}
	var list []string
	if json.Unmarshal(refs, &list) == nil {
		return list
	}
	var spans [][]string
	if json.Unmarshal(refs, &spans) == nil {
		out := make([]string, len(spans))
		for i, sp := range spans {
			out[i] = strings.Join(sp, " | ")
		}
		return out
	}
	if len(refs) == 0 || string(refs) == "null" {
		return nil
	}
	return []string{string(refs)}
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
