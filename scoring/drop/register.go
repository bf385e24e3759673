package drop

import (
	"encoding/json"
	"fmt"

	"tally/datasets"
	"tally/scoring"
)

// metricVersion is the version of every DROP metric; bump it when a change
// can alter a score.
const metricVersion = "1"

func init() {
	for _, l := range LineMetrics() {
		m := scoring.Metric{Name: l.Name, Version: metricVersion, Reference: refDoc, Doc: l.Doc, Line: &l}
		switch l.Name {
		case "drop":
			// lm-eval's DROP task (lm_eval/tasks/drop/default.yaml)
			// names these em and f1.
			m.Score = taskScore(l.Name, false)
			m.LMEvalNames = map[string]string{"drop.em": "em", "drop.f1": "f1"}
		case "drop-fixed":
			// tally's own metric, named beside lm-eval's as its own.
			m.Score = taskScore(l.Name, true)
			m.LMEvalNames = map[string]string{"drop-fixed.em": "em_fixed", "drop-fixed.f1": "f1_fixed"}
		}
		scoring.Register(m)
	}
}

// taskScore scores a task sample whose references are DROP answer lists
// (as get_answers builds them) into NAME.em and NAME.f1; a gold answer with
// no spans is an error, as on the line form and in the reference.
func taskScore(name string, fixed bool) func(string, datasets.Sample) (map[string]float64, error) {
	return func(pred string, s datasets.Sample) (map[string]float64, error) {
		var answers [][]string
		if err := json.Unmarshal(s.References, &answers); err != nil {
			return nil, fmt.Errorf("references of %s are not DROP answer lists: %w", s.ID, err)
		}
		em, f1, err := scoreSpans([]string{pred}, answers, fixed)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return map[string]float64{name + ".em": em, name + ".f1": f1}, nil
	}
}
