// Package lmevallog reads lm-evaluation-harness per-sample logs
// (samples_<task>_<date>.jsonl, written with --log_samples, and the Open
// LLM Leaderboard's published details in the same layout) so that outputs
// generated elsewhere can be stored in tally and re-scored.
//
// Each line holds "doc_id", "doc" (the dataset row), "arguments" (the
// request: the exact prompt and the generation kwargs with "until"), and
// "resps"/"filtered_resps" (the model's output, already cut at "until").
// Two layouts of "arguments" exist: [[prompt, {kwargs}]] (lm-eval 0.4.0 to
// 0.4.2) and {"gen_args_0": {"arg_0": prompt, "arg_1": {kwargs}}} (later).
package lmevallog

import (
	"encoding/json"
	"fmt"

	"tally/datasets/jsonl"
)

// Record is one logged sample.
type Record struct {
	Line  int
	DocID int
	// Doc is the dataset row the harness scored against.
	Doc json.RawMessage
	// Prompt is the exact text the model was given.
	Prompt string
	// Until is the stop sequences the harness generated with.
	Until []string
	// Response is the raw response (resps[0][0]): already truncated at the
	// first of Until, so it can be re-scored but never extended.
	Response string
	// Filtered is filtered_resps[0] when it is a string (the answer the
	// harness scored after its filters), else "".
	Filtered string
	// Target is the logged "target" (a string, or the JSON of any other
	// value).
	Target string
	// Filter is the logged "filter" (the filter pipeline that made
	// Filtered: "none" when the task has none), "" in logs without it.
	Filter string
	// MaxGenToks is generation_kwargs' max_gen_toks (0 when absent).
	MaxGenToks int
	// Metrics are the logged values of the metrics named in "metrics"
	// (numbers only).
	Metrics map[string]float64
	// Tally is the "tally" object tally writes beside each line (nil in
	// logs made by lm-eval).
	Tally json.RawMessage
}

// ReadFile reads a samples_*.jsonl log (gzip when named .gz).
func ReadFile(path string) ([]Record, error) {
	res, err := jsonl.ReadFile(path, false)
	if err != nil {
		return nil, err
	}
	out := make([]Record, 0, len(res.Rows))
	for i, row := range res.Rows {
		b, _ := json.Marshal(row)
		r, err := parse(b)
		if err != nil {
			return nil, fmt.Errorf("read %s line %d: %w", path, res.Lines[i], err)
		}
		r.Line = res.Lines[i]
		out = append(out, r)
	}
	return out, nil
}

// IsLog reports whether a decoded JSON row looks like an lm-eval sample log
// line.
func IsLog(row map[string]any) bool {
	_, doc := row["doc"]
	_, resps := row["resps"]
	_, args := row["arguments"]
	return doc && resps && args
}

type rawLine struct {
	DocID     *int                `json:"doc_id"`
	Doc       json.RawMessage     `json:"doc"`
	Arguments json.RawMessage     `json:"arguments"`
	Resps     [][]json.RawMessage `json:"resps"`
	Filtered  []json.RawMessage   `json:"filtered_resps"`
	Target    json.RawMessage     `json:"target"`
	Metrics   []string            `json:"metrics"`
	Filter    string              `json:"filter"`
	Tally     json.RawMessage     `json:"tally"`
}

type genKwargs struct {
	Until      json.RawMessage `json:"until"`
	MaxGenToks int             `json:"max_gen_toks"`
}

func parse(b []byte) (Record, error) {
	var l rawLine
	if err := json.Unmarshal(b, &l); err != nil {
		return Record{}, err
	}
	if l.DocID == nil {
		return Record{}, fmt.Errorf(`field "doc_id" missing`)
	}
	if len(l.Doc) == 0 || l.Doc[0] != '{' {
		return Record{}, fmt.Errorf(`field "doc": missing or not an object`)
	}
	r := Record{DocID: *l.DocID, Doc: l.Doc}
	var prompt string
	var kw genKwargs
	var list [][]json.RawMessage
	var named map[string]map[string]json.RawMessage
	switch {
	case json.Unmarshal(l.Arguments, &list) == nil && len(list) > 0 && len(list[0]) >= 1:
		if err := json.Unmarshal(list[0][0], &prompt); err != nil {
			return Record{}, fmt.Errorf(`field "arguments"[0][0]: %w`, err)
		}
		if len(list[0]) > 1 {
			json.Unmarshal(list[0][1], &kw)
		}
	case json.Unmarshal(l.Arguments, &named) == nil && named["gen_args_0"] != nil:
		a := named["gen_args_0"]
		if err := json.Unmarshal(a["arg_0"], &prompt); err != nil {
			return Record{}, fmt.Errorf(`field "arguments".gen_args_0.arg_0: %w`, err)
		}
		if raw, ok := a["arg_1"]; ok {
			json.Unmarshal(raw, &kw)
		}
	default:
		return Record{}, fmt.Errorf(`field "arguments": neither [[prompt, kwargs]] nor {"gen_args_0": {...}}`)
	}
	r.Prompt = prompt
	if len(kw.Until) > 0 {
		var one string
		if json.Unmarshal(kw.Until, &one) == nil {
			r.Until = []string{one}
		} else if err := json.Unmarshal(kw.Until, &r.Until); err != nil {
			return Record{}, fmt.Errorf(`field "until": %w`, err)
		}
	}
	if len(l.Resps) == 0 || len(l.Resps[0]) == 0 {
		return Record{}, fmt.Errorf(`field "resps": empty`)
	}
	if err := json.Unmarshal(l.Resps[0][0], &r.Response); err != nil {
		return Record{}, fmt.Errorf(`field "resps"[0][0]: not a string: %w`, err)
	}
	r.MaxGenToks, r.Tally, r.Filter = kw.MaxGenToks, l.Tally, l.Filter
	if len(l.Filtered) > 0 {
		_ = json.Unmarshal(l.Filtered[0], &r.Filtered)
	}
	if len(l.Target) > 0 && json.Unmarshal(l.Target, &r.Target) != nil {
		r.Target = string(l.Target)
	}
	if len(l.Metrics) > 0 {
		var all map[string]json.RawMessage
		_ = json.Unmarshal(b, &all)
		r.Metrics = map[string]float64{}
		for _, m := range l.Metrics {
			var v float64
			if json.Unmarshal(all[m], &v) == nil {
				r.Metrics[m] = v
			} else if string(all[m]) == "true" || string(all[m]) == "false" {
				r.Metrics[m] = map[string]float64{"true": 1, "false": 0}[string(all[m])]
			}
		}
	}
	return r, nil
}
