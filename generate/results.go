package generate

// This file holds the results of a plan as they are now: stored scores
// that are current, the others (re)computed (CurrentResults), and the
// rescoring of whole jobs (Rescore).

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"tally/backends"
	"tally/store"
	"tally/tasks/variant"
)

// Results holds scores per task, setting and metric: the values in sample
// order. A failed sample (backend error, prompt beyond the context) is in
// every metric's list with value 0 and its reason in Failed; a sample the
// metric's reference could not score is only under Unscorable.
type Results map[string]map[string]map[string][]SampleScore

// SampleScore is one sample's value of one metric.
type SampleScore struct {
	SampleID   string
	Value      float64
	Prediction string
	// Failed is why the sample failed ("" when it was scored); a failed
	// sample's Value is 0.
	Failed string
}

// NoneScored is the metric name under which failed samples are listed when
// no sample of the task was scored (so no metric names are known).
const NoneScored = "(none scored)"

// Mean is a mean that is written to JSON as null when it is undefined
// (NaN, as when nothing was scored).
type Mean float64

// MarshalJSON writes the mean, or null when it is NaN or infinite.
func (m Mean) MarshalJSON() ([]byte, error) {
	f := float64(m)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

// SampleCounts is the number of samples scored and failed in one task and
// setting.
type SampleCounts struct {
	Scored int `json:"n_scored"`
	Failed int `json:"n_failed"`
}

// ScoreOptions tune CurrentResults.
type ScoreOptions struct {
	// Write stores what was (re)computed; read-only commands leave it
	// unset and recompute in memory.
	Write bool
	// Force recomputes every score, stale or not (tally rescore).
	Force bool
	RunID int64
}

// ScoreReport is what CurrentResults did.
type ScoreReport struct {
	// Scored counts the (sample, setting) pairs computed now; Recomputed
	// those of them that had stale stored scores.
	Scored, Recomputed int
	// Unscorable lists the pairs the metrics could not score.
	Unscorable []string
}

// CurrentResults returns the scores of the plan's items as they are now:
// it reads the stored generations and scores, uses every stored score
// whose digest is current, and computes (no model work) every score that
// is missing or stale, storing those with opt.Write. Scores of metrics the
// task no longer names are not returned (and, with Write, are removed).
//
// It works through the items resultsChunk at a time (read, score, write),
// so that what it holds beyond the results is one portion's generations
// and scores, whatever the size of the plan.
func CurrentResults(ctx context.Context, st *store.Store, p *Plan, opt ScoreOptions) (Results, ScoreReport, error) {
	c := &collector{out: Results{}, opt: opt}
	for lo := 0; lo < len(p.Items); lo += resultsChunk {
		if err := c.portion(ctx, st, p.Items[lo:min(lo+resultsChunk, len(p.Items))]); err != nil {
			return nil, c.rep, err
		}
	}
	for _, f := range c.failures {
		metrics := c.out.Metrics(f.task)
		if len(metrics) == 0 {
			metrics = []string{NoneScored}
		}
		for _, m := range metrics {
			if m != Unscorable {
				c.out.add(f.task, f.set, m, SampleScore{SampleID: f.id, Failed: f.reason})
			}
		}
	}
	return c.out, c.rep, nil
}

// resultsChunk is how many items CurrentResults reads, scores and writes
// at a time (fewer than store.Generations' threshold for a scan of the
// whole model: a portion's generations are looked up by key).
const resultsChunk = 1024

// collector gathers CurrentResults over portions of a plan's items.
type collector struct {
	out      Results
	rep      ScoreReport
	opt      ScoreOptions
	failures []failure
}

// failure is a failed sample under one setting, added to every metric's
// list once all are known.
type failure struct{ task, set, id, reason string }

// add appends x to the list of a task, setting and metric.
func (r Results) add(task, set, metric string, x SampleScore) {
	if r[task] == nil {
		r[task] = map[string]map[string][]SampleScore{}
	}
	if r[task][set] == nil {
		r[task][set] = map[string][]SampleScore{}
	}
	r[task][set][metric] = append(r[task][set][metric], x)
}

// portion does CurrentResults' work for some items: reads their
// generations and stored scores, keeps the current ones, computes the
// others, and (opt.Write) stores what it computed and deletes the scores
// of samples that failed.
func (c *collector) portion(ctx context.Context, st *store.Store, items []*Item) error {
	keys := make([]string, 0, len(items))
	for _, it := range items {
		keys = append(keys, it.Key)
	}
	gens, err := st.Generations(ctx, "", keys)
	if err != nil {
		return err
	}
	// Recomputing every score needs only what the stored ones are (their
	// digests cover the predictions); otherwise the current ones are
	// returned as they are, predictions included.
	readScores := st.ScoresFor
	if c.opt.Force {
		readScores = st.ScoreStatesFor
	}
	all, err := readScores(ctx, keys)
	if err != nil {
		return err
	}
	byKey := map[store.ScoreKey][]store.Score{}
	for _, s := range all {
		byKey[s.Key()] = append(byKey[s.Key()], s)
	}
	var toWrite []store.Score
	var toDelete []store.ScoreKey
	for _, it := range items {
		g, ok := gens[it.Key]
		if !ok {
			continue
		}
		budget := it.Job.MaxTokens
		reason := failReason(&g)
		var dg *ScoreDigester
		for k, set := range it.Job.Settings {
			sk := store.ScoreKey{GenKey: it.Key, Task: it.Sample.Task, SampleID: it.Sample.ID, SettingKey: set.Key(), Budget: budget}
			rows := byKey[sk]
			if reason != "" {
				c.failures = append(c.failures, failure{it.Sample.Task, set.Name, it.Sample.ID, reason})
				if len(rows) > 0 {
					toDelete = append(toDelete, sk)
				}
				continue
			}
			pred, ok, _ := it.truncate(&g, set)
			if !ok {
				continue // needs more generation
			}
			isCurrent := false
			if len(rows) > 0 {
				if dg == nil {
					x := NewScoreDigester(it.Job, it.Sample)
					dg = &x
				}
				isCurrent = current(rows, dg.Digest(set, budget, pred))
			}
			if !c.opt.Force && isCurrent {
				for _, s := range rows {
					// The metrics of one sample and setting share its prediction.
					c.out.add(s.Task, set.Name, s.Metric, SampleScore{SampleID: s.SampleID, Value: s.Value, Prediction: rows[0].Prediction})
				}
				continue
			}
			if dg == nil {
				x := NewScoreDigester(it.Job, it.Sample)
				dg = &x
			}
			sc, warn, fatal := scoreSetting(it, &g, k, c.opt.RunID, dg)
			if fatal != nil {
				return fatal
			}
			if warn != "" {
				c.rep.Unscorable = append(c.rep.Unscorable, warn)
			}
			c.rep.Scored++
			if len(rows) > 0 && !isCurrent {
				c.rep.Recomputed++
			}
			for _, s := range sc {
				c.out.add(s.Task, set.Name, s.Metric, SampleScore{SampleID: s.SampleID, Value: s.Value, Prediction: s.Prediction})
			}
			if !sameScores(sc, rows) {
				toWrite = append(toWrite, sc...)
			}
		}
	}
	if c.opt.Write {
		if err := st.PutScores(ctx, toWrite); err != nil {
			return fmt.Errorf("store scores: %w", err)
		}
		if err := st.DeleteScores(ctx, toDelete); err != nil {
			return err
		}
	}
	return nil
}

// sameScores reports whether the scores computed for one sample and
// setting are those stored (same metrics, values and digest, which covers
// the prediction):
// writing them again would change nothing but the run that wrote them.
func sameScores(computed, stored []store.Score) bool {
	if len(computed) != len(stored) {
		return false
	}
	byMetric := make(map[string]store.Score, len(stored))
	for _, s := range stored {
		byMetric[s.Metric] = s
	}
	for _, c := range computed {
		s, ok := byMetric[c.Metric]
		if !ok || c.Digest != s.Digest || !sameValue(c.Value, s.Value) { // the digest covers the prediction
			return false
		}
	}
	return true
}

// sameValue reports whether two stored values are equal, an undefined
// value (NaN or infinite, stored as NULL) equal to any other.
func sameValue(a, b float64) bool {
	undefined := func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }
	if undefined(a) || undefined(b) {
		return undefined(a) && undefined(b)
	}
	return a == b
}

