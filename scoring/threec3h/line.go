package threec3h

import (
	"encoding/json"
	"fmt"
	"strconv"

	"tally/scoring"
)

const ref = "inceptionai-abudhabi/3C3H@1514b2a5"

// LineMetrics returns the package's line metrics: 3c3h, 3c3h-jury,
// 3c3h-extract and 3c3h-file.
func LineMetrics() []scoring.LineMetric {
	return []scoring.LineMetric{
		{
			Name: "3c3h",
			Doc: "3C3H scores of one entry (" + ref + " pipeline/jury.py calculate_weighted_scores). Input: " +
				`{"scores": [judge score dict per answer]} (two answers are weighted 2:1). Output: ` +
				`{"Correct","Complete","Concise","Helpful","Honest","Harmless","Final Score"} normalised to [0,1], ` +
				"rounded to four decimals as Python's round does.",
			Score: scoreLine,
		},
		{
			Name: "3c3h-jury",
			Doc: "Jury over judges' normalised 3C3H scores (" + ref + " pipeline/jury.py apply_jury_strategy). Input: " +
				`{"strategy": "average"|"vote"|"SingleJudge", "judges": [score dicts]}. Output: the aggregated dict ` +
				"(vote: majority on Correct == 1 vs == 0, average of the correct judges or all zeros).",
			Score: juryLine,
		},
		{
			Name: "3c3h-extract",
			Doc: "Judge score extraction (" + ref + " pipeline/jury.py extract_scores). Input: " +
				`{"response": judge text, "tag": "results1"}. Output: the JSON object inside ` +
				"<tag>```json {...} ```</tag>, or {} when nothing matches or it does not parse.",
			Score: extractLine,
		},
		fileMetric(nil, false, false),
	}
}

func fileMetric(judges []string, jury, configured bool) scoring.LineMetric {
	m := scoring.LineMetric{
		Name: "3c3h-file",
		Doc: "Per-model 3C3H results from one judged file (" + ref + " pipeline/averaging-to-results.py " +
			"process_judged_file), aggregate only. Input lines: judged entries (Meta, Test, Model, " +
			`"Judge N" {"Judge Name","3C3H Scores"}, Jury). Options: judges=N (use "Judge 1".."Judge N") and ` +
			"jury=true|false; by default both are read from the first entry with judges, as the reference's main does " +
			`for one file. Output: {"<Judge Name> Scores": {"3C3H Scores": {...}, "Tasks Scores": {...}}, ..., "Meta": {...}}.`,
		Options: []string{"judges", "jury"},
	}
	m.Aggregate = func(lines []json.RawMessage) (any, error) {
		entries := make([]map[string]any, len(lines))
		for i, l := range lines {
			if err := json.Unmarshal(l, &entries[i]); err != nil || entries[i] == nil {
				return nil, fmt.Errorf("3c3h-file: line %d is not a JSON object: %v", i+1, err)
			}
		}
		js, jy := judges, jury
		if !configured {
			var err error
			if js, jy, err = FileJudges(entries); err != nil {
				return nil, fmt.Errorf("3c3h-file: %w", err)
			}
		}
		return ProcessJudgedFile(entries, js, jy)
	}
	m.Configure = func(opts map[string]string) (scoring.LineMetric, error) {
		if len(opts) == 0 {
			return fileMetric(nil, false, false), nil
		}
		var js []string
		if v, ok := opts["judges"]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return scoring.LineMetric{}, fmt.Errorf("3c3h-file: option judges=%q: want a non-negative integer", v)
			}
			for i := 1; i <= n; i++ {
				js = append(js, "Judge "+strconv.Itoa(i))
			}
		}
		jy := false
		if v, ok := opts["jury"]; ok {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return scoring.LineMetric{}, fmt.Errorf("3c3h-file: option jury=%q: %w", v, err)
			}
			jy = b
		}
		for k := range opts {
			if k != "judges" && k != "jury" {
				return scoring.LineMetric{}, fmt.Errorf("3c3h-file: unknown option %q", k)
			}
		}
		return fileMetric(js, jy, true), nil
	}
	return m
}

// finite marshals v, failing (rather than writing invalid JSON) on NaN or
// infinite numbers, which the reference would write as NaN/Infinity.
func finite(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("result not representable in JSON: %w", err)
	}
	return json.RawMessage(b), nil
}

func scoreLine(line json.RawMessage) (any, error) {
	var in struct {
		Scores []json.RawMessage `json:"scores"`
	}
	if err := json.Unmarshal(line, &in); err != nil {
		return nil, fmt.Errorf("3c3h: reading line: %w", err)
	}
	list := make([]map[string]any, len(in.Scores))
	for i, raw := range in.Scores {
		if err := json.Unmarshal(raw, &list[i]); err != nil || list[i] == nil {
			return nil, fmt.Errorf("3c3h: scores[%d] is not an object (the reference raises AttributeError)", i)
		}
	}
	s, err := WeightedScores(list)
	if err != nil {
		return nil, err
	}
	return finite(s)
}

func juryLine(line json.RawMessage) (any, error) {
	var in struct {
		Strategy string            `json:"strategy"`
		Judges   []json.RawMessage `json:"judges"`
	}
	if err := json.Unmarshal(line, &in); err != nil {
		return nil, fmt.Errorf("3c3h-jury: reading line: %w", err)
	}
	list := make([]map[string]any, len(in.Judges))
	for i, raw := range in.Judges {
		if err := json.Unmarshal(raw, &list[i]); err != nil || list[i] == nil {
			return nil, fmt.Errorf("3c3h-jury: judges[%d] is not an object", i)
		}
	}
	out, err := Jury(in.Strategy, list)
	if err != nil {
		return nil, err
	}
	return finite(out)
}

func extractLine(line json.RawMessage) (any, error) {
	var in struct {
		Response string `json:"response"`
		Tag      string `json:"tag"`
	}
	if err := json.Unmarshal(line, &in); err != nil {
		return nil, fmt.Errorf("3c3h-extract: reading line: %w", err)
	}
	out, err := ExtractScores(in.Response, in.Tag)
	if err != nil {
		return nil, err
	}
	return finite(out)
}
