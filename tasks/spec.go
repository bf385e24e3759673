package tasks

import "encoding/json"

// scoringSpec is the part of a task configuration that decides how a
// prediction is scored (as opposed to which prompt is built): the
// digest of every stored score covers it, so changing any of it makes the
// stored scores stale and they are recomputed.
type scoringSpec struct {
	Task    string       `json:"task"`
	Loader  string       `json:"loader"`
	Lang    string       `json:"lang,omitempty"`
	Metrics []metricSpec `json:"metrics"`
}

type metricSpec struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// ScoringSpec returns the canonical JSON of what decides how the task's
// predictions are scored: its name, its loader (which fixes the shape of
// the references), its language (Counting-Stars parses answers by it) and its metrics in order, each with its version. The
// sample's references and metadata, the stop setting and the budget are
// digested beside it by the generate package.
func (c *Config) ScoringSpec() string {
	if c.lm != nil {
		return c.lm.ScoringSpec()
	}
	return c.scoringSpec(metricVersion)
}

// scoringSpec is ScoringSpec with the metric versions from version.
func (c *Config) scoringSpec(version func(name string) string) string {
	sp := scoringSpec{Task: c.Task, Loader: c.Loader, Lang: c.Lang, Metrics: make([]metricSpec, 0, len(c.Metrics))}
	for _, m := range c.Metrics {
		sp.Metrics = append(sp.Metrics, metricSpec{Name: m, Version: version(m)})
	}
	b, _ := json.Marshal(sp) // a struct of strings always marshals
	return string(b)
}
