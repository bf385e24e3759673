package judge

import (
	"fmt"
	"math"

	"tally/scoring/stats"
)

// Verdict is a pairwise judge verdict about two outputs shown as A and B.
type Verdict string

// The verdicts a pairwise judge gives.
const (
	A   Verdict = "A"
	B   Verdict = "B"
	Tie Verdict = "tie"
)

// ParseVerdict accepts "A", "B" and "tie".
func ParseVerdict(s string) (Verdict, error) {
	switch v := Verdict(s); v {
	case A, B, Tie:
		return v, nil
	}
	return "", fmt.Errorf("judge: verdict %q is not A, B or tie", s)
}

// Swap exchanges the positions: A becomes B and B becomes A.
func (v Verdict) Swap() Verdict {
	switch v {
	case A:
		return B
	case B:
		return A
	}
	return v
}

// Pair is one comparison judged in both orders: AB with the first model's
// output shown as A, BA with the outputs swapped (so BA's "A" is the
// second model).
type Pair struct {
	AB, BA Verdict
}

// Consistent reports whether both orders name the same winner (or both a
// tie) once BA is mapped back to the original positions.
func (p Pair) Consistent() bool { return p.AB == p.BA.Swap() }

// Verdict is the agreed verdict in the original positions, and false when
// the two orders disagree.
func (p Pair) Verdict() (Verdict, bool) {
	if !p.Consistent() {
		return "", false
	}
	return p.AB, true
}

// Policy says how inconsistent pairs and ties count towards a win rate.
type Policy struct {
	// Inconsistent is "tie" (the default: a pair whose orders disagree
	// counts as a tie, as in MT-Bench's pairwise judging) or "drop".
	Inconsistent string
	// Ties is "half" (the default: a tie is worth half a win) or "drop"
	// (ties, including inconsistent pairs counted as ties, are left out).
	Ties string
}

func (p Policy) normalised() (Policy, error) {
	if p.Inconsistent == "" {
		p.Inconsistent = "tie"
	}
	if p.Ties == "" {
		p.Ties = "half"
	}
	if p.Inconsistent != "tie" && p.Inconsistent != "drop" {
		return p, fmt.Errorf("judge: inconsistent policy %q (want tie or drop)", p.Inconsistent)
	}
	if p.Ties != "half" && p.Ties != "drop" {
		return p, fmt.Errorf("judge: ties policy %q (want half or drop)", p.Ties)
	}
	return p, nil
}

// Summary aggregates pairs judged in both orders, from the first model's
// side (A in the AB order).
type Summary struct {
	// N is the number of pairs.
	N int `json:"n"`
	// Consistency is the fraction of pairs whose two orders agree.
	Consistency float64 `json:"consistency"`
	// NWins, NLosses and NTies count consistent verdicts for the first
	// model; NInconsistent counts the rest.
	NWins         int `json:"n_wins"`
	NLosses       int `json:"n_losses"`
	NTies         int `json:"n_ties"`
	NInconsistent int `json:"n_inconsistent"`
	// NScored is the number of pairs the win rate is over, after the policy.
	NScored int `json:"n_scored"`
	// WinRate is the mean score of the first model over scored pairs (win
	// 1, tie 0.5, loss 0), with a percentile bootstrap 95% interval.
	WinRate    float64 `json:"win_rate"`
	WinRateLow float64 `json:"win_rate_low"`
	WinRateHi  float64 `json:"win_rate_high"`
	// FirstPosition is the fraction of the 2N single-order verdicts that
	// are not ties and pick position A (0.5 for a judge without position
	// bias); NaN when every verdict is a tie.
	FirstPosition float64 `json:"first_position"`
}

// Summarise scores pairs under policy, with a bootstrap of the win rate
// over scored pairs (resamples draws, seeded).
func Summarise(pairs []Pair, policy Policy, resamples int, seed uint64) (Summary, error) {
	pol, err := policy.normalised()
	if err != nil {
		return Summary{}, err
	}
	s := Summary{N: len(pairs)}
	var scores []float64
	first, decided := 0, 0
	for _, p := range pairs {
		for _, v := range []Verdict{p.AB, p.BA} {
			if _, err := ParseVerdict(string(v)); err != nil {
				return Summary{}, err
			}
			if v != Tie {
				decided++
				if v == A {
					first++
				}
			}
		}
		v, ok := p.Verdict()
		switch {
		case !ok:
			s.NInconsistent++
			if pol.Inconsistent == "tie" && pol.Ties == "half" {
				scores = append(scores, 0.5)
			}
		case v == A:
			s.NWins++
			scores = append(scores, 1)
		case v == B:
			s.NLosses++
			scores = append(scores, 0)
		default:
			s.NTies++
			if pol.Ties == "half" {
				scores = append(scores, 0.5)
			}
		}
	}
	s.NScored = len(scores)
	s.Consistency = math.NaN()
	if s.N > 0 {
		s.Consistency = float64(s.N-s.NInconsistent) / float64(s.N)
	}
	iv := stats.Bootstrap(scores, resamples, 0.95, seed)
	s.WinRate, s.WinRateLow, s.WinRateHi = iv.Estimate, iv.Low, iv.High
	s.FirstPosition = math.NaN()
	if decided > 0 {
		s.FirstPosition = float64(first) / float64(decided)
	}
	return s, nil
}
