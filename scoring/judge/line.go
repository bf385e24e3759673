package judge

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"

	"tally/scoring"
	"tally/scoring/stats"
)

// Defaults for the bootstrap options of the line metrics.
const (
	defaultResamples = 1000
	defaultSeed      = 0
)

// LineMetrics returns the package's line metrics: kappa, pairwise and
// self-preference.
func LineMetrics() []scoring.LineMetric {
	return []scoring.LineMetric{kappaMetric(""), pairwiseMetric(Policy{}, defaultResamples, defaultSeed), selfPrefMetric("", defaultResamples, defaultSeed)}
}

// nf is x for JSON, nil when x is NaN or infinite.
func nf(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

func interval(iv stats.Interval) map[string]*float64 {
	return map[string]*float64{"estimate": nf(iv.Estimate), "low": nf(iv.Low), "high": nf(iv.High)}
}

func unknownOptions(name string, opts map[string]string, known ...string) error {
	for k := range opts {
		ok := false
		for _, kn := range known {
			ok = ok || k == kn
		}
		if !ok {
			return fmt.Errorf("%s: unknown option %q", name, k)
		}
	}
	return nil
}

func bootstrapOptions(name string, opts map[string]string) (int, uint64, error) {
	n, seed := defaultResamples, uint64(defaultSeed)
	if v, ok := opts["resamples"]; ok {
		x, err := strconv.Atoi(v)
		if err != nil || x < 0 {
			return 0, 0, fmt.Errorf("%s: option resamples=%q: want a non-negative integer", name, v)
		}
		n = x
	}
	if v, ok := opts["seed"]; ok {
		x, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: option seed=%q: %w", name, v, err)
		}
		seed = x
	}
	return n, seed, nil
}

func kappaMetric(weights string) scoring.LineMetric {
	return scoring.LineMetric{
		Name: "kappa",
		Doc: "Cohen's kappa between two raters (scikit-learn sklearn/metrics/_classification.py cohen_kappa_score, " +
			`release 1.2.1), aggregate only. Input lines: {"a": label, "b": label} (strings or integers). ` +
			`Option weights=linear|quadratic (default unweighted). Output: {"kappa"} (null when undefined).`,
		Options: []string{"weights"},
		Aggregate: func(lines []json.RawMessage) (any, error) {
			y1 := make([]Label, len(lines))
			y2 := make([]Label, len(lines))
			for i, l := range lines {
				var in struct {
					A any `json:"a"`
					B any `json:"b"`
				}
				if err := json.Unmarshal(l, &in); err != nil {
					return nil, fmt.Errorf("kappa: reading line %d: %w", i+1, err)
				}
				y1[i], y2[i] = in.A, in.B
			}
			k, err := CohenKappa(y1, y2, weights)
			if err != nil {
				return nil, err
			}
			return map[string]*float64{"kappa": nf(k)}, nil
		},
		Configure: func(opts map[string]string) (scoring.LineMetric, error) {
			if err := unknownOptions("kappa", opts, "weights"); err != nil {
				return scoring.LineMetric{}, err
			}
			w := opts["weights"]
			if w == "none" {
				w = Unweighted
			}
			if w != Unweighted && w != Linear && w != Quadratic {
				return scoring.LineMetric{}, fmt.Errorf("kappa: option weights=%q: want linear or quadratic", w)
			}
			return kappaMetric(w), nil
		},
	}
}

type pairLine struct {
	AB string `json:"ab"`
	BA string `json:"ba"`
}

func readPair(line json.RawMessage) (Pair, error) {
	var in pairLine
	if err := json.Unmarshal(line, &in); err != nil {
		return Pair{}, fmt.Errorf("pairwise: reading line: %w", err)
	}
	ab, err := ParseVerdict(in.AB)
	if err != nil {
		return Pair{}, fmt.Errorf("pairwise: ab: %w", err)
	}
	ba, err := ParseVerdict(in.BA)
	if err != nil {
		return Pair{}, fmt.Errorf("pairwise: ba: %w", err)
	}
	return Pair{ab, ba}, nil
}

