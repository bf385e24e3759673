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
	Setting     string `json:"setting"`
	SettingKey  string `json:"setting_key"`
	Budget      int    `json:"budget"`
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
	inv, err := st.Inventory(ctx)
	if err != nil {
		return nil, err
	}
	gens, err := st.ReadGenerationsOf(ctx, store.Filter{Fingerprints: f.Fingerprints, Tasks: f.Tasks})
	if err != nil {
		return nil, err
	}
	ds := &Dataset{}
	byTask := map[string]*TaskData{}
	type colKey struct {
		fp, key string
		budget  int
	}
	colIdx := map[string]map[colKey]int{}
	sampleIdx := map[string]map[[2]string]*SampleData{}
	budgets := map[string]map[int]bool{}
	intern := map[string]string{}
	in := func(x string) string {
		if y, ok := intern[x]; ok {
			return y
		}
		intern[x] = x
		return x
	}
	err = st.EachEntry(ctx, f, func(e store.Entry) error {
		e.Task, e.Setting, e.SettingKey, e.Metric, e.Fingerprint = in(e.Task), in(e.Setting), in(e.SettingKey), in(e.Metric), in(e.Fingerprint)
		td := byTask[e.Task]
		if td == nil {
			td = &TaskData{Task: e.Task}
			byTask[e.Task] = td
			ds.Tasks = append(ds.Tasks, td)
			colIdx[e.Task] = map[colKey]int{}
			sampleIdx[e.Task] = map[[2]string]*SampleData{}
			budgets[e.Task] = map[int]bool{}
		}
		ck := colKey{e.Fingerprint, e.SettingKey, e.Budget}
		ci, ok := colIdx[e.Task][ck]
		if !ok {
			ci = len(td.Columns)
			colIdx[e.Task][ck] = ci
			td.Columns = append(td.Columns, Column{Model: modelName(inv, e.Fingerprint), Fingerprint: e.Fingerprint,
				Setting: e.Setting, SettingKey: e.SettingKey, Budget: e.Budget})
			budgets[e.Task][e.Budget] = true
		}
		if !slices.Contains(td.Metrics, e.Metric) {
			td.Metrics = append(td.Metrics, e.Metric)
		}
		sk := [2]string{e.SampleID, e.Fingerprint}
		sd := sampleIdx[e.Task][sk]
		if sd == nil {
			sd = &SampleData{ID: e.SampleID, Model: modelName(inv, e.Fingerprint), Fingerprint: e.Fingerprint, Under: map[int]*Scored{}}
			if g, ok := gens[e.GenKey]; ok {
				sd.Text, sd.Finish, sd.Error, sd.Imported = g.Text, g.Finish, g.Error, g.Imported
			}
			sampleIdx[e.Task][sk] = sd
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
		slices.Sort(td.Metrics)
		// Columns: by model, then setting name, then budget; indices in
		// samples are remapped.
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
			if len(budgets[td.Task]) > 1 {
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
		td.Rows = summarise(td)
	}
	slices.SortFunc(ds.Tasks, func(a, b *TaskData) int { return cmp.Compare(a.Task, b.Task) })
	return ds, nil
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

func modelName(inv *store.Inventory, fp string) string {
	if m := inv.Models[fp]; m != "" {
		return m
	}
	return fp
}

// summarise makes the task's summary rows: per metric and column the mean
// with its 95% interval, and for every column after a model's first
// the paired difference against that first column.
func summarise(td *TaskData) []Row {
	var rows []Row
	for _, m := range td.Metrics {
		var first map[string]generate.SampleScore
		firstModel := ""
		for ci, c := range td.Columns {
			byID := map[string]generate.SampleScore{}
			var vals []float64
			for _, sd := range td.Samples {
				if sd.Fingerprint != c.Fingerprint {
					continue
				}
				sc := sd.Under[ci]
				if sc == nil {
					continue
				}
				v, ok := sc.Values[m]
				if !ok {
					continue
				}
				vals = append(vals, v)
				byID[sd.ID] = generate.SampleScore{SampleID: sd.ID, Value: v, Prediction: sc.Prediction}
			}
			if len(vals) == 0 {
				continue
			}
			row := Row{Task: td.Task, Metric: m, Setting: c.Label, N: len(vals), Mean: interval(stats.MeanInterval(vals, Level))}
			if first == nil || c.Model != firstModel {
				first, firstModel = byID, c.Model
			} else {
				row.Diff, row.Changed = pair(first, byID)
			}
			rows = append(rows, row)
		}
	}
	return rows
}
