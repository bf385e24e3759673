package report

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"tally/generate"
	"tally/scoring/stats"
	"tally/store"
)

// Dataset is everything stored for a selection of models, tasks and stop
// settings, read from the store alone: the figures the store-wide reports
// (HTML, lm-eval files) show, and every sample behind them.
type Dataset struct {
	Title string
	Tasks []*TaskData
}

// Column is one model's results under one stop setting and token budget.
type Column struct {
	Model       string `json:"model"`
	Fingerprint string `json:"fingerprint"`
	// DType is the dtype the model's products were computed in (native
	// runs: --dtype as resolved); "" when the runs did not say.
	DType      string `json:"dtype,omitempty"`
	Setting    string `json:"setting"`
	SettingKey string `json:"setting_key"`
	Budget     int    `json:"budget"`
	// Label names the column in tables and charts: "model setting", with
	// the budget when a task was scored under several.
	Label string `json:"label"`
}

// Seqs are the column's stop sequences (none: it never stops).
func (c Column) Seqs() []string {
	if c.SettingKey == "" {
		return nil
	}
	return strings.Split(c.SettingKey, "\x00")
}

// TaskData is one task's columns, metrics, summary rows and samples.
type TaskData struct {
	Task    string
	Columns []Column
	Metrics []string
	// Rows are the summary, one per (metric, column), as Compare makes
	// them: the first column of each model is the baseline of its paired
	// differences.
	Rows []Row
	// Samples are every (sample, model) pair that has a stored score,
	// by sample id then model.
	Samples []*SampleData
}

// SampleData is one sample as one model answered it.
type SampleData struct {
	ID          string
	Model       string
	Fingerprint string
	Prompt      string
	Refs        json.RawMessage
	Metadata    json.RawMessage
	// Text is the raw continuation (already cut when Imported).
	Text     string
	Finish   string
	Error    string
	Imported bool
	// Under maps a column index (of TaskData.Columns) to what that setting
	// made of the continuation.
	Under map[int]*Scored
}

// Scored is a sample's prediction and metric values under one column.
type Scored struct {
	Prediction string
	Values     map[string]float64
	// Cut is the byte offset in Text where the setting's stop sequence
	// matched (-1: it did not cut), and Seq the sequence.
	Cut int
	Seq string
}

// Failed reports whether the generation ended in an error.
func (s *SampleData) Failed() bool {
	return s.Finish == "error" || s.Finish == "context" || s.Error != ""
}

// Load reads a Dataset from the store: every stored score the filter
// selects, with its generation and sample. Models are named by their last
// run (imported outputs by their "imported:NAME" fingerprint).
func Load(ctx context.Context, st *store.Store, f store.Filter) (*Dataset, error) {
	return LoadWith(ctx, st, f, LoadOptions{})
}

// LoadSummary reads only what the summary rows need: each TaskData has its
// Columns, Metrics and Rows (the same as Load's) but no Samples, and no
// prompt or continuation is read, so text, Markdown and JSON reports of a
// large store hold a few numbers per score.
func LoadSummary(ctx context.Context, st *store.Store, f store.Filter) (*Dataset, error) {
	return LoadWith(ctx, st, f, LoadOptions{Summary: true})
}

// LoadOptions tune LoadWith.
type LoadOptions struct {
	// Summary reads what LoadSummary reads (no samples).
	Summary bool
	// Fix, when set, sees every stored score before it is used and
	// returns it, with its Value changed to replace a stale score by its
	// recomputation, or false to drop it.
	Fix func(store.Entry) (store.Entry, bool, error)
}

// LoadWith is Load or LoadSummary with options.
func LoadWith(ctx context.Context, st *store.Store, f store.Filter, opt LoadOptions) (*Dataset, error) {
	return load(ctx, st, f, !opt.Summary, opt.Fix)
}

// series is one (column, metric)'s stored scores in the order read, in
// chunks (so that a million appends copy nothing).
type series struct {
	chunks [][]point
	n      int
}

// point is one stored score: the sample (an index into its task's ids),
// the value and the prediction.
type point struct {
	idx  int32
	val  float64
	pred string
}

const chunkBits = 12

func (s *series) add(p point) {
	if s.n&(1<<chunkBits-1) == 0 {
		s.chunks = append(s.chunks, make([]point, 0, 1<<chunkBits))
	}
	last := len(s.chunks) - 1
	s.chunks[last] = append(s.chunks[last], p)
	s.n++
}

