package generate

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"

	"tally/backends"
)

// Scoreboard is what tally prints of results: per task, setting and metric
// the mean and how many samples it counts (failed ones among them), per
// task and setting the samples scored and failed, and the failures. It
// holds no per-sample values, so results can be computed a task at a time,
// added to a Scoreboard and dropped.
type Scoreboard struct {
	Means  map[string]map[string]map[string]Mean
	Counts map[string]map[string]SampleCounts
	// Cells counts, per task, setting and metric, the samples in its mean.
	Cells map[string]map[string]map[string]Cell
	// Metrics are the sorted metric names of each task.
	Metrics map[string][]string
	// Failures are the failed samples, sorted, as Results.Failures gives
	// them.
	Failures []string
}

// Cell counts the samples of one task, setting and metric: N in the mean,
// Failed of them failed (counted as 0).
type Cell struct {
	N, Failed int
}

// Scoreboard summarises the results.
func (r Results) Scoreboard() *Scoreboard {
	b := &Scoreboard{Means: r.Means(), Counts: r.Counts(), Cells: map[string]map[string]map[string]Cell{},
		Metrics: map[string][]string{}, Failures: r.Failures()}
	for task, bySet := range r {
		b.Metrics[task] = r.Metrics(task)
		b.Cells[task] = map[string]map[string]Cell{}
		for set, byMetric := range bySet {
			b.Cells[task][set] = map[string]Cell{}
			for m, xs := range byMetric {
				c := Cell{N: len(xs)}
				for _, x := range xs {
					if x.Failed != "" {
						c.Failed++
					}
				}
				b.Cells[task][set][m] = c
			}
		}
	}
	return b
}

// Add adds the scoreboard of other tasks (a task already on b is
// replaced by o's).
func (b *Scoreboard) Add(o *Scoreboard) {
	maps.Copy(b.Means, o.Means)
	maps.Copy(b.Counts, o.Counts)
	maps.Copy(b.Cells, o.Cells)
	maps.Copy(b.Metrics, o.Metrics)
	b.Failures = append(b.Failures, o.Failures...)
	sort.Strings(b.Failures)
	b.Failures = slices.Compact(b.Failures)
}

// PlanKeys is the part of a plan that rescoring needs: every sample of the
// jobs as an item with its generation key and token budget, with no store
// read and no statuses (CurrentResults reads what is stored).
func PlanKeys(ctx context.Context, be backends.Backend, jobs []*Job) (*Plan, error) {
	fp, err := be.Fingerprint(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan: model fingerprint: %w", err)
	}
	p := &Plan{Fingerprint: fp, Counts: map[Status]int{}, EstimatedSeconds: -1}
	if p.Items, err = keyedItems(ctx, be, fp, jobs); err != nil {
		return nil, err
	}
	return p, nil
}
