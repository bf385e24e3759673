package leval

import (
	"encoding/json"
	"errors"
	"fmt"

	"tally/scoring"
)

// LineMetrics returns the package's line metrics: leval.
func LineMetrics() []scoring.LineMetric {
	return []scoring.LineMetric{{
		Name: "leval",
		Doc: "L-Eval scoring as OpenLMLab/LEval Evaluation/auto_eval.py, em.py, f1.py and rouge.py do it " +
			"(commit cd34b050): per-task output/ground-truth processing (multiple choice, coursera multi-answer, " +
			"gsm math, codeU code, sci_fi judge), exact match with 0.25 partial credit, token F1, ROUGE via " +
			"rouge_score. Input lines: {\"task\": str, \"prediction\": str, \"reference\": str} (reference = the " +
			"file's \"gt\"). Output: {\"task\",\"prediction\",\"reference\" (processed), \"score\" (fraction: exact " +
			"match 0/0.25/1, F1, or ROUGE-L F), plus \"loyalty\"/\"fact\" for sci_fi and \"rouge\" for ROUGE tasks}. " +
			"With --aggregate (lines in prediction-file order, all of one task): the figures auto_eval.py prints, " +
			"0-100 and rounded to 4 decimals, under its key names (exact_match or f1 or rouge/rouge1, rouge/rouge2, " +
			"rouge/rougeL, rouge/geometric_mean; num_predicted; mean_prediction_length_characters; LEval_score; " +
			"topic_retrieval_longchat and sci_fi prefixed per part plus their average). rouge/rougeLsum is not " +
			"reproduced (needs nltk punkt).",
		Score:     scoreLine,
		Aggregate: aggregateLines,
	}}
}

type line struct {
	Task       string  `json:"task"`
	Prediction *string `json:"prediction"`
	Reference  *string `json:"reference"`
}

func parseLine(raw json.RawMessage) (Item, error) {
	var l line
	if err := json.Unmarshal(raw, &l); err != nil {
		return Item{}, fmt.Errorf("leval: decoding line: %w", err)
	}
	if l.Prediction == nil || l.Reference == nil {
		return Item{}, errors.New(`leval: line needs "prediction" and "reference"`)
	}
	return ScoreItem(l.Task, *l.Prediction, *l.Reference)
}

func scoreLine(raw json.RawMessage) (any, error) {
	return parseLine(raw)
}

func aggregateLines(lines []json.RawMessage) (any, error) {
	if len(lines) == 0 {
		return nil, errors.New("leval: no lines to aggregate")
	}
	items := make([]Item, len(lines))
	for i, raw := range lines {
		it, err := parseLine(raw)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if i > 0 && it.Task != items[0].Task {
			return nil, fmt.Errorf("leval: line %d is task %q, line 1 is %q; aggregate one task at a time", i+1, it.Task, items[0].Task)
		}
		items[i] = it
	}
	return Aggregate(items[0].Task, items)
}
