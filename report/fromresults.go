package report

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"tally/generate"
	"tally/store"
	"tally/tasks/variant"
)

// RunResults is one model's part of a comparison made from results: the
// model, its plan (the samples, their generation keys and the model's
// fingerprint; nil when only figures are wanted) and its current results
// (generate.CurrentResults).
type RunResults struct {
	Model string
	Chat  bool
	// DType is the dtype the model's products were computed in (native
	// runs), "" when not known.
	DType   string
	Plan    *generate.Plan
	Results generate.Results
}

// FromOptions tune FromResults.
type FromOptions struct {
	// Full reads the generations behind the results, so that the Dataset
	// holds every sample (as Load does), for the HTML page and lm-eval
	// files.
	Full bool
	// ModelLabels prefixes every column's label with its model (always
	// done when there are several runs).
	ModelLabels bool
	// Totals is, per task, the number of samples in its data before any
	// --limit or --samples; Limit is the --limit given (0: none).
	Totals map[string]int
	Limit  int
	// Info is, per task, what its configuration says of itself.
	Info map[string]*TaskInfo
	// Variants are the jobs' task variants, by key (they label the
	// tasks).
	Variants map[string]variant.Record
}

// FromResults makes the Dataset of one or more models' results over the
// same jobs: per job, one column per model and stop setting at the job's
// budget, in that order, summarised by the same function as Load (the
// first model's columns paired with its first setting, every other
// model's with the first model's at the same setting). Failed samples are
// counted as the results list them.
func FromResults(ctx context.Context, st *store.Store, jobs []*generate.Job, runs []RunResults, opt FromOptions) (*Dataset, error) {
	labels := opt.ModelLabels || len(runs) > 1
	ds := &Dataset{}
	tds := labelled(jobs, opt)
	for ji, j := range jobs {
		tl := newTaskLoad(j.Task)
		tl.td = tds[ji]
		td := tl.td
		metrics := map[string]bool{}
		for _, r := range runs {
			for _, m := range r.Results.Metrics(j.Task) {
				metrics[m] = true
			}
		}
		for _, m := range slices.Sorted(func(yield func(string) bool) {
			for m := range metrics {
				if !yield(m) {
					return
				}
			}
		}) {
			tl.metric(m)
		}
		var base []int
		for ri, r := range runs {
			fp := r.fingerprint()
			for si, set := range j.Settings {
				label := set.String()
				if labels {
					label = ModelLabel(r.Model, r.Chat) + " " + label
				}
				ci := len(td.Columns)
				td.Columns = append(td.Columns, Column{Model: r.Model, Fingerprint: fp, Chat: r.Chat, DType: r.DType, Setting: set.Name,
					SettingKey: set.Key(), Budget: j.MaxTokens, Label: label})
				switch {
				case ri == 0 && si == 0:
					base = append(base, -1)
				case ri == 0:
					base = append(base, 0)
				default:
					base = append(base, si)
				}
				for mi, m := range td.Metrics {
					for _, x := range r.Results[j.Task][set.Name][m] {
						idx := tl.sampleIndex(x.SampleID)
						tl.seriesOf(ci, mi).addScore(idx, -1, tl.pred(x.Prediction), x.Value)
						if x.Failed != "" {
							if tl.fails[ci] == nil {
								tl.fails[ci] = map[int32]string{}
							}
							tl.fails[ci][idx] = x.Failed
						}
					}
				}
			}
		}
		if opt.Full {
			if err := addResultSamples(ctx, st, j, runs, tl); err != nil {
				return nil, err
			}
		}
		td.Rows = summarise(figures{td: td, ids: tl.ids, preds: tl.preds, ser: tl.series, fails: tl.fails, base: base})
		ds.Tasks = append(ds.Tasks, td)
	}
	return ds, nil
}

// labelled is the dataset of FromResults' jobs, before any is read: each
// task with its label and variant, so that its rows carry them.
func labelled(jobs []*generate.Job, opt FromOptions) []*TaskData {
	tds := make([]*TaskData, len(jobs))
	for i, j := range jobs {
		tds[i] = &TaskData{Task: j.Task, Total: opt.Totals[j.Task], Limit: opt.Limit, Info: opt.Info[j.Task]}
	}
	labelTasks(tds, opt.Variants)
	return tds
}

func (r RunResults) fingerprint() string {
	if r.Plan == nil {
		return ""
	}
	return r.Plan.Fingerprint
}

// addResultSamples reads the generations behind a job's results and adds
// a SampleData per (sample, run) that has results, with what each setting
// made of it.
func addResultSamples(ctx context.Context, st *store.Store, j *generate.Job, runs []RunResults, tl *taskLoad) error {
	td := tl.td
	slab := scoredSlab{metrics: td.Metrics}
	for ri, r := range runs {
		if r.Plan == nil {
			continue
		}
		var items []*generate.Item
		var keys []string
		for _, it := range r.Plan.Items {
			if it.Job == j {
				items, keys = append(items, it), append(keys, it.Key)
			}
		}
		gens, err := st.Generations(ctx, r.Plan.Fingerprint, keys)
		if err != nil {
			return fmt.Errorf("read generations of %s: %w", j.Task, err)
		}
		// per column of this run: sample id -> what the results say.
		type got struct {
			pred, failed string
			vals         map[string]float64
		}
		byCol := make([]map[string]*got, len(j.Settings))
		for si, set := range j.Settings {
			byCol[si] = map[string]*got{}
			for m, xs := range r.Results[j.Task][set.Name] {
				for _, x := range xs {
					g := byCol[si][x.SampleID]
					if g == nil {
						g = &got{pred: x.Prediction, failed: x.Failed, vals: map[string]float64{}}
						byCol[si][x.SampleID] = g
					}
					g.vals[m] = x.Value
				}
			}
		}
		for _, it := range items {
			g, ok := gens[it.Key]
			if !ok {
				continue
			}
			s := it.Sample
			meta, _ := json.Marshal(s.Metadata)
			sd := &SampleData{ID: s.ID, Model: r.Model, Chat: r.Chat, Fingerprint: r.Plan.Fingerprint, Prompt: s.Prompt, Refs: s.References, Metadata: meta,
				Doc: s.Doc, Target: s.Target, Index: -1, Text: g.Text, Finish: g.Finish, Error: g.Error, Imported: g.Imported,
				PromptTokens: g.PromptTokens, FailReason: generate.FailReason(&g), Under: map[int]*Scored{}}
			if s.Index != nil {
				sd.Index = *s.Index
			}
			for si := range j.Settings {
				x := byCol[si][s.ID]
				if x == nil {
					continue
				}
				ci := ri*len(j.Settings) + si
				sc := slab.next(x.pred, x.failed)
				for mi, m := range td.Metrics {
					if v, ok := x.vals[m]; ok {
						sc.set(mi, v)
					}
				}
				if m, ok := generate.FindStop(sd.Text, td.Columns[ci].Seqs()); ok && !sd.Imported && x.failed == "" {
					sc.Cut, sc.Seq = m.Offset, m.Seq
				}
				sd.Under[ci] = sc
			}
			if len(sd.Under) > 0 {
				td.Samples = append(td.Samples, sd)
			}
		}
	}
	slices.SortStableFunc(td.Samples, func(a, b *SampleData) int {
		return cmp.Or(compareIDs(a.ID, b.ID), cmp.Compare(a.Model, b.Model))
	})
	return nil
}
