package winrate

import (
	"encoding/json"
	"fmt"
	"math"

	"tally/scoring"
)

// LineMetrics returns the package's line metrics: alpaca-winrate.
func LineMetrics() []scoring.LineMetric {
	return []scoring.LineMetric{{
		Name: "alpaca-winrate",
		Doc: "AlpacaEval win rate (tatsu-lab/alpaca_eval@cd543a14 src/alpaca_eval/metrics/winrate.py " +
			"get_winrate/pairwise_to_winrate with helpers.py scoring rules), aggregate only. Input lines: " +
			`{"preference": number or null} (2 = model wins, 1 = baseline wins, 1.5 or 0 = draw, null = missing). ` +
			`Output: {"win_rate","standard_error","n_wins","n_wins_base","n_draws","n_total","discrete_win_rate"}, ` +
			"percentages for the rates, null where the reference gives NaN.",
		Aggregate: aggregateLines,
	}}
}

type prefLine struct {
	Preference *float64 `json:"preference"`
}

func aggregateLines(lines []json.RawMessage) (any, error) {
	prefs := make([]float64, len(lines))
	for i, l := range lines {
		var p prefLine
		if err := json.Unmarshal(l, &p); err != nil {
			return nil, fmt.Errorf("alpaca-winrate: reading line %d: %w", i+1, err)
		}
		prefs[i] = math.NaN()
		if p.Preference != nil {
			prefs[i] = *p.Preference
		}
	}
	r, err := Winrate(prefs)
	if err != nil {
		return nil, fmt.Errorf("alpaca-winrate: %w", err)
	}
	return r, nil
}
