// Package countingstars reproduces the Counting-Stars scoring, in the two
// versions of the reference notebook (see Rule).
//
// RulePaper: nick7nlp/Counting-Stars commit
// 0fddb90d899bf81a3076b387c2989ae72ad19525 (2024-03-25),
// viz_file/viz.ipynb code cell 1 (reduce_duplicate, get_score,
// get_data_EN, get_data_ZH), the notebook of the first paper version's
// heatmaps, with json_repair 0.10.1 (see RepairLoadsPaperEra).
//
// RuleCurrent: commit 32e16f2c2d2be9f38d710e782236315e0821a038, viz.ipynb
// code cell 1 (get_reasoning_score, reduce_duplicate, get_data_EN,
// get_data_ZH), with json_repair as of mangiucugna/json_repair commit
// 600ede6be7d125d14812be3bbd7ef3e0b526a84e (see RepairLoads).
//
// Both take the pivot mean as pandas 2 computes DataFrame.mean(axis=None).
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

// Rule is the version of the reference notebook that scores the answers.
// The generator has the same split (datasets/countingstars Options.Version).
type Rule string

const (
	// RulePaper is the paper-era notebook (viz_file/viz.ipynb at 0fddb90,
	// 2024-03-25), which made the published heatmaps: every answer goes
	// through json_repair.loads (json_repair 0.10.1, RepairLoadsPaperEra);
	// the answer must be a string; Acquisition only (the notebook has no
	// Reasoning test), and a reference shorter than m raises IndexError.
	// It is the default.
	RulePaper Rule = "paper"
	// RuleCurrent is the later notebook (viz.ipynb at 32e16f2c): an
	// unfenced EN answer is parsed with plain json.loads (ZH and fenced
	// answers with json_repair, RepairLoads), and an answer that is already
	// a JSON object is used as it is; Acquisition and Reasoning (the
	// default for Reasoning).
	RuleCurrent Rule = "current"
)

// MetadataRule is the sample metadata key holding a sample's Rule.
const MetadataRule = "scoring_rule"

// ParseRule reads a rule name, "paper" or "current".
func ParseRule(name string) (Rule, error) {
	switch r := Rule(name); r {
	case RulePaper, RuleCurrent:
		return r, nil
	}
	return "", fmt.Errorf("countingstars: unknown scoring rule %q (want paper or current)", name)
}

// ResolveRule is the rule a name selects for a test type, checked with
// CheckTest. The empty name is the default, the notebook version that
// scored the published figures of that test: RulePaper for Acquisition,
// RuleCurrent for Reasoning (the paper-era notebook has no Reasoning).
func ResolveRule(name, testType string) (Rule, error) {
	if name == "" {
		if testType == "Reasoning" {
			return RuleCurrent, nil
		}
		name = string(RulePaper)
	}
	r, err := ParseRule(name)
	if err != nil {
		return "", err
	}
	return r, CheckTest(r, testType)
}

// RuleOf reads a sample's rule from its metadata: MetadataRule (absent
// is the default) for test_type, as ResolveRule.
func RuleOf(metadata map[string]any) (Rule, error) {
	name := ""
	if v, ok := metadata[MetadataRule]; ok && v != nil {
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("countingstars: metadata %s is a %T, not a rule name", MetadataRule, v)
		}
		name = s
	}
	testType, _ := metadata["test_type"].(string)
	return ResolveRule(name, testType)
}

