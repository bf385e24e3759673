// Package rescore keeps what is read from a store honest: every stored
// score carries the digest (generate.ScoreDigest) of what produced it, and
// a Checker recomputes in memory, from the stored prediction and sample,
// any score whose digest is not the one its task's current scoring gives,
// so that a report never shows a stale number and never writes the store
// (`tally rescore` stores recomputed scores).
package rescore

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"tally/datasets"
	"tally/generate"
	"tally/store"
	"tally/tasks"
)

// Checker checks stored scores against the current scoring of their tasks.
// It is not safe for concurrent use.
type Checker struct {
	st *store.Store
	// ctx is the context of the report the Checker serves: Fix is called
	// back from inside a store read and reads samples with it.
	ctx context.Context
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
	recomputed int
	unchecked  map[string]int
}

// New resolves the current scoring of every task the store's runs name
// (the newest run naming a task wins; a task file that has since moved is
// left out, and its scores are reported unchecked).
func New(ctx context.Context, st *store.Store) (*Checker, error) {
	c := &Checker{st: st, ctx: ctx, jobs: map[string]*generate.Job{}, samples: map[string]map[string]store.Sample{}, unchecked: map[string]int{}}
	runs, err := st.Runs(ctx)
	if err != nil {
		return nil, fmt.Errorf("read runs to check scores: %w", err)
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
			tcs, err := tasks.ResolveAll(spec, set)
			if err != nil {
				continue
			}
			for _, tc := range tcs {
				if _, ok := c.jobs[tc.Task]; !ok {
					c.jobs[tc.Task] = &generate.Job{Task: tc.Task, Score: tc.Scorer(), Spec: tc.ScoringSpec()}
				}
			}
		}
	}
	return c, nil
}

// Job is the current scoring of a task, nil when no run names it (guessing
// another config of the same name could call current scores stale).
func (c *Checker) Job(task string) *generate.Job { return c.jobs[task] }

// Fix is a report.LoadOptions.Fix: it leaves current scores (and scores
// with no digest: imported, published figures) as they are and replaces a
// stale score's value by its recomputation; ok is false for a stale score
// of a metric the task no longer computes.
func (c *Checker) Fix(e store.Entry) (_ store.Entry, ok bool, err error) {
	if e.Digest == "" {
		return e, true, nil
	}
	key := e.Key()
	if key != c.last || c.lastValues == nil && !c.lastStale {
		c.last, c.lastStale, c.lastValues = key, false, nil
		j := c.Job(e.Task)
		if j == nil {
			c.unchecked[e.Task]++
			return e, true, nil
		}
		smp, err := c.sample(e.Task, e.SampleID)
		if err != nil {
			return e, false, err
		}
		if smp == nil {
			c.unchecked[e.Task]++
			return e, true, nil
		}
		set := generate.StopSetting{Name: e.Setting}
		if e.SettingKey != "" {
			set.Seqs = strings.Split(e.SettingKey, "\x00")
		}
		if generate.ScoreDigest(j, smp, set, e.Budget, e.Prediction) == e.Digest {
			c.lastValues = map[string]float64{} // current: keep stored values
			return e, true, nil
		}
		c.recomputed++
		c.lastStale = true
		vals, err := j.Score(e.Prediction, *smp)
		if err != nil {
			vals = map[string]float64{generate.Unscorable: 1}
		}
		c.lastValues = vals
	}
	if !c.lastStale {
		return e, true, nil
	}
	v, ok := c.lastValues[e.Metric]
	if !ok {
		return e, false, nil // the metric is no longer computed
	}
	e.Value = v
	return e, true, nil
}

// Recomputed counts the stale (sample, setting, budget) scores Fix
// recomputed.
func (c *Checker) Recomputed() int { return c.recomputed }

// Unchecked counts per task the scores Fix could not check (task config
// or sample not known).
func (c *Checker) Unchecked() map[string]int { return maps.Clone(c.unchecked) }

// sample returns a stored sample as the scorer takes it (nil when it is
// not stored).
func (c *Checker) sample(task, id string) (*datasets.Sample, error) {
	if s := c.lastSample; s != nil && s.Task == task && s.ID == id {
		return s, nil
	}
	m, ok := c.samples[task]
	if !ok {
		var err error
		if m, err = c.st.Samples(c.ctx, task); err != nil {
			return nil, fmt.Errorf("read samples of %s: %w", task, err)
		}
		c.samples[task] = m
	}
	s, ok := m[id]
	if !ok {
		return nil, nil
	}
	smp, err := FromStore(s)
	if err != nil {
		return nil, err
	}
	c.lastSample = smp
	return smp, nil
}

// ToStore is the stored form of a sample: its metadata and share key (and
// what reports show of its data row) kept as JSON (datasets.Stored) beside
// the prompt and references.
func ToStore(s datasets.Sample) store.Sample {
	meta, _ := json.Marshal(datasets.ToStored(s))
	return store.Sample{Task: s.Task, ID: s.ID, Prompt: s.Prompt, Refs: s.References, Metadata: meta}
}

// FromStore is the sample a stored one (ToStore) was made from.
func FromStore(s store.Sample) (*datasets.Sample, error) {
	var meta datasets.Stored
	if err := json.Unmarshal(s.Metadata, &meta); err != nil {
		return nil, fmt.Errorf("sample %s/%s: metadata: %w", s.Task, s.ID, err)
	}
	return &datasets.Sample{Task: s.Task, ID: s.ID, Prompt: s.Prompt, References: s.Refs, Metadata: meta.Metadata, ShareKey: meta.ShareKey,
		Doc: meta.Doc, Target: meta.Target, Index: meta.Index}, nil
}
