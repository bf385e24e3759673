package generate

import (
	"math"

	"tally/scoring/stats"
)

// The figures of results as the tests check them (the commands' figures
// come from report.FromResults, the one source of figures).

// means is the mean of every metric, per task and setting, failed
// samples counted as 0 (NaN when a metric has no values).
func means(r Results) map[string]map[string]map[string]Mean {
	out := map[string]map[string]map[string]Mean{}
	for task, bySet := range r {
		out[task] = map[string]map[string]Mean{}
		for set, byMetric := range bySet {
			out[task][set] = map[string]Mean{}
			for m, xs := range byMetric {
				vals := make([]float64, len(xs))
				for i, x := range xs {
					vals[i] = x.Value
				}
				mean := math.NaN()
				if len(vals) > 0 {
					mean = stats.Mean(vals)
				}
				out[task][set][m] = Mean(mean)
			}
		}
	}
	return out
}

// counts is the number of samples scored and failed per task and
// setting (a sample counts once, whatever its number of metrics).
func counts(r Results) map[string]map[string]SampleCounts {
	out := map[string]map[string]SampleCounts{}
	for task, bySet := range r {
		out[task] = map[string]SampleCounts{}
		for set, byMetric := range bySet {
			scored, failed := map[string]bool{}, map[string]bool{}
			for _, xs := range byMetric {
				for _, x := range xs {
					if x.Failed != "" {
						failed[x.SampleID] = true
					} else {
						scored[x.SampleID] = true
					}
				}
			}
			out[task][set] = SampleCounts{Scored: len(scored), Failed: len(failed)}
		}
	}
	return out
}
