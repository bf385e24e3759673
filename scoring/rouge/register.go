package rouge

import (
	"tally/datasets"
	"tally/scoring"
)

func init() {
	l := LineMetrics()[0]
	scoring.Register(scoring.Metric{
		Name:      l.Name,
		Version:   "1",
		Reference: "google-research/google-research rouge/rouge_scorer.py (rouge_score 0.1.2, commit 61ce9f0c)",
		Doc:       l.Doc + ` As a task metric: {"rouge1","rouge2","rougeL","rougeLsum"} against the sample's references.`,
		Line:      &l,
		Score: func(pred string, s datasets.Sample) (map[string]float64, error) {
			refs, err := scoring.StringRefs(s)
			if err != nil {
				return nil, err
			}
			sc, err := scoreRefs(pred, refs)
			if err != nil {
				return nil, err
			}
			return map[string]float64{"rouge1": sc.Rouge1, "rouge2": sc.Rouge2, "rougeL": sc.RougeL, "rougeLsum": sc.RougeLsum}, nil
		},
	})
}