// current reports whether every stored score row has the digest d.
func current(rows []store.Score, d string) bool {
	for _, r := range rows {
		if r.Digest != d {
			return false
		}
	}
	return true
}

// ReadResults returns the current scores of the plan's items without
// writing anything: stale or missing scores are computed in memory.
func ReadResults(ctx context.Context, st *store.Store, p *Plan) (Results, error) {
	res, _, err := CurrentResults(ctx, st, p, ScoreOptions{})
	return res, err
}

// Failures returns, sorted, the failed samples of the results as
// "task/id under setting: reason".
func (r Results) Failures() []string {
	seen := map[string]bool{}
	var out []string
	for task, bySet := range r {
		for set, byMetric := range bySet {
			for _, xs := range byMetric {
				for _, x := range xs {
					if x.Failed == "" {
						continue
					}
					s := fmt.Sprintf("%s/%s under %s: %s", variant.Name(task), x.SampleID, set, x.Failed)
					if !seen[s] {
						seen[s] = true
						out = append(out, s)
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// Metrics returns the sorted metric names present for a task.
func (r Results) Metrics(task string) []string {
	seen := map[string]bool{}
	for _, byMetric := range r[task] {
		for m := range byMetric {
			seen[m] = true
		}
	}
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// Rescore recomputes, with no model work, the scores of every (sample,
// setting) of the jobs that a stored generation answers, replacing the
// stored scores, and returns what it did. It streams: one job at a time is
// keyed (PlanKeys), scored (CurrentResults, a portion of its items at a
// time) and handed to each with its plan and results, then dropped, so
// that what it holds beyond the jobs' samples is one job's results.
func Rescore(ctx context.Context, st *store.Store, be backends.Backend, jobs []*Job, each func(*Job, *Plan, Results) error) (ScoreReport, error) {
	var rep ScoreReport
	for _, j := range jobs {
		p, err := PlanKeys(ctx, be, []*Job{j})
		if err != nil {
			return rep, fmt.Errorf("rescore: %w", err)
		}
		res, r, err := CurrentResults(ctx, st, p, ScoreOptions{Write: true, Force: true})
		if err != nil {
			return rep, fmt.Errorf("rescore: %w", err)
		}
		rep.Scored, rep.Recomputed = rep.Scored+r.Scored, rep.Recomputed+r.Recomputed
		rep.Unscorable = append(rep.Unscorable, r.Unscorable...)
		if err := each(j, p, res); err != nil {
			return rep, err
		}
	}
	return rep, nil
}
