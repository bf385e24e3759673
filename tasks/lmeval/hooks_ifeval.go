package lmeval

import (
	"fmt"
	"math"

	"tally/scoring"
)

// A port of IFEval's aggregation (lm-eval 4e7e0d47, ifeval/utils.py and
// ifeval/multilingual/utils.py agg_inst_level_acc: the items, lists of
// booleans, flattened and averaged). Its process_results (the instruction
// checkers, with langdetect and nltk) has no Go port: the Python bridge
// runs it. Each sample's list is kept as two statistics, the count of its
// true items and its length (scoring.CorpusStatKey: "inst_level_strict_acc#0,none"),
// so that any selection of samples is aggregated as lm-eval aggregates it:
// the sum of the first over the sum of the second.

// instLevelMetrics are IFEval's metrics that agg_inst_level_acc
// aggregates, registered as corpus metrics of those two statistics.
var instLevelMetrics = []string{"inst_level_strict_acc", "inst_level_loose_acc"}

func init() {
	def := map[string]hookDef{"agg_inst_level_acc": func(m *pyModule, kw *Map) (*pyHook, error) {
		if kw.Len() > 0 {
			return nil, fmt.Errorf("takes no keyword arguments here")
		}
		return &pyHook{aggregation: true, flatMean: true}, nil
	}}
	registerHookModule(&hookModule{where: "ifeval/utils.py", defs: def},
		"1ab8f14808c826f93f2364883487ed63cf4267980bf4761fda8053899c013632") // ifeval/ and leaderboard/ifeval/
	registerHookModule(&hookModule{where: "ifeval/multilingual/utils.py", defs: def},
		"0d4502d81696308feb7665fce5e06d976e979d6bc5669d6ff74c6c20a9b3bc97")
	for _, name := range instLevelMetrics {
		scoring.RegisterCorpus(scoring.CorpusMetric{Name: name, Stats: 2, HigherIsBetter: true,
			Reference: "lm-evaluation-harness 4e7e0d47 lm_eval/tasks/ifeval/utils.py agg_inst_level_acc",
			// The items come from process_results, not a prediction.
			Sample: func(string, []string) []float64 { return []float64{math.NaN(), math.NaN()} },
			// sum(flat_items) / len(flat_items); Python raises
			// ZeroDivisionError on no items, where this is NaN.
			Score: func(sum []float64) float64 {
				if sum[1] == 0 {
					return math.NaN()
				}
				return sum[0] / sum[1]
			}})
	}
}

// flatStats are a sample's statistics for agg_inst_level_acc: the count
// of true (non-zero) items of its list and the list's length.
func flatStats(v any) ([]float64, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is not a list (agg_inst_level_acc flattens lists)", pyStr(v))
	}
	var trues float64
	for _, e := range list {
		x, ok := number(e)
		if !ok {
			return nil, fmt.Errorf("item %s is not a number or bool", pyStr(e))
		}
		trues += x
	}
	return []float64{trues, float64(len(list))}, nil
}