func (s *series) at(k int32) *point { return &s.chunks[k>>chunkBits][k&(1<<chunkBits-1)] }

// taskLoad is what load accumulates for one task.
type taskLoad struct {
	td      *TaskData
	colIdx  map[colKey]int
	ids     []string
	idIdx   map[string]int32
	metrics map[string]int
	series  map[[2]int]*series // by (column, metric) index
	budgets map[int]bool
	samples map[[2]string]*SampleData
}

// sampleIndex returns the index of a sample id in the task's ids, adding
// it when new.
func (tl *taskLoad) sampleIndex(id string) int32 {
	i, ok := tl.idIdx[id]
	if !ok {
		i = int32(len(tl.ids))
		tl.idIdx[id] = i
		tl.ids = append(tl.ids, id)
	}
	return i
}

type colKey struct {
	fp, key string
	budget  int
}

func load(ctx context.Context, st *store.Store, f store.Filter, full bool, fix func(store.Entry) (store.Entry, bool, error)) (*Dataset, error) {
	names, dtypes, err := modelNames(ctx, st)
	if err != nil {
		return nil, err
	}
	var gens map[string]store.Generation
	if full {
		if gens, err = st.ReadGenerationsOf(ctx, store.Filter{Fingerprints: f.Fingerprints, Tasks: f.Tasks}); err != nil {
			return nil, err
		}
	}
	ds := &Dataset{}
	byTask := map[string]*taskLoad{}
	var tl *taskLoad
	// slots caches, per fingerprint and store cell, the column, metric and
	// series a score goes to.
	type slot struct {
		tl     *taskLoad
		ci, mi int
		sr     *series
	}
	slotsOf := map[string][]*slot{}
	var slots []*slot
	lastFP := ""
	lastID, lastIdx := "", int32(-1)
	err = st.EachEntry(ctx, f, func(e store.Entry) error {
		if fix != nil {
			var keep bool
			if e, keep, err = fix(e); err != nil || !keep {
				return err
			}
		}
		if e.Fingerprint != lastFP || slots == nil {
			slots, lastFP = slotsOf[e.Fingerprint], e.Fingerprint
		}
		if e.Cell < len(slots) && slots[e.Cell] != nil {
			sl := slots[e.Cell]
			if !full {
				if sl.tl != tl {
					tl, lastIdx = sl.tl, -1
				}
				if e.SampleID != lastID || lastIdx < 0 {
					lastID, lastIdx = e.SampleID, tl.sampleIndex(e.SampleID)
				}
				sl.sr.add(point{lastIdx, e.Value, e.Prediction})
				return nil
			}
		}
		if tl == nil || tl.td.Task != e.Task {
			lastIdx = -1
			if tl = byTask[e.Task]; tl == nil {
				tl = &taskLoad{td: &TaskData{Task: e.Task}, colIdx: map[colKey]int{}, idIdx: map[string]int32{},
					metrics: map[string]int{}, series: map[[2]int]*series{}, budgets: map[int]bool{}, samples: map[[2]string]*SampleData{}}
				byTask[e.Task] = tl
				ds.Tasks = append(ds.Tasks, tl.td)
			}
		}
		td := tl.td
		ck := colKey{e.Fingerprint, e.SettingKey, e.Budget}
		ci, ok := tl.colIdx[ck]
		if !ok {
			ci = len(td.Columns)
			tl.colIdx[ck] = ci
			td.Columns = append(td.Columns, Column{Model: modelName(names, e.Fingerprint), Fingerprint: e.Fingerprint,
				DType: dtypes[e.Fingerprint], Setting: e.Setting, SettingKey: e.SettingKey, Budget: e.Budget})
			tl.budgets[e.Budget] = true
		}
		mi, ok := tl.metrics[e.Metric]
		if !ok {
			mi = len(td.Metrics)
			tl.metrics[e.Metric] = mi
			td.Metrics = append(td.Metrics, e.Metric)
		}
		if e.SampleID != lastID || lastIdx < 0 {
			lastID, lastIdx = e.SampleID, tl.sampleIndex(e.SampleID)
		}
		id := lastIdx
		sr := tl.series[[2]int{ci, mi}]
		if sr == nil {
			sr = &series{}
			tl.series[[2]int{ci, mi}] = sr
		}
		for len(slots) <= e.Cell {
			slots = append(slots, nil)
		}
		if slots[e.Cell] == nil {
			slots[e.Cell] = &slot{tl, ci, mi, sr}
			slotsOf[e.Fingerprint] = slots
		}
		sr.add(point{id, e.Value, e.Prediction})
		if !full {
			return nil
		}
		sk := [2]string{e.SampleID, e.Fingerprint}
		sd := tl.samples[sk]
		if sd == nil {
			sd = &SampleData{ID: tl.ids[id], Model: modelName(names, e.Fingerprint), Fingerprint: e.Fingerprint, Under: map[int]*Scored{}}
			if g, ok := gens[e.GenKey]; ok {
				sd.Text, sd.Finish, sd.Error, sd.Imported = g.Text, g.Finish, g.Error, g.Imported
			}
			tl.samples[sk] = sd
			td.Samples = append(td.Samples, sd)
		}
		sc := sd.Under[ci]
		if sc == nil {
			sc = &Scored{Prediction: e.Prediction, Values: map[string]float64{}, Cut: -1}
			if m, ok := generate.FindStop(sd.Text, td.Columns[ci].Seqs()); ok && !sd.Imported {
				sc.Cut, sc.Seq = m.Offset, m.Seq
			}
			sd.Under[ci] = sc
		}
		sc.Values[e.Metric] = e.Value
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, td := range ds.Tasks {
		tl := byTask[td.Task]
		if full {
			samples, err := st.Samples(ctx, td.Task)
			if err != nil {
				return nil, err
			}
			for _, sd := range td.Samples {
				if s, ok := samples[sd.ID]; ok {
					sd.Prompt, sd.Refs, sd.Metadata = s.Prompt, s.Refs, s.Metadata
				}
			}
			slices.SortFunc(td.Samples, func(a, b *SampleData) int {
				return cmp.Or(compareIDs(a.ID, b.ID), cmp.Compare(a.Model, b.Model))
			})
		}
		// Metrics sorted; series re-keyed by the sorted index.
		oldMetrics := td.Metrics
		td.Metrics = slices.Clone(oldMetrics)
		slices.Sort(td.Metrics)
		metricNew := make([]int, len(oldMetrics))
		for oi, m := range oldMetrics {
			metricNew[oi], _ = slices.BinarySearch(td.Metrics, m)
		}
		// Columns: by model, then setting name, then budget; indices in
		// samples and series are remapped.
		order := make([]int, len(td.Columns))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int {
			x, y := td.Columns[a], td.Columns[b]
			return cmp.Or(cmp.Compare(x.Model, y.Model), cmp.Compare(x.Setting, y.Setting), cmp.Compare(x.Budget, y.Budget))
		})
		newIdx := make([]int, len(order))
		cols := make([]Column, len(order))
		for ni, oi := range order {
			newIdx[oi] = ni
			cols[ni] = td.Columns[oi]
			cols[ni].Label = cols[ni].Model + " " + cols[ni].Setting
			if len(tl.budgets) > 1 {
				cols[ni].Label += fmt.Sprintf(" @%d", cols[ni].Budget)
			}
		}
		td.Columns = cols
		for _, sd := range td.Samples {
			under := make(map[int]*Scored, len(sd.Under))
			for oi, sc := range sd.Under {
				under[newIdx[oi]] = sc
			}
			sd.Under = under
		}
		ser := make(map[[2]int]*series, len(tl.series))
		for k, sr := range tl.series {
			ser[[2]int{newIdx[k[0]], metricNew[k[1]]}] = sr
		}
		td.Rows = summarise(td, tl.ids, ser)
	}
	slices.SortFunc(ds.Tasks, func(a, b *TaskData) int { return cmp.Compare(a.Task, b.Task) })
	return ds, nil
}

// modelNames maps each fingerprint to the model name its newest run used,
// and to the dtype that run's products were computed in (its config's
// "dtype": native runs). A name that fingerprints of several dtypes share
// (one model run at several --dtype) becomes "NAME (DTYPE)" for each, so
// that their columns and lm-eval folders stay apart.
func modelNames(ctx context.Context, st *store.Store) (names, dtypes map[string]string, err error) {
	runs, err := st.Runs(ctx)
	if err != nil {
		return nil, nil, err
	}
	names, dtypes = map[string]string{}, map[string]string{}
	for _, r := range runs { // newest first
		if _, ok := names[r.Fingerprint]; !ok {
			names[r.Fingerprint] = r.Model
			var cfg struct {
				DType string `json:"dtype"`
			}
			if json.Unmarshal(r.Config, &cfg) == nil && cfg.DType != "" {
				dtypes[r.Fingerprint] = cfg.DType
			}
		}
	}
	kinds := map[string]map[string]bool{} // name → its fingerprints' dtypes
	for fp, n := range names {
		if kinds[n] == nil {
			kinds[n] = map[string]bool{}
		}
		kinds[n][dtypes[fp]] = true
	}
	for fp, n := range names {
		if len(kinds[n]) > 1 && dtypes[fp] != "" {
			names[fp] = n + " (" + dtypes[fp] + ")"
		}
	}
	return names, dtypes, nil
}

// compareIDs orders sample ids numerically when both are numbers.
func compareIDs(a, b string) int {
	x, ex := strconv.Atoi(a)
	y, ey := strconv.Atoi(b)
	if ex == nil && ey == nil {
		return cmp.Compare(x, y)
	}
	return cmp.Compare(a, b)
}

func modelName(names map[string]string, fp string) string {
	if m := names[fp]; m != "" {
		return m
	}
	return fp
}

// summarise makes the task's summary rows: per metric and column the mean
// with its 95% interval, and for every column after a model's first the
// paired difference against that first column. A column's mean sums its
// samples in sample order (ids numerically when they are numbers, as
// SampleData are sorted); pairs go in the order of their ids as strings.
func summarise(td *TaskData, ids []string, ser map[[2]int]*series) []Row {
	byNum := make([]int32, len(ids))
	byStr := make([]int32, len(ids))
	for i := range ids {
		byNum[i], byStr[i] = int32(i), int32(i)
	}
	nums := make([]int, len(ids))
	isNum := make([]bool, len(ids))
	for i, id := range ids {
		n, err := strconv.Atoi(id)
		nums[i], isNum[i] = n, err == nil
	}
	slices.SortStableFunc(byNum, func(a, b int32) int {
		if isNum[a] && isNum[b] {
			return cmp.Compare(nums[a], nums[b])
		}
		return cmp.Compare(ids[a], ids[b])
	})
	slices.SortFunc(byStr, func(a, b int32) int { return cmp.Compare(ids[a], ids[b]) })
	// at returns, per sample index, the series position holding its
	// value (the last one read), or -1.
	at := func(sr *series) []int32 {
		pos := make([]int32, len(ids))
		for i := range pos {
			pos[i] = -1
		}
		k := int32(0)
		for _, ch := range sr.chunks {
			for _, p := range ch {
				pos[p.idx] = k
				k++
			}
		}
		return pos
	}
	var rows []Row
	for mi, m := range td.Metrics {
		var first *series
		var firstAt []int32
		firstModel := ""
		for ci, c := range td.Columns {
			sr := ser[[2]int{ci, mi}]
			if sr == nil || sr.n == 0 {
				continue
			}
			pos := at(sr)
			vals := make([]float64, 0, sr.n)
			for _, id := range byNum {
				if k := pos[id]; k >= 0 {
					vals = append(vals, sr.at(k).val)
				}
			}
			row := Row{Task: td.Task, Metric: m, Setting: c.Label, N: len(vals), Mean: interval(stats.MeanInterval(vals, Level))}
			if first == nil || c.Model != firstModel {
				first, firstAt, firstModel = sr, pos, c.Model
			} else {
				a, b := make([]float64, 0, sr.n), make([]float64, 0, sr.n)
				changed := 0
				for _, id := range byStr {
					k, j := firstAt[id], pos[id]
					if k < 0 || j < 0 {
						continue
					}
					x, y := first.at(k).val, sr.at(j).val
					a, b = append(a, x), append(b, y)
					if x != y {
						changed++
					}
				}
				if changed > 0 {
					row.Changed = make([]Changed, 0, changed)
					for _, id := range byStr {
						k, j := firstAt[id], pos[id]
						if k < 0 || j < 0 {
							continue
						}
						if x, y := first.at(k), sr.at(j); x.val != y.val {
							row.Changed = append(row.Changed, Changed{ids[id], generate.Mean(x.val), generate.Mean(y.val), x.pred, y.pred})
						}
					}
				}
				row.Diff = pairedInterval(a, b)
			}
			rows = append(rows, row)
		}
	}
	return rows
}
