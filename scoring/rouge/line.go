package rouge

import (
	"encoding/json"
	"errors"
	"fmt"

	"tally/scoring"
	"tally/scoring/stats"
)

// LineMetrics returns the package's line metrics: rouge.
func LineMetrics() []scoring.LineMetric {
	return []scoring.LineMetric{{
		Name: "rouge",
		Doc: "ROUGE-1/2/L/Lsum F-measures as google-research rouge_score 0.1.2 computes them " +
			"(google-research/google-research rouge/rouge_scorer.py RougeScorer.score_multi and score, " +
			"default tokenizer, no stemmer, Lsum sentences split on newlines; commit 61ce9f0c). " +
			`Input lines: {"prediction": str, "references": [str, ...]}; per ROUGE type the reference ` +
			`with the best F-measure counts. Output: {"rouge1","rouge2","rougeL","rougeLsum"} as fractions. ` +
			`With --aggregate: the plain means of those four fields plus "n".`,
		Score:     scoreLine,
		Aggregate: aggregateLines,
	}}
}

type line struct {
	Prediction *string  `json:"prediction"`
	References []string `json:"references"`
}

// LineScore is the output of the rouge line metric: F-measures only.
type LineScore struct {
	Rouge1    float64 `json:"rouge1"`
	Rouge2    float64 `json:"rouge2"`
	RougeL    float64 `json:"rougeL"`
	RougeLsum float64 `json:"rougeLsum"`
}

func parseLine(raw json.RawMessage) (LineScore, error) {
	var l line
	if err := json.Unmarshal(raw, &l); err != nil {
		return LineScore{}, fmt.Errorf("rouge: decoding line: %w", err)
	}
	if l.Prediction == nil {
		return LineScore{}, errors.New("rouge: line has no \"prediction\"")
	}
	return scoreRefs(*l.Prediction, l.References)
}

// scoreRefs is the one scoring path of the line and task forms.
func scoreRefs(pred string, refs []string) (LineScore, error) {
	if len(refs) == 0 {
		// score_multi raises on an empty target list (argmax of nothing).
		return LineScore{}, errors.New("rouge: no references")
	}
	s := ScoreMulti(pred, refs)
	return LineScore{s.Rouge1.FMeasure, s.Rouge2.FMeasure, s.RougeL.FMeasure, s.RougeLsum.FMeasure}, nil
}

func scoreLine(raw json.RawMessage) (any, error) {
	return parseLine(raw)
}

func aggregateLines(lines []json.RawMessage) (any, error) {
	if len(lines) == 0 {
		return nil, errors.New("rouge: no lines to aggregate")
	}
	var r1, r2, rl, rls []float64
	for i, raw := range lines {
		s, err := parseLine(raw)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		r1 = append(r1, s.Rouge1)
		r2 = append(r2, s.Rouge2)
		rl = append(rl, s.RougeL)
		rls = append(rls, s.RougeLsum)
	}
	return map[string]any{
		"rouge1":    stats.Mean(r1),
		"rouge2":    stats.Mean(r2),
		"rougeL":    stats.Mean(rl),
		"rougeLsum": stats.Mean(rls),
		"n":         len(lines),
	}, nil
}
