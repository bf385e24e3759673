package tasks

import (
	"encoding/json"
	"fmt"
	"strings"

	"tally/datasets"
	"tally/datasets/judge"
	"tally/generate"
	scorestars "tally/scoring/countingstars"
	scoredrop "tally/scoring/drop"
	scoreleval "tally/scoring/leval"
	"tally/scoring/rouge"
	"tally/scoring/stats"
)

// metricFunc scores one prediction of a sample; keys are score names.
type metricFunc func(pred string, s datasets.Sample) (map[string]float64, error)

// MetricNames lists the metrics a task config may name.
func MetricNames() []string {
	return []string{"3c3h", "counting-stars", "drop", "drop-fixed", "exact_match", "f1", "judge-preference", "leval", "rouge"}
}

func lookupMetric(name string) (metricFunc, bool) {
	switch name {
	case "exact_match":
		return withStrings(func(pred string, refs []string) map[string]float64 {
			return map[string]float64{"exact_match": ExactMatch(pred, refs)}
		}), true
	case "f1":
		return withStrings(func(pred string, refs []string) map[string]float64 {
			return map[string]float64{"f1": TokenF1(pred, refs)}
		}), true
	case "rouge":
		return withStrings(func(pred string, refs []string) map[string]float64 {
			sc := rouge.ScoreMulti(pred, refs)
			return map[string]float64{"rouge1": sc.Rouge1.FMeasure, "rouge2": sc.Rouge2.FMeasure,
				"rougeL": sc.RougeL.FMeasure, "rougeLsum": sc.RougeLsum.FMeasure}
		}), true
	case "leval":
		return func(pred string, s datasets.Sample) (map[string]float64, error) {
			var refs []string
			if err := json.Unmarshal(s.References, &refs); err != nil || len(refs) != 1 {
				return nil, fmt.Errorf("references of %s: want one L-Eval reference", s.ID)
			}
			task, _ := s.Metadata["task"].(string)
			item, err := scoreleval.ScoreItem(task, pred, refs[0])
			if err != nil {
				return nil, err
			}
			return map[string]float64{"leval": item.Score}, nil
		}, true
	case "counting-stars":
		return func(pred string, s datasets.Sample) (map[string]float64, error) {
			var refs []float64
			if err := json.Unmarshal(s.References, &refs); err != nil {
				return nil, fmt.Errorf("references of %s are not star counts: %w", s.ID, err)
			}
			scores, err := scorestars.ScoreSample(pred, refs, s.Metadata)
			if err != nil {
				// The reference raises on an answer it cannot parse; as a
				// task metric that answer scores 0 on every star.
				return map[string]float64{"counting_stars": 0}, nil
			}
			return map[string]float64{"counting_stars": stats.Mean(scores)}, nil
		}, true
	case "judge-preference":
		// The judge's answer parsed as AlpacaEval's ranking parser does
		// (datasets/judge.ParsePreference), as "win": 1 model, 0 baseline,
		// 0.5 draw (identical outputs, not judged). An answer that does not
		// parse gets no "win" (AlpacaEval records NaN and drops it) and
		// "parsed" 0; the mean of "win" over both orders is the win rate.
		return func(pred string, s datasets.Sample) (map[string]float64, error) {
			ref, err := judge.ParsePairReference(s.References)
			if err != nil {
				return nil, err
			}
			if ref.Identical {
				return map[string]float64{"win": 0.5, "parsed": 1}, nil
			}
			p, ok := judge.ParsePreference(pred, ref.Order)
			if !ok {
				return map[string]float64{"parsed": 0}, nil
			}
			return map[string]float64{"win": p - 1, "parsed": 1}, nil
		}, true
	case "3c3h":
		// The judge's scores extracted and weighted as 3C3H's jury.py does
		// (datasets/judge.ScoreThreeC3H); an unparseable answer gets only
		// "3c3h.parsed" 0.
		return func(pred string, s datasets.Sample) (map[string]float64, error) {
			var ref judge.ThreeC3HReference
			if err := json.Unmarshal(s.References, &ref); err != nil {
				return nil, fmt.Errorf("references of %s: %w", s.ID, err)
			}
			sc, err := judge.ScoreThreeC3H(pred, ref.Round)
			if err != nil {
				return map[string]float64{"3c3h.parsed": 0}, nil
			}
			out := map[string]float64{"3c3h.parsed": 1}
			for k, v := range sc {
				out["3c3h."+k] = v
			}
			return out, nil
		}, true
	case "drop", "drop-fixed":
		fixed := name == "drop-fixed"
		return func(pred string, s datasets.Sample) (map[string]float64, error) {
			var answers [][]string
			if err := json.Unmarshal(s.References, &answers); err != nil {
				return nil, fmt.Errorf("references of %s are not DROP answer lists: %w", s.ID, err)
			}
			em, f1 := scoredrop.Score(pred, answers)
			if fixed {
				em, f1 = scoredrop.ScoreFixed(pred, answers)
			}
			return map[string]float64{name + ".em": em, name + ".f1": f1}, nil
		}, true
	}
	return nil, false
}

