package winrate

import "tally/scoring"

// reference is the implementation the AlpacaEval metrics reproduce.
const reference = "tatsu-lab/alpaca_eval@cd543a14 src/alpaca_eval/metrics/winrate.py and completion_parsers.py ranking_parser"

func init() {
	l := LineMetrics()[0]
	scoring.Register(scoring.Metric{Name: l.Name, Version: "1", Reference: reference, Doc: l.Doc, Line: &l})
}
