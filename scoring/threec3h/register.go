package threec3h

import (
	"encoding/json"
	"fmt"

	"tally/datasets"
	"tally/scoring"
)

func init() {
	for _, l := range LineMetrics() {
		m := scoring.Metric{Name: l.Name, Version: "1", Reference: ref + " pipeline/jury.py", Doc: l.Doc, Line: &l}
		if l.Name == "3c3h" {
			m.Doc += ` As a task metric it reads the judge's answer itself (ScoreJudgeOutput: extract_scores on ` +
				`<results1> (and <results2> in round 2), then these weights): {"3c3h.parsed": 1, "3c3h.<criterion>", ` +
				`"3c3h.Final Score"}, or only {"3c3h.parsed": 0} when the answer holds no readable score block ` +
				`(jury.py skips that judge). The line form takes scores already extracted (see 3c3h-extract).`
			m.Score = taskScore
		}
		scoring.Register(m)
	}
}

// taskScore scores one judge answer of a 3C3H judge sample (references:
// {"round": 0|1|2, ...}).
func taskScore(pred string, s datasets.Sample) (map[string]float64, error) {
	var ref struct {
		Round int `json:"round"`
	}
	if err := json.Unmarshal(s.References, &ref); err != nil {
		return nil, fmt.Errorf("references of %s: %w", s.ID, err)
	}
	if ref.Round < 0 || ref.Round > 2 {
		return nil, fmt.Errorf("references of %s: round %d, want 0, 1 or 2", s.ID, ref.Round)
	}
	sc, err := ScoreJudgeOutput(pred, ref.Round)
	if err != nil {
		return map[string]float64{"3c3h.parsed": 0}, nil
	}
	out := map[string]float64{"3c3h.parsed": 1}
	for k, v := range sc {
		out["3c3h."+k] = v
	}
	return out, nil
}