func withStrings(f func(pred string, refs []string) map[string]float64) metricFunc {
	return func(pred string, s datasets.Sample) (map[string]float64, error) {
		var refs []string
		if err := json.Unmarshal(s.References, &refs); err != nil {
			return nil, fmt.Errorf("references of %s are not a list of strings: %w", s.ID, err)
		}
		return f(pred, refs), nil
	}
}

// Scorer returns the scorer that applies every metric of the task.
func (c *Config) Scorer() generate.Scorer {
	fs := make([]metricFunc, 0, len(c.Metrics))
	for _, m := range c.Metrics {
		f, _ := lookupMetric(m) // validated when the config was read
		fs = append(fs, f)
	}
	return func(pred string, s datasets.Sample) (map[string]float64, error) {
		out := map[string]float64{}
		for _, f := range fs {
			vals, err := f(pred, s)
			if err != nil {
				return nil, err
			}
			for k, v := range vals {
				out[k] = v
			}
		}
		return out, nil
	}
}

// ExactMatch is 1 when the prediction, stripped of surrounding white space,
// equals one of the references, stripped likewise, and 0 otherwise: the
// exact_match of lm-evaluation-harness (lm_eval/api/metrics.py
// exact_match_hf_evaluate with its default options: case, punctuation and
// numbers all significant) after the "strip" filter its generative tasks
// apply to the response.
func ExactMatch(pred string, refs []string) float64 {
	p := strings.TrimSpace(pred)
	for _, r := range refs {
		if p == strings.TrimSpace(r) {
			return 1
		}
	}
	return 0
}

// TokenF1 is the SQuAD v1.1 token F1 (rajpurkar/SQuAD-explorer,
// evaluate-v1.1.py, f1_score with normalize_answer: lower case, ASCII
// punctuation removed, articles a/an/the removed, white space collapsed),
// maximised over the references as metric_max_over_ground_truths does.
func TokenF1(pred string, refs []string) float64 {
	best := 0.0
	p := strings.Fields(squadNormalize(pred))
	for _, r := range refs {
		best = max(best, tokenF1(p, strings.Fields(squadNormalize(r))))
	}
	return best
}

func tokenF1(pred, ref []string) float64 {
	counts := map[string]int{}
	for _, t := range ref {
		counts[t]++
	}
	same := 0
	for _, t := range pred {
		if counts[t] > 0 {
			counts[t]--
			same++
		}
	}
	if same == 0 {
		return 0
	}
	prec := float64(same) / float64(len(pred))
	rec := float64(same) / float64(len(ref))
	return 2 * prec * rec / (prec + rec)
}

func squadNormalize(s string) string {
	s = strings.ToLower(s)
	var b strings.Builder
	for _, r := range s {
		if r < 128 && strings.ContainsRune(`!"#$%&'()*+,-./:;<=>?@[\]^_`+"`"+`{|}~`, r) {
			continue
		}
		b.WriteRune(r)
	}
	words := strings.Fields(b.String())
	out := words[:0]
	for _, w := range words {
		if w != "a" && w != "an" && w != "the" {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}
