package tasks

import (
	"fmt"

	_ "tally/benchmarks" // every built-in benchmark's loader and metrics
	"tally/datasets"
	"tally/generate"
	"tally/scoring"
)

// MetricNames lists the metrics a task config may name: the registered
// metrics that score a sample (tally/scoring.TaskNames).
func MetricNames() []string { return scoring.TaskNames() }

// lookupMetric returns the task form of a registered metric.
func lookupMetric(name string) (scoring.Metric, bool) {
	m, ok := scoring.Lookup(name)
	return m, ok && m.Score != nil
}

// metricVersion is the one place where a metric's version enters the
// scoring digest: the registered metric's Version, so bumping it makes
// every score the metric produced stale.
func metricVersion(name string) string {
	m, _ := scoring.Lookup(name)
	return m.Version
}

// Scorer returns the scorer that applies every metric of the task.
func (c *Config) Scorer() generate.Scorer {
	if c.lm != nil {
		return c.lm.Scorer()
	}
	fs := make([]func(string, datasets.Sample) (map[string]float64, error), 0, len(c.Metrics))
	for _, name := range c.Metrics {
		m, _ := lookupMetric(name) // validated when the config was read
		fs = append(fs, m.Score)
	}
	return func(pred string, s datasets.Sample) (map[string]float64, error) {
		out := map[string]float64{}
		for i, f := range fs {
			vals, err := f(pred, s)
			if err != nil {
				return nil, fmt.Errorf("metric %s: %w", c.Metrics[i], err)
			}
			for k, v := range vals {
				out[k] = v
			}
		}
		return out, nil
	}
}
