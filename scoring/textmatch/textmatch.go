// Package textmatch holds the plain text-matching metrics: exact_match as
// lm-evaluation-harness computes it and the SQuAD v1.1 token F1.
package textmatch

import (
	"strings"

	"tally/datasets"
	"tally/scoring"
)

func init() {
	scoring.Register(scoring.Metric{
		Name:      "exact_match",
		Version:   "1",
		Reference: "EleutherAI/lm-evaluation-harness lm_eval/api/metrics.py exact_match_hf_evaluate (default options) after the \"strip\" filter",
		Doc:       `1 when the stripped prediction equals a stripped reference, else 0. Output: {"exact_match"}.`,
		Score: func(pred string, s datasets.Sample) (map[string]float64, error) {
			refs, err := scoring.StringRefs(s)
			if err != nil {
				return nil, err
			}
			return map[string]float64{"exact_match": ExactMatch(pred, refs)}, nil
		},
	})
	scoring.Register(scoring.Metric{
		Name:      "f1",
		Version:   "1",
		Reference: "rajpurkar/SQuAD-explorer evaluate-v1.1.py f1_score with normalize_answer, metric_max_over_ground_truths",
		Doc:       `SQuAD v1.1 token F1, the maximum over the references. Output: {"f1"}.`,
		Score: func(pred string, s datasets.Sample) (map[string]float64, error) {
			refs, err := scoring.StringRefs(s)
			if err != nil {
				return nil, err
			}
			return map[string]float64{"f1": TokenF1(pred, refs)}, nil
		},
	})
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
	same := Shared(pred, ref)
	if same == 0 {
		return 0
	}
	prec := float64(same) / float64(len(pred))
	rec := float64(same) / float64(len(ref))
	return 2 * prec * rec / (prec + rec)
}

// Shared counts the tokens pred and ref have in common, as a multiset
// (collections.Counter(pred) & Counter(ref), summed): the overlap every
// token F1 rests on.
func Shared(pred, ref []string) int {
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
	return same
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