// CheckTest reports whether rule can score a test type: RulePaper has
// Acquisition only.
func CheckTest(rule Rule, testType string) error {
	if _, err := ParseRule(string(rule)); err != nil {
		return err
	}
	switch testType {
	case "Acquisition":
		return nil
	case "Reasoning":
		if rule == RuleCurrent {
			return nil
		}
		return errors.New("countingstars: the paper-era scoring rule (viz_file/viz.ipynb@0fddb90) has no Reasoning test; use scoring rule current")
	}
	return fmt.Errorf("countingstars: unknown test type %q (want Acquisition or Reasoning)", testType)
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

// Column is the reference's column label: int(contextSize / scalar),
// truncated toward zero ("Context Size"). Under RulePaper it is
// int(sky_size / 0.725) for ZH and the sky size itself for EN ("Sky Size";
// an integer in the result files, and required to be one here).
func Column(rule Rule, lang, testType string, contextSize float64) (int64, error) {
	if err := CheckTest(rule, testType); err != nil {
		return 0, err
	}
	s, err := Scalar(lang, testType)
	if err != nil {
		return 0, err
	}
	if rule == RulePaper && lang == "EN" {
		if contextSize != math.Trunc(contextSize) {
			return 0, fmt.Errorf("countingstars: sky size %v is not an integer", contextSize)
		}
		s = 1
	}
	c := math.Trunc(contextSize / s)
	if math.IsNaN(c) || math.Abs(c) > 1<<62 {
		return 0, fmt.Errorf("countingstars: context size %v out of range", contextSize)
	}
	return int64(c), nil
}

// Predicted extracts the predicted list as the rule's notebook does and
// returns the value under the language's key (the reference raises when
// the answer does not parse to an object with that key, and so does
// Predicted). answer is the result file's "answer": a string, or under
// RuleCurrent an already-parsed JSON value (map[string]any, []any, ...).
//
// Both rules first test whether the answer contains "```"; if so, every
// "```" and every "json" is removed, the text stripped and parsed with
// json_repair. Otherwise RulePaper parses with json_repair too
// (RepairLoadsPaperEra) and RuleCurrent with json.loads (EN) or
// json_repair (ZH, RepairLoads), falling back to answer[key] when that
// raises: an object answer is used as it is, a string answer that does not
// parse raises there.
func Predicted(rule Rule, lang string, answer any) (any, error) {
	key, err := answerKey(lang)
	if err != nil {
		return nil, err
	}
	if _, err := ParseRule(string(rule)); err != nil {
		return nil, err
	}
	text, isString := answer.(string)
	if !isString {
		return parsedAnswer(rule, key, answer)
	}
	var v any
	switch {
	case strings.Contains(text, "```"):
		text = strings.TrimFunc(strings.ReplaceAll(strings.ReplaceAll(text, "```", ""), "json", ""), isSpace)
		if rule == RulePaper {
			v, err = RepairLoadsPaperEra(text)
		} else {
			v, err = RepairLoads(text)
		}
	case rule == RulePaper:
		v, err = RepairLoadsPaperEra(text)
	case lang == "EN":
		v, err = pyjson.Loads(text)
		if err == nil {
			v = typedInts(text, v)
		}
	default:
		v, err = RepairLoads(text)
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

// parsedAnswer handles an answer that is not a string. The paper-era
// notebook calls json_repair.loads on it, which raises (AttributeError:
// no strip); a number or null already fails its `"```" in answer`.
// The current notebook's `"```" in answer` tests an object's keys or a
// list's items (a match leads to .replace, which raises), json.loads and
// json_repair.loads raise on a non-string, and its fallback answer[key]
// works for an object holding key only.
func parsedAnswer(rule Rule, key string, answer any) (any, error) {
	if rule == RulePaper {
		return nil, fmt.Errorf("countingstars: answer is a %s, not a string: the paper-era notebook raises (json_repair.loads needs text; the current scoring rule takes a parsed answer)", pyType(answer))
	}
	switch a := answer.(type) {
	case map[string]any:
		if _, ok := a["```"]; ok {
			return nil, errors.New("countingstars: answer is an object with key \"```\" (the reference calls .replace on it and raises)")
		}
		pred, ok := a[key]
		if !ok {
			return nil, fmt.Errorf("countingstars: answer has no key %q (the reference raises KeyError)", key)
		}
		return pred, nil
	case []any:
		return nil, errors.New("countingstars: answer is a list (the reference's answer[key] raises TypeError)")
	}
	return nil, fmt.Errorf("countingstars: answer is a %s (the reference raises TypeError)", pyType(answer))
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

// Score scores one answer as the rule's get_data_EN/get_data_ZH do: for
// counting times i = 1..m, Acquisition scores 1 when reference[i-1] is
// among the reduced predictions; a reference shorter than m scores 0
// under RuleCurrent (the index is inside its try) and is an error under
// RulePaper (get_score's argument raises IndexError). Reasoning
// (RuleCurrent only) scores by get_reasoning_score against the fixed
// a_stars/r_stars "32" tables (1 for the right count only, 0.5 for both,
// 0.25 for the wrong one only, else 0; m > 32 is an error, as the
// reference's index raises). answer is as Predicted takes it.
func Score(rule Rule, lang, testType string, m int, answer any, reference []float64) ([]float64, error) {
	if err := CheckTest(rule, testType); err != nil {
		return nil, err
	}
	if _, err := Scalar(lang, testType); err != nil {
		return nil, err
	}
	if testType == "Reasoning" && m > len(aStars) {
		return nil, fmt.Errorf("countingstars: Reasoning with m=%d > 32 (the reference's a_stars index raises)", m)
	}
	raw, err := Predicted(rule, lang, answer)
	if err != nil {
		return nil, err
	}
	pred, err := ReduceDuplicate(raw, m)
	if err != nil {
		return nil, err
	}
	if rule == RulePaper && m > len(reference) {
		return nil, fmt.Errorf("countingstars: %d reference counts for m=%d (the paper-era get_score argument raises IndexError)", len(reference), m)
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

// ScoreSample scores a generated sample's prediction: the sample's
// metadata gives lang, test_type and the rule (RuleOf), references the m
// counts.
func ScoreSample(pred string, references []float64, metadata map[string]any) ([]float64, error) {
	rule, err := RuleOf(metadata)
	if err != nil {
		return nil, err
	}
	lang, _ := metadata["lang"].(string)
	testType, _ := metadata["test_type"].(string)
	return Score(rule, lang, testType, len(references), pred, references)
}
