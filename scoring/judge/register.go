package judge

import (
	"tally/datasets"
	"tally/datasets/judge"
	"tally/scoring"
)

// alpacaEval is the implementation judge-preference reproduces.
const alpacaEval = "tatsu-lab/alpaca_eval@cd543a14 src/alpaca_eval/completion_parsers.py ranking_parser and metrics/winrate.py"

func init() {
	for _, l := range LineMetrics() {
		scoring.Register(scoring.Metric{Name: l.Name, Version: "1", Reference: reference(l.Name), Doc: l.Doc, Line: &l})
	}
	scoring.Register(scoring.Metric{
		Name:      "judge-preference",
		Version:   "1",
		Reference: alpacaEval,
		Doc: "The judge's answer to one AlpacaEval pair in one order, parsed as AlpacaEval's ranking parser does " +
			`(tally/datasets/judge.ParsePreference). Output: {"win": 1 model, 0 baseline, 0.5 identical outputs (not judged), ` +
			`"parsed": 1}; an answer that does not parse gets only {"parsed": 0} (AlpacaEval records NaN and drops it). ` +
			`The mean of "win" over both orders is the win rate. References: {"order": "ab"|"ba", "identical": bool}.`,
		Score: preference,
	})
}

// reference names what each judge statistic reproduces.
func reference(name string) string {
	if name == "kappa" {
		return "scikit-learn sklearn/metrics/_classification.py cohen_kappa_score, release 1.2.1"
	}
	// pairwise and self-preference follow no single published
	// implementation: their rules are stated in their Doc.
	return "no reference implementation: the rules stated in the metric's doc, percentile bootstrap from tally/scoring/stats"
}

// preference scores one judge answer of an AlpacaEval pair sample.
func preference(pred string, s datasets.Sample) (map[string]float64, error) {
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
}