func pairwiseMetric(policy Policy, resamples int, seed uint64) scoring.LineMetric {
	return scoring.LineMetric{
		Name: "pairwise",
		Doc: `Pairwise judging in both orders. Input: {"ab": "A"|"B"|"tie", "ba": ...}, ab with the first model shown as A, ` +
			`ba with the order swapped. Output: {"verdict": agreed verdict in the original positions or null, "consistent"}. ` +
			`Aggregate: {"win_rate" (first model; win 1, tie 0.5), "win_rate_low", "win_rate_high" (percentile bootstrap 95%), ` +
			`"consistency", "n", "n_wins", "n_losses", "n_ties", "n_inconsistent", "n_scored", "first_position"}. ` +
			"Options: inconsistent=tie|drop (default tie), ties=half|drop (default half), resamples (1000), seed (0).",
		Options: []string{"inconsistent", "ties", "resamples", "seed"},
		Score: func(line json.RawMessage) (any, error) {
			p, err := readPair(line)
			if err != nil {
				return nil, err
			}
			out := map[string]any{"verdict": nil, "consistent": p.Consistent()}
			if v, ok := p.Verdict(); ok {
				out["verdict"] = string(v)
			}
			return out, nil
		},
		Aggregate: func(lines []json.RawMessage) (any, error) {
			pairs := make([]Pair, len(lines))
			for i, l := range lines {
				p, err := readPair(l)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", i+1, err)
				}
				pairs[i] = p
			}
			s, err := Summarise(pairs, policy, resamples, seed)
			if err != nil {
				return nil, err
			}
			return map[string]any{
				"n": s.N, "consistency": nf(s.Consistency), "n_wins": s.NWins, "n_losses": s.NLosses,
				"n_ties": s.NTies, "n_inconsistent": s.NInconsistent, "n_scored": s.NScored,
				"win_rate": nf(s.WinRate), "win_rate_low": nf(s.WinRateLow), "win_rate_high": nf(s.WinRateHi),
				"first_position": nf(s.FirstPosition),
			}, nil
		},
		Configure: func(opts map[string]string) (scoring.LineMetric, error) {
			if err := unknownOptions("pairwise", opts, "inconsistent", "ties", "resamples", "seed"); err != nil {
				return scoring.LineMetric{}, err
			}
			pol, err := Policy{Inconsistent: opts["inconsistent"], Ties: opts["ties"]}.normalised()
			if err != nil {
				return scoring.LineMetric{}, err
			}
			n, seed, err := bootstrapOptions("pairwise", opts)
			if err != nil {
				return scoring.LineMetric{}, err
			}
			return pairwiseMetric(pol, n, seed), nil
		},
	}
}

func selfPrefMetric(family string, resamples int, seed uint64) scoring.LineMetric {
	return scoring.LineMetric{
		Name: "self-preference",
		Doc: `Self-preference bias of judge families, aggregate only. Input lines: {"item", "judge", "a", "b", "verdict"} ` +
			`(judge and output model families; verdict "A"|"B"|"tie", for two-order judging the agreed verdict with ` +
			`inconsistent pairs as "tie"). For family F, over comparisons with exactly one F output, F scores 1/0.5/0 for ` +
			`win/tie/loss; bias = mean score from F judges - mean score from other judges. Output per family: ` +
			`{"own", "others", "paired" (per-item difference) intervals (bootstrap 95%), "bias", counts}. ` +
			"Options: family (default: every judge family), resamples (1000), seed (0).",
		Options: []string{"family", "resamples", "seed"},
		Aggregate: func(lines []json.RawMessage) (any, error) {
			js := make([]Judgment, len(lines))
			fams := map[string]bool{}
			for i, l := range lines {
				var in struct {
					Item    string `json:"item"`
					Judge   string `json:"judge"`
					A       string `json:"a"`
					B       string `json:"b"`
					Verdict string `json:"verdict"`
				}
				if err := json.Unmarshal(l, &in); err != nil {
					return nil, fmt.Errorf("self-preference: reading line %d: %w", i+1, err)
				}
				js[i] = Judgment{in.Item, in.Judge, in.A, in.B, Verdict(in.Verdict)}
				fams[in.Judge] = true
			}
			var list []string
			if family != "" {
				list = []string{family}
			} else {
				for f := range fams {
					list = append(list, f)
				}
				sort.Strings(list)
			}
			out := map[string]any{}
			for _, f := range list {
				r, err := SelfPreference(js, f, resamples, seed)
				if err != nil {
					return nil, fmt.Errorf("self-preference: %w", err)
				}
				out[f] = map[string]any{"own": interval(r.Own), "others": interval(r.Others), "bias": nf(r.Bias),
					"n_own": r.NOwn, "n_others": r.NOther, "paired": interval(r.Paired), "n_paired": r.NPaired}
			}
			return out, nil
		},
		Configure: func(opts map[string]string) (scoring.LineMetric, error) {
			if err := unknownOptions("self-preference", opts, "family", "resamples", "seed"); err != nil {
				return scoring.LineMetric{}, err
			}
			n, seed, err := bootstrapOptions("self-preference", opts)
			if err != nil {
				return scoring.LineMetric{}, err
			}
			return selfPrefMetric(opts["family"], n, seed), nil
		},
	}
}
