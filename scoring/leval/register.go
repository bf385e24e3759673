package leval

import (
	"encoding/json"
	"fmt"

	"tally/datasets"
	"tally/scoring"
)

func init() {
	l := LineMetrics()[0]
	scoring.Register(scoring.Metric{
		Name:      l.Name,
		Version:   "1",
		Reference: "OpenLMLab/LEval Evaluation/auto_eval.py, em.py, f1.py, rouge.py (commit cd34b050)",
		Doc: l.Doc + ` As a task metric: {"leval"}, the item score of the sample's L-Eval task (metadata "task") ` +
			"against its one reference.",
		Line: &l,
		Score: func(pred string, s datasets.Sample) (map[string]float64, error) {
			var refs []string
			if err := json.Unmarshal(s.References, &refs); err != nil || len(refs) != 1 {
				return nil, fmt.Errorf("references of %s: want one L-Eval reference", s.ID)
			}
			task, _ := s.Metadata["task"].(string)
			item, err := ScoreItem(task, pred, refs[0])
			if err != nil {
				return nil, err
			}
			return map[string]float64{"leval": item.Score}, nil
		},
	})
}
