package countingstars

import (
	"encoding/json"
	"fmt"

	"tally/datasets"
	"tally/scoring"
	"tally/scoring/stats"
)

func init() {
	l := LineMetrics()[0]
	scoring.Register(scoring.Metric{
		Name:      l.Name,
		Version:   "1",
		Reference: "nick7nlp/Counting-Stars viz_file/viz.ipynb@0fddb90 (rule paper) and viz.ipynb@32e16f2c (rule current)",
		Doc: l.Doc + ` As a task metric: {"counting_stars"}, the mean of the cell scores, with rule, language and ` +
			"test type from the sample's metadata. An answer the rule's notebook cannot parse is an error in both " +
			"forms, as the notebook raises: the line gets {\"error\"} and the task reports the sample unscorable.",
		Line:  &l,
		Score: taskScore,
	})
}

// taskScore scores a generated Counting-Stars sample: ScoreSample, the same
// Score the line form calls.
func taskScore(pred string, s datasets.Sample) (map[string]float64, error) {
	var refs []float64
	if err := json.Unmarshal(s.References, &refs); err != nil {
		return nil, fmt.Errorf("references of %s are not star counts: %w", s.ID, err)
	}
	scores, err := ScoreSample(pred, refs, s.Metadata)
	if err != nil {
		return nil, err
	}
	return map[string]float64{"counting_stars": stats.Mean(scores)}, nil
}
