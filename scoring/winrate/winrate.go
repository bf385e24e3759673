// Package winrate reproduces AlpacaEval's pairwise win rate.
//
// Reference: tatsu-lab/alpaca_eval, commit
// cd543a149df89434d8a54582c0151c0b945c3d20, src/alpaca_eval/metrics/winrate.py
// (get_winrate, pairwise_to_winrate) and src/alpaca_eval/metrics/helpers.py
// (BaseScoringRule.describe_head2head, AbsoluteScoringRule,
// ZeroOneScoringRule), as run with pandas without bottleneck (the default
// pip install), whose mean and standard error use numpy's pairwise sum.
package winrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// Result is the output of get_winrate. Win rates and the standard error are
// percentages; NaN (no kept preference, or fewer than two for the standard
// error) is written to JSON as null.
type Result struct {
	// WinRate is 100 * mean(preference - 1) over kept preferences.
	WinRate Float `json:"win_rate"`
	// StandardError is 100 * the sample standard error (ddof=1) of the same.
	StandardError Float `json:"standard_error"`
	// NWins counts kept preferences above 1.5.
	NWins int `json:"n_wins"`
	// NWinsBase counts kept preferences below 1.5.
	NWinsBase int `json:"n_wins_base"`
	// NDraws counts preferences equal to 1.5 or 0, before anything is dropped.
	NDraws int `json:"n_draws"`
	// NTotal counts kept preferences (those in [1, 2] after 0 -> 1.5).
	NTotal int `json:"n_total"`
	// DiscreteWinRate is the win rate after ZeroOneScoringRule's
	// preprocessing: 1.5 -> 0, then each value rounded half to even, so that
	// wins count 1, losses 0 and draws (including values rounding to 0) 0.5.
	DiscreteWinRate Float `json:"discrete_win_rate"`
}

// Float is a float64 that marshals NaN and infinities as JSON null.
type Float float64

// MarshalJSON writes f, or null when f is not finite.
func (f Float) MarshalJSON() ([]byte, error) {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(x)
}

// ErrNoPreferences is returned for an empty input: the reference's
// annotations frame then has no "preference" column and get_winrate raises
// KeyError. Input whose preferences are all missing (NaN) is not an error:
// see Winrate.
var ErrNoPreferences = errors.New("winrate: no preference at all (the reference raises KeyError)")

// PairwiseToWinrate is pairwise_to_winrate: prefs holds one preference per
// instruction, 2 = model wins, 1 = baseline wins, 1.5 or 0 = draw, NaN =
// missing. Values outside [1, 2] are dropped (after mapping 0 to 1.5).
// It panics never; inputs the reference cannot score are handled by Winrate.
func PairwiseToWinrate(prefs []float64) Result {
	r, err := Winrate(prefs)
	if err != nil {
		nan := Float(math.NaN())
		return Result{WinRate: nan, StandardError: nan, DiscreteWinRate: nan}
	}
	return r
}

// Winrate is PairwiseToWinrate with the reference's failures reported: an
// error for an empty input (ErrNoPreferences) and when the discrete rule's
// cast to Int64 fails, that is when a rounded value is infinite or outside
// the int64 range ("cannot safely cast non-equivalent float64 to int64").
//
// Preferences that are all missing are a float64 column of NaN, as
// alpaca_eval's annotators hand them to get_winrate: every value fails
// validate_alpacaeval_preference(is_allow_nan=False) in
// describe_head2head, so both scoring rules describe an empty series:
// win rates and standard error NaN (null in JSON), every count 0. The
// ZeroOneScoringRule's .round().astype(Int64) turns NaN into <NA>, which
// its draw test and .astype(float) carry through as NaN.
func Winrate(prefs []float64) (Result, error) {
	if len(prefs) == 0 {
		return Result{}, ErrNoPreferences
	}
	abs := describe(absolutePreprocess(prefs))
	disc, err := zeroOnePreprocess(prefs)
	if err != nil {
		return Result{}, err
	}
	abs.DiscreteWinRate = describe(disc).WinRate
	return abs, nil
}

// absolutePreprocess is AbsoluteScoringRule.preprocess_predictions:
// replace 0 (and -0) by 1.5.
func absolutePreprocess(prefs []float64) []float64 {
	out := make([]float64, len(prefs))
	for i, p := range prefs {
		if p == 0 {
			p = 1.5
		}
		out[i] = p
	}
	return out
}

// zeroOnePreprocess is ZeroOneScoringRule.preprocess_predictions:
// replace 1.5 by 0, round half to even, cast to nullable Int64.
func zeroOnePreprocess(prefs []float64) ([]float64, error) {
	out := make([]float64, len(prefs))
	for i, p := range prefs {
		if p == 1.5 {
			p = 0
		}
		p = math.RoundToEven(p)
		if math.IsInf(p, 0) || p >= 0x1p63 || p < -0x1p63 {
			return nil, fmt.Errorf("winrate: discrete win rate: preference %v: cannot safely cast non-equivalent float64 to int64 (the reference raises)", prefs[i])
		}
		out[i] = p
	}
	return out, nil
}

// describe is BaseScoringRule.describe_head2head after preprocessing.
func describe(p []float64) Result {
	var r Result
	kept := make([]float64, 0, len(p))
	for _, x := range p {
		if x == 1.5 || x == 0 {
			r.NDraws++
		}
		if x == 0 {
			x = 1.5
		}
		if x >= 1 && x <= 2 { // validate_alpacaeval_preference, NaN fails
			kept = append(kept, x-1)
		}
	}
	for _, x := range kept {
		if x > 0.5 {
			r.NWins++
		} else if x < 0.5 {
			r.NWinsBase++
		}
	}
	r.NTotal = len(kept)
	r.WinRate = Float(pandasMean(kept) * 100)
	r.StandardError = Float(pandasSem(kept) * 100)
	return r
}
