package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"tally/datasets"
	"tally/generate"
	"tally/store"
	"tally/tasks"
)

// rescorer keeps the store-only report honest: every stored score whose
// digest is not the one its task's current scoring (metrics and their
// versions, scoring fields), its stored sample and its prediction give is
// stale, and is recomputed in memory from the stored prediction before it
// is shown (the store is never written; `tally rescore` stores them).
type rescorer struct {
	st *store.Store
	// jobs is the current scoring of each task, as the newest run that
	// named the task configured it.
	jobs map[string]*generate.Job
	// samples are each task's stored samples, read when first needed;
	// lastSample is the one last decoded (scores come grouped by sample).
	samples    map[string]map[string]store.Sample
	lastSample *datasets.Sample
	// last is the score key last checked, with what it gave.
	last       store.ScoreKey
	lastStale  bool
	lastValues map[string]float64
	// recomputed counts stale (sample, setting, budget) scores; unknown
	// counts per task the scores that could not be checked.
	recomputed int
	unknown    map[string]int
	ctx        context.Context
}

// newRescorer resolves the current scoring of every task the store's runs
// name.
func newRescorer(ctx context.Context, st *store.Store) (*rescorer, error) {
	r := &rescorer{st: st, jobs: map[string]*generate.Job{}, samples: map[string]map[string]store.Sample{}, unknown: map[string]int{}, ctx: ctx}
	runs, err := st.Runs(ctx)
	if err != nil {
		return nil, err
	}
	for _, run := range runs { // newest first
		var cfg struct {
			Tasks []string `json:"tasks"`
			Set   []string `json:"set"`
		}
		if json.Unmarshal(run.Config, &cfg) != nil {
			continue
		}
		set := map[string]string{}
		for _, kv := range cfg.Set {
			if k, v, ok := strings.Cut(kv, "="); ok {
				set[k] = v
			}
		}
		for _, spec := range cfg.Tasks {
			c, err := tasks.ResolveWith(spec, set)
			if err != nil {
				continue // a task file since moved: its scores are reported unchecked
			}
			if _, ok := r.jobs[c.Task]; !ok {
				r.jobs[c.Task] = &generate.Job{Task: c.Task, Score: c.Scorer(), Spec: c.ScoringSpec()}
			}
		}
	}
	return r, nil
}

// job is the current scoring of a task, nil when no run names it (a task
// file that has since moved: guessing another config of the same name
// could call current scores stale).
func (r *rescorer) job(task string) *generate.Job { return r.jobs[task] }

// fix is a report.LoadOptions.Fix: it leaves current scores (and scores
// with no digest: imported, published figures) as they are and replaces a
// stale score's value by its recomputation.
func (r *rescorer) fix(e store.Entry) (store.Entry, bool, error) {
	if e.Digest == "" {
		return e, true, nil
	}
	key := e.Key()
	if key != r.last || r.lastValues == nil && !r.lastStale {
		r.last, r.lastStale, r.lastValues = key, false, nil
		j := r.job(e.Task)
		if j == nil {
			r.unknown[e.Task]++
			return e, true, nil
		}
		smp, err := r.sample(e.Task, e.SampleID)
		if err != nil {
			return e, false, err
		}
		if smp == nil {
			r.unknown[e.Task]++
			return e, true, nil
		}
		set := generate.StopSetting{Name: e.Setting}
		if e.SettingKey != "" {
			set.Seqs = strings.Split(e.SettingKey, "\x00")
		}
		if generate.ScoreDigest(j, smp, set, e.Budget, e.Prediction) == e.Digest {
			r.lastValues = map[string]float64{} // current: keep stored values
			return e, true, nil
		}
		r.recomputed++
		r.lastStale = true
		vals, err := j.Score(e.Prediction, *smp)
		if err != nil {
			vals = map[string]float64{generate.Unscorable: 1}
		}
		r.lastValues = vals
	}
	if !r.lastStale {
		return e, true, nil
	}
	v, ok := r.lastValues[e.Metric]
	if !ok {
		return e, false, nil // the metric is no longer computed
	}
	e.Value = v
	return e, true, nil
}

// sample returns a stored sample as the scorer takes it (nil when it is
// not stored).
func (r *rescorer) sample(task, id string) (*datasets.Sample, error) {
	if s := r.lastSample; s != nil && s.Task == task && s.ID == id {
		return s, nil
	}
	m, ok := r.samples[task]
	if !ok {
		var err error
		if m, err = r.st.Samples(r.ctx, task); err != nil {
			return nil, err
		}
		r.samples[task] = m
	}
	s, ok := m[id]
	if !ok {
		return nil, nil
	}
	var meta struct {
		Metadata map[string]any `json:"metadata"`
		ShareKey string         `json:"share_key"`
	}
	if err := json.Unmarshal(s.Metadata, &meta); err != nil {
		return nil, fmt.Errorf("sample %s/%s: metadata: %w", task, id, err)
	}
	r.lastSample = &datasets.Sample{Task: task, ID: id, Prompt: s.Prompt, References: s.Refs, Metadata: meta.Metadata, ShareKey: meta.ShareKey}
	return r.lastSample, nil
}

// note says on w what was recomputed and what could not be checked.
func (r *rescorer) note(w io.Writer) {
	noteRecomputed(w, r.recomputed, false)
	for _, t := range slices.Sorted(maps.Keys(r.unknown)) {
		fmt.Fprintf(w, "note: %d scores of task %s could not be checked for staleness (its task config is not known to this tally)\n", r.unknown[t], t)
	}
}
