package drop

import (
	"encoding/json"
	"errors"
	"fmt"

	"tally/scoring"
	"tally/scoring/stats"
)

// refDoc names the reference every line metric reproduces.
const refDoc = "EleutherAI/lm-evaluation-harness lm_eval/tasks/drop/utils.py (commit 4e7e0d47)"

// LineMetrics returns the package's line metrics: drop, drop-fixed,
// drop-answers and drop-normalize.
func LineMetrics() []scoring.LineMetric {
	return []scoring.LineMetric{
		{
			Name: "drop",
			Doc: "DROP exact match and F1 exactly as " + refDoc + " process_results computes them " +
				"(quirks included: tokens split on ' ' and '-' only, Python float() numbers, scipy alignment, " +
				`np.round(f1, 2)). Input lines: {"prediction": str, "answers": [[span, ...], ...]} ` +
				`(the gold answers as get_answers builds them). Output: {"em", "f1"}, each the maximum over gold answers. ` +
				`A gold answer with no spans is an error, as in the reference. With --aggregate: the means of "em" and "f1" plus "n".`,
			Score:     func(raw json.RawMessage) (any, error) { return scoreLine(raw, false) },
			Aggregate: func(lines []json.RawMessage) (any, error) { return aggregateLines(lines, false) },
		},
		{
			Name: "drop-fixed",
			Doc: "DROP exact match and F1 as the drop metric computes them (" + refDoc + ") except that " +
				"answers are tokenised on any whitespace and '-' instead of only ' ' and '-', so a number followed by " +
				`a newline ("10\n\nPassage: ...") is normalised as a number (Open LLM Leaderboard "DROP deep dive", Dec 2023). ` +
				`Input and output as for drop: {"prediction", "answers"} -> {"em", "f1"}; --aggregate gives the means plus "n".`,
			Score:     func(raw json.RawMessage) (any, error) { return scoreLine(raw, true) },
			Aggregate: func(lines []json.RawMessage) (any, error) { return aggregateLines(lines, true) },
		},
		{
			Name: "drop-answers",
			Doc: "The gold answers of a DROP record as " + refDoc + " get_answers builds them: answer then validated " +
				"answers, number / spans / date, exact duplicates dropped. validated_answers may be column-oriented " +
				`(Hugging Face EleutherAI/drop) or a list of answer objects (AllenAI JSON). Input lines: {"doc": record}. ` +
				`Output: {"answers": [[span, ...], ...]}.`,
			Score: answersLine,
		},
		{
			Name: "drop-normalize",
			Doc: "A text normalised as " + refDoc + " _normalize does, and its token bag as _answer_to_bags makes it " +
				`(distinct words in order of first occurrence). Input lines: {"text": str}. ` +
				`Output: {"normalized": str, "bag": [str, ...], "normalized_fixed": str, "bag_fixed": [str, ...]} ` +
				"(the _fixed fields under drop-fixed's tokenisation).",
			Score: normalizeLine,
		},
	}
}

// LineScore is the output of the drop and drop-fixed line metrics.
type LineScore struct {
	EM float64 `json:"em"`
	F1 float64 `json:"f1"`
}

type scoreInput struct {
	Prediction *string     `json:"prediction"`
	Answers    *[][]string `json:"answers"`
}

func parseScoreLine(raw json.RawMessage, fixed bool) (LineScore, error) {
	var in scoreInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return LineScore{}, fmt.Errorf("drop: decoding line: %w", err)
	}
	if in.Prediction == nil {
		return LineScore{}, errors.New("drop: line has no \"prediction\"")
	}
	if in.Answers == nil {
		return LineScore{}, errors.New("drop: line has no \"answers\"")
	}
	em, f1, err := scoreSpans([]string{*in.Prediction}, *in.Answers, fixed)
	if err != nil {
		return LineScore{}, fmt.Errorf("drop: %w", err)
	}
	return LineScore{EM: em, F1: f1}, nil
}

func scoreLine(raw json.RawMessage, fixed bool) (any, error) {
	return parseScoreLine(raw, fixed)
}

// aggregateLines is the reference's "mean" aggregation (sum(arr) /
// len(arr), sequential as in CPython 3.11) of em and f1.
func aggregateLines(lines []json.RawMessage, fixed bool) (any, error) {
	if len(lines) == 0 {
		return nil, errors.New("drop: no lines to aggregate")
	}
	ems := make([]float64, 0, len(lines))
	f1s := make([]float64, 0, len(lines))
	for i, raw := range lines {
		s, err := parseScoreLine(raw, fixed)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		ems = append(ems, s.EM)
		f1s = append(f1s, s.F1)
	}
	return map[string]any{"em": stats.Mean(ems), "f1": stats.Mean(f1s), "n": len(lines)}, nil
}

func answersLine(raw json.RawMessage) (any, error) {
	var in struct {
		Doc json.RawMessage `json:"doc"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("drop-answers: decoding line: %w", err)
	}
	if len(in.Doc) == 0 {
		return nil, errors.New("drop-answers: line has no \"doc\"")
	}
	a, err := Answers(in.Doc)
	if err != nil {
		return nil, fmt.Errorf("drop-answers: %w", err)
	}
	if a == nil {
		a = [][]string{}
	}
	return map[string]any{"answers": a}, nil
}

func normalizeLine(raw json.RawMessage) (any, error) {
	var in struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("drop-normalize: decoding line: %w", err)
	}
	if in.Text == nil {
		return nil, errors.New("drop-normalize: line has no \"text\"")
	}
	n, nf := Normalize(*in.Text), NormalizeFixed(*in.Text)
	return map[string]any{
		"normalized":       n,
		"bag":              nonNil(bagOf(n)),
		"normalized_fixed": nf,
		"bag_fixed":        nonNil(bagOf(nf)),
	}, nil
}

// nonNil makes an empty bag encode as [] rather than null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
