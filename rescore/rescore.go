// Package rescore keeps what is read from a store honest: every stored
// score carries the digest (generate.ScoreDigest) of what produced it, and
// a Checker recomputes in memory, from the stored prediction and sample,
// any score whose digest is not the one its task's current scoring gives,
// so that a report never shows a stale number and never writes the store
// (`tally rescore` stores recomputed scores).
package rescore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"tally/datasets"
	"tally/generate"
	"tally/scoring"
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
	// samples are each task's stored samples as a digest reads them
	// (references and metadata, no prompt), read when first needed. A
	// store's scores come task by task, so only the task read last is
	// held, unless a task is asked for again once another was read
	// (holdAll: every task read is then held, and none is read twice).
	samples map[string]map[string]scoringSample
	read    map[string]bool
	holdAll bool
	// digester is the digester of the sample checked last (scores come
	// grouped by sample), of task and id lastTask and lastID.
	digester         generate.ScoreDigester
	lastTask, lastID string
	// last is the score key last checked, whether it was (its task's
	// scoring and sample known), and what it gave.
	last        store.ScoreKey
	lastChecked bool
	lastStale   bool
	lastValues  map[string]float64
	recomputed  int
	unchecked   map[string]int
}

// scoringSample is what a score's digest reads of a stored sample: its
// references and metadata, or why its metadata could not be read.
type scoringSample struct {
	refs json.RawMessage
	meta map[string]any
	err  error
}

// New resolves the current scoring of every task variant the store
// holds: a variant's own task spec and --set, as its record names them;
// for a task an earlier tally stored by name, the newest run naming the
// task. A task file that has since moved is left out, and its scores are
// reported unchecked; so are a variant whose prompts the store does not
// hold (its scores are shown as stored) and an imported one.
func New(ctx context.Context, st *store.Store) (*Checker, error) {
	c := &Checker{st: st, ctx: ctx, jobs: map[string]*generate.Job{}, samples: map[string]map[string]scoringSample{},
		read: map[string]bool{}, unchecked: map[string]int{}}
	recs, err := st.Variants(ctx)
	if err != nil {
		return nil, fmt.Errorf("read variants to check scores: %w", err)
	}
	for key, r := range recs {
		if r.Spec.Legacy != nil || r.Info.TaskSpec == "" {
			continue
		}
		if j := jobOf(r.Info.TaskSpec, r.Info.Set, r.Spec.Task, key); j != nil {
			c.jobs[key] = j
		}
	}
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
				// An earlier tally's task, stored by name, with prompts.
				r, known := recs[tc.Task]
				if _, ok := c.jobs[tc.Task]; !ok && (!known || r.Spec.Legacy == nil || r.Spec.Legacy.Prompts) {
					c.jobs[tc.Task] = &generate.Job{Task: tc.Task, Score: tc.Scorer(), Spec: tc.ScoringSpec()}
				}
			}
		}
	}
	return c, nil
}

// jobOf is the current scoring of the variant key of task name, resolved
// from its task spec and --set (nil when it no longer resolves).
func jobOf(spec string, set map[string]string, name, key string) *generate.Job {
	tcs, err := tasks.ResolveAll(spec, set)
	if err != nil {
		return nil
	}
	for _, tc := range tcs {
		if tc.Task == name {
			return &generate.Job{Task: key, Score: tc.Scorer(), Spec: tc.ScoringSpec()}
		}
	}
	return nil
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
	if key != c.last || !c.lastChecked {
		c.last, c.lastChecked, c.lastStale, c.lastValues = key, false, false, nil
		j := c.Job(e.Task)
		if j == nil {
			c.unchecked[e.Task]++
			return e, true, nil
		}
		dg, found, err := c.digesterOf(j, e.Task, e.SampleID)
		if err != nil {
			return e, false, err
		}
		if !found {
			c.unchecked[e.Task]++
			return e, true, nil
		}
		set := generate.StopSetting{Name: e.Setting}
		if e.SettingKey != "" {
			set.Seqs = strings.Split(e.SettingKey, "\x00")
		}
		c.lastChecked = true
		if dg.Matches(e.Digest, set, e.Budget, e.Prediction) {
			return e, true, nil // current: keep stored values
		}
		c.recomputed++
		c.lastStale = true
		smp, err := c.sample(e.Task, e.SampleID)
		if err != nil {
			return e, false, err
		}
		vals, err := j.Score(e.Prediction, *smp)
		if errors.Is(err, scoring.ErrUnavailable) {
			return e, false, err
		}
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

// digesterOf returns the score digester of a stored sample under job j
// (found is false when the sample is not stored). A task's samples are
// read, without their prompts, when one of them is first asked for.
func (c *Checker) digesterOf(j *generate.Job, task, id string) (_ generate.ScoreDigester, found bool, err error) {
	if c.lastTask == task && c.lastID == id {
		return c.digester, true, nil
	}
	m, ok := c.samples[task]
	if !ok {
		var err error
		if m, err = c.readSamples(task); err != nil {
			return generate.ScoreDigester{}, false, err
		}
	}
	s, ok := m[id]
	if !ok {
		return generate.ScoreDigester{}, false, nil
	}
	if s.err != nil {
		return generate.ScoreDigester{}, false, s.err
	}
	c.digester = generate.NewScoreDigester(j, &datasets.Sample{Task: task, ID: id, References: s.refs, Metadata: s.meta})
	c.lastTask, c.lastID = task, id
	return c.digester, true, nil
}

// readSamples reads a task's samples as digests read them, holding them
// (and, unless holdAll, no other task's).
func (c *Checker) readSamples(task string) (map[string]scoringSample, error) {
	m := map[string]scoringSample{}
	err := c.st.EachScoringSample(c.ctx, task, datasets.StoredNoMetadata, func(id string, refs, raw []byte) error {
		meta, err := storedMetadata(raw)
		if err != nil {
			err = fmt.Errorf("sample %s/%s: metadata: %w", task, id, err)
		}
		m[id] = scoringSample{refs: bytes.Clone(refs), meta: meta, err: err}
		return nil
	})
	if err != nil {
		return nil, err // names the task
	}
	if c.read[task] {
		c.holdAll = true
	}
	if !c.holdAll {
		clear(c.samples)
	}
	c.read[task] = true
	c.samples[task] = m
	return m, nil
}

// storedMetadata is the sample's own metadata in a stored sample's
// metadata column (datasets.Stored): the members after it (the data row,
// most of the column) are not decoded when the column begins with the
// metadata, as ToStore writes it, and none when it is null.
func storedMetadata(raw []byte) (map[string]any, error) {
	if bytes.HasPrefix(raw, []byte(datasets.StoredNoMetadata)) { // the rest of such a column is not read
		return nil, nil
	}
	if rest, ok := bytes.CutPrefix(raw, []byte(`{"metadata":`)); ok && bytes.HasPrefix(rest, []byte("{")) {
		var meta map[string]any
		if json.NewDecoder(bytes.NewReader(rest)).Decode(&meta) == nil {
			return meta, nil
		}
	}
	var st datasets.Stored
	err := json.Unmarshal(raw, &st)
	return st.Metadata, err
}

// sample returns a stored sample whole, as the scorer takes it (a stale
// score is recomputed from it).
func (c *Checker) sample(task, id string) (*datasets.Sample, error) {
	s, ok, err := c.st.Sample(c.ctx, task, id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("sample %s/%s is no longer stored", task, id)
	}
	return FromStore(s)
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
		Doc: meta.Doc, Target: meta.Target, Index: meta.Index, Notes: meta.Notes}, nil
}
