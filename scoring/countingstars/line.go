package countingstars

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"tally/scoring"
	"tally/scoring/threec3h/pyjson"
)

// LineMetrics returns the package's line metric: counting-stars.
func LineMetrics() []scoring.LineMetric {
	return []scoring.LineMetric{{
		Name: "counting-stars",
		Doc: "Counting-Stars scores, by rule: \"paper\" (the default for Acquisition; nick7nlp/Counting-Stars@0fddb90 viz_file/viz.ipynb, " +
			"which made the published heatmaps: json_repair 0.10.1 on every answer, Acquisition only) or \"current\" " +
			"(the default for Reasoning; @32e16f2c viz.ipynb: get_data_EN/get_data_ZH, reduce_duplicate, get_reasoning_score; plain json.loads for " +
			"unfenced EN answers, json_repair@600ede6b for fenced and ZH ones, an already-parsed object answer accepted). Input: " +
			`{"rule": "paper"|"current", "lang": "EN"|"ZH", "test_type": "Acquisition"|"Reasoning", "m", "answer" (a string, ` +
			`or a JSON object under rule current), "reference": [int,...], "context_size" (the result file's context_size ` +
			`or sky_size)}. Output: {"scores": [m cell scores], "mean"}; with --aggregate {"mean": pivot mean rounded to 3 ` +
			`decimals as numpy does, "pivot": {counting_time: {column: mean}}} where column = int(context_size/scalar) ` +
			`(rule paper: the sky size for EN, int(sky_size/0.725) for ZH).`,
		Score:     scoreLine,
		Aggregate: aggregateLines,
	}}
}

type input struct {
	Rule        string          `json:"rule"`
	Lang        string          `json:"lang"`
	TestType    string          `json:"test_type"`
	M           *int            `json:"m"`
	Answer      json.RawMessage `json:"answer"`
	Reference   []float64       `json:"reference"`
	ContextSize *float64        `json:"context_size"`
}

type output struct {
	Scores []float64 `json:"scores"`
	Mean   *float64  `json:"mean"`
}

func scoreInput(line json.RawMessage) (input, []float64, error) {
	var in input
	if err := json.Unmarshal(line, &in); err != nil {
		return in, nil, fmt.Errorf("counting-stars: reading line: %w", err)
	}
	if in.M == nil || in.Answer == nil {
		return in, nil, fmt.Errorf("counting-stars: line needs m and answer")
	}
	rule, err := ResolveRule(in.Rule, in.TestType)
	if err != nil {
		return in, nil, err
	}
	in.Rule = string(rule)
	answer, err := decodeAnswer(in.Answer)
	if err != nil {
		return in, nil, err
	}
	s, err := Score(rule, in.Lang, in.TestType, *in.M, answer, in.Reference)
	return in, s, err
}

// decodeAnswer reads the "answer" field as the reference's jsonlines
// reader does (json.loads: integers stay integers): a string, or an
// already-parsed JSON value.
func decodeAnswer(raw json.RawMessage) (any, error) {
	text := string(raw)
	v, err := pyjson.Loads(text)
	if err != nil {
		return nil, fmt.Errorf("counting-stars: reading answer: %w", err)
	}
	return typedInts(text, v), nil
}

func scoreLine(line json.RawMessage) (any, error) {
	_, s, err := scoreInput(line)
	if err != nil {
		return nil, err
	}
	out := output{Scores: s}
	if len(s) > 0 {
		sum := 0.0
		for _, x := range s {
			sum += x
		}
		mean := sum / float64(len(s))
		out.Mean = &mean
	}
	return out, nil
}

func aggregateLines(lines []json.RawMessage) (any, error) {
	var cells []Cell
	for i, l := range lines {
		in, s, err := scoreInput(l)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if in.ContextSize == nil {
			return nil, fmt.Errorf("counting-stars: line %d: aggregate needs context_size", i+1)
		}
		col, err := Column(Rule(in.Rule), in.Lang, in.TestType, *in.ContextSize)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		for j, x := range s {
			cells = append(cells, Cell{CountingTime: j + 1, Column: col, Score: x})
		}
	}
	p := MakePivot(cells)
	pivot := map[string]map[string]*float64{}
	for i, r := range p.Rows {
		row := map[string]*float64{}
		for j, c := range p.Columns {
			if v := p.Values[i][j]; !math.IsNaN(v) {
				row[strconv.FormatInt(c, 10)] = &v
			} else {
				row[strconv.FormatInt(c, 10)] = nil
			}
		}
		pivot[strconv.Itoa(r)] = row
	}
	out := struct {
		Mean  *float64                       `json:"mean"`
		Pivot map[string]map[string]*float64 `json:"pivot"`
	}{Pivot: pivot}
	if m := Round3(p.Mean()); !math.IsNaN(m) {
		out.Mean = &m
	}
	return out, nil
}
