// Package countingstars reproduces the Counting-Stars scoring.
//
// Reference: nick7nlp/Counting-Stars, commit
// 32e16f2c2d2be9f38d710e782236315e0821a038, viz.ipynb code cell 1
// (get_reasoning_score, reduce_duplicate, get_data_EN, get_data_ZH), with
// json_repair as of mangiucugna/json_repair commit
// 600ede6be7d125d14812be3bbd7ef3e0b526a84e (see RepairLoads) and the pivot
// mean as pandas 2 computes DataFrame.mean(axis=None).
package countingstars

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"tally/scoring/threec3h/pyjson"
)

// aStars and rStars are context_data/a_stars.txt and r_stars.txt entry "32":
// the correct counts and the wrong counts of the reasoning variant. The
// reference reads entry "32" whatever m is.
var (
	aStars = [32]float64{15, 117, 42, 69, 58, 107, 9, 49, 113, 66, 26, 102, 81, 94, 77, 61, 5, 19, 109, 3, 35, 54, 86, 89, 127, 21, 46, 122, 38, 97, 74, 29}
	rStars = [32]float64{16, 116, 43, 70, 59, 106, 8, 48, 112, 67, 25, 101, 82, 93, 76, 62, 6, 18, 108, 4, 34, 53, 85, 90, 126, 22, 45, 121, 39, 96, 75, 30}
)

// answerKey is the JSON key holding the counts, per language.
func answerKey(lang string) (string, error) {
	switch lang {
	case "EN":
		return "little_penguin", nil
	case "ZH":
		return "小企鹅", nil
	}
	return "", fmt.Errorf("countingstars: unknown language %q (want EN or ZH)", lang)
}

// Scalar is the context-size divisor of get_data_EN/get_data_ZH: the column
// label is int(context_size / Scalar).
func Scalar(lang, testType string) (float64, error) {
	switch lang + "/" + testType {
	case "EN/Acquisition":
		return 0.82, nil
	case "EN/Reasoning":
		return 0.815, nil
	case "ZH/Acquisition":
		return 0.725, nil
	case "ZH/Reasoning":
		return 0.72, nil
	}
	return 0, fmt.Errorf("countingstars: unknown language/test type %q/%q", lang, testType)
}

// Column is the reference's "Context Size" column: int(contextSize /
// scalar), truncated toward zero.
func Column(lang, testType string, contextSize float64) (int64, error) {
	s, err := Scalar(lang, testType)
	if err != nil {
		return 0, err
	}
	c := math.Trunc(contextSize / s)
	if math.IsNaN(c) || math.Abs(c) > 1<<62 {
		return 0, fmt.Errorf("countingstars: context size %v out of range", contextSize)
	}
	return int64(c), nil
}

// Predicted extracts the predicted list as the reference does: if the
// answer contains "```", every "```" and every "json" is removed, the text
// stripped and parsed with json_repair.loads; otherwise EN uses json.loads
// and ZH json_repair.loads. The value under the language's key is returned
// (the reference raises when the text does not parse to an object with that
// key, and so does Predicted).
func Predicted(lang, answer string) (any, error) {
	key, err := answerKey(lang)
	if err != nil {
		return nil, err
	}
	var v any
	switch {
	case strings.Contains(answer, "```"):
		text := strings.ReplaceAll(strings.ReplaceAll(answer, "```", ""), "json", "")
		v, err = RepairLoads(strings.TrimFunc(text, isSpace))
	case lang == "EN":
		v, err = pyjson.Loads(answer)
		if err == nil {
			v = typedInts(answer, v)
		}
	default:
		v, err = RepairLoads(answer)
	}
	if err != nil {
		if errors.Is(err, ErrUnsupported) {
			return nil, err
		}
		return nil, fmt.Errorf("countingstars: answer is not JSON (the reference raises): %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("countingstars: answer parses to %s, not an object (the reference raises TypeError)", pyType(v))
	}
	pred, ok := obj[key]
	if !ok {
		return nil, fmt.Errorf("countingstars: answer has no key %q (the reference raises KeyError)", key)
	}
	return pred, nil
}

func pyType(v any) string {
	switch v.(type) {
	case nil:
		return "None"
	case bool:
		return "bool"
	case Int:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	case map[string]any:
		return "dict"
	}
	return fmt.Sprintf("%T", v)
}

// ReduceDuplicate is reduce_duplicate followed by the membership test the
// scores use: the first m predictions (all when there are at most m),
// de-duplicated. A string counts as its characters and a dict as its keys
// (Python's list(set(x))); a number, bool or null has no len() and a list
// or dict among the kept items is unhashable, both errors as in the
// reference; so is slicing a dict longer than m.
func ReduceDuplicate(predicted any, m int) ([]any, error) {
	var items []any
	switch x := predicted.(type) {
	case []any:
		items = x
	case string:
		for _, r := range x {
			items = append(items, string(r))
		}
	case map[string]any:
		if len(x) > m {
			return nil, errors.New("countingstars: predicted is a dict longer than m (the reference's slice raises)")
		}
		for k := range x {
			items = append(items, k)
		}
	default:
		return nil, fmt.Errorf("countingstars: predicted is %s (the reference's len() raises)", pyType(predicted))
	}
	if len(items) > m { // Python slice [:m]; a negative m drops from the end
		end := m
		if m < 0 {
			end = max(len(items)+m, 0)
		}
		items = items[:end]
	}
	for _, it := range items {
		switch it.(type) {
		case []any, map[string]any:
			return nil, fmt.Errorf("countingstars: predicted holds an unhashable %s (the reference's set() raises)", pyType(it))
		}
	}
	return items, nil
}

// contains is Python's `x in items` for a numeric x: numbers compare by
// value, True == 1 and False == 0, strings and null never match.
func contains(items []any, x float64) bool {
	for _, it := range items {
		var f float64
		switch v := it.(type) {
		case Int:
			f = float64(v)
		case float64:
			f = v
		case bool:
			if v {
				f = 1
			}
		default:
			continue
		}
		if f == x {
			return true
		}
	}
	return false
}

// Score scores one answer as get_data_EN/get_data_ZH do: for counting
// times i = 1..m, Acquisition scores 1 when reference[i-1] is among the
// reduced predictions (0 when reference is shorter), Reasoning scores by
// get_reasoning_score against the fixed a_stars/r_stars "32" tables (1 for
// the right count only, 0.5 for both, 0.25 for the wrong one only, else 0;
// m > 32 is an error, as the reference's index raises).
func Score(lang, testType string, m int, answer string, reference []float64) ([]float64, error) {
	if _, err := Scalar(lang, testType); err != nil {
		return nil, err
	}
	if testType == "Reasoning" && m > len(aStars) {
		return nil, fmt.Errorf("countingstars: Reasoning with m=%d > 32 (the reference's a_stars index raises)", m)
	}
	raw, err := Predicted(lang, answer)
	if err != nil {
		return nil, err
	}
	pred, err := ReduceDuplicate(raw, m)
	if err != nil {
		return nil, err
	}
	scores := make([]float64, max(m, 0))
	for i := range scores {
		if testType == "Acquisition" {
			if i < len(reference) && contains(pred, reference[i]) {
				scores[i] = 1
			}
			continue
		}
		a, r := contains(pred, aStars[i]), contains(pred, rStars[i])
		switch {
		case a && r:
			scores[i] = 0.5
		case a:
			scores[i] = 1
		case r:
			scores[i] = 0.25
		}
	}
	return scores, nil
}
