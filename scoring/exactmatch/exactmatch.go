// Package exactmatch is Hugging Face evaluate's exact_match metric as
// lm-evaluation-harness ports it (lm_eval/api/metrics.py
// exact_match_hf_evaluate, from evaluate's metrics/exact_match), with its
// options: regexes_to_ignore (each removed with re.sub, in order),
// ignore_case (str.lower), ignore_punctuation (string.punctuation removed)
// and ignore_numbers (string.digits removed). The strings pass through
// NumPy unicode arrays there, and two of their properties change results
// and are reproduced: trailing NUL characters are dropped, and
// np.char.lower keeps the array's item size, so a lower-cased string that
// grew (U+0130 becomes two characters) is cut to the longest original
// length. The score is the mean of the element-wise equalities.
package exactmatch

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"tally/internal/pyre"
	"tally/internal/pystr"
)

// Reference names the implementation reproduced.
const Reference = "EleutherAI/lm-evaluation-harness lm_eval/api/metrics.py exact_match_hf_evaluate (huggingface/evaluate metrics/exact_match/exact_match.py)"

// Options are exact_match's keyword arguments, as an lm-eval metric_list
// entry gives them.
type Options struct {
	// RegexesToIgnore nil is the option absent; an empty list is not the
	// same (the lists are then compared as Python lists).
	RegexesToIgnore   []string
	IgnoreCase        bool
	IgnorePunctuation bool
	IgnoreNumbers     bool
}

// Metric is exact_match with its options compiled.
type Metric struct {
	opt     Options
	ignored []*pyre.Regexp
}

// New compiles the options' regular expressions (Python re syntax).
func New(opt Options) (*Metric, error) {
	m := &Metric{opt: opt}
	for _, s := range opt.RegexesToIgnore {
		re, err := pyre.Compile(s)
		if err != nil {
			return nil, fmt.Errorf("exact_match regexes_to_ignore: %w", err)
		}
		m.ignored = append(m.ignored, re)
	}
	return m, nil
}

// punctuation is Python's string.punctuation.
const punctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// numpyStr is a str as a NumPy unicode array stores it: trailing NULs
// dropped.
func numpyStr(s string) string { return strings.TrimRight(s, "\x00") }

func removeRunes(s, set string) string {
	return strings.Map(func(r rune) rune {
		if strings.ContainsRune(set, r) {
			return -1
		}
		return r
	}, s)
}

// array is a NumPy unicode array: its values as read back (trailing NULs
// dropped) and its item size in code points, fixed when it was built from
// Python strings; an operation such as np.char.lower keeps the item size
// and cuts longer results to it.
type array struct {
	vals     []string
	itemsize int
}

// newArray is np.asarray (or np.array) of Python strings.
func newArray(xs []string) array {
	a := array{vals: make([]string, len(xs))}
	for i, x := range xs {
		a.itemsize = max(a.itemsize, utf8.RuneCountInString(x))
		a.vals[i] = numpyStr(x)
	}
	return a
}

// apply is np.char.<method>: f on each value, the result cut to the item
// size and read back.
func (a array) apply(f func(string) string) array {
	out := array{vals: make([]string, len(a.vals)), itemsize: a.itemsize}
	for i, v := range a.vals {
		r := []rune(f(v))
		if len(r) > a.itemsize {
			r = r[:a.itemsize]
		}
		out.vals[i] = numpyStr(string(r))
	}
	return out
}

// prepare runs the metric's steps on one side (predictions or
// references). ok is false when the side stays a Python list (an empty
// regexes_to_ignore and no other option).
func (m *Metric) prepare(xs []string, b *pyre.Budget) (a array, ok bool, err error) {
	if m.opt.RegexesToIgnore != nil {
		if m.ComparesLists() {
			return array{}, false, nil
		}
		cur := xs
		a = newArray(xs)
		for _, re := range m.ignored {
			next := make([]string, len(cur))
			for i, x := range cur {
				if next[i], err = re.SubIn("", x, b); err != nil {
					return array{}, false, err
				}
			}
			a = newArray(next)
			cur = a.vals
		}
	} else {
		a = newArray(xs)
	}
	if m.opt.IgnoreCase {
		a = a.apply(pystr.Lower)
	}
	if m.opt.IgnorePunctuation {
		a = a.apply(func(s string) string { return removeRunes(s, punctuation) })
	}
	if m.opt.IgnoreNumbers {
		a = a.apply(func(s string) string { return removeRunes(s, "0123456789") })
	}
	return a, true, nil
}

// ComparesLists reports whether the predictions and references stay
// Python lists (an empty regexes_to_ignore and no other option), which
// are then compared whole with ==.
func (m *Metric) ComparesLists() bool {
	return m.opt.RegexesToIgnore != nil && len(m.ignored) == 0 && !m.opt.IgnoreCase && !m.opt.IgnorePunctuation && !m.opt.IgnoreNumbers
}

// IgnoresRegexes reports whether regexes_to_ignore is given and not
// empty (re.sub then needs str predictions).
func (m *Metric) IgnoresRegexes() bool { return len(m.ignored) > 0 }

// Score is exact_match(predictions, references): the fraction of the
// pairs equal once each side has been through the options, as NumPy
// arrays. The lists must have the same length, at least one. Each
// regexes_to_ignore substitution has a step budget of its own
// (pyre.MaxSteps and pyre.StepsPerRune a code point); past it, the error
// wraps pyre.ErrTooComplex.
func (m *Metric) Score(predictions, references []string) (float64, error) {
	return m.ScoreIn(predictions, references, nil)
}

// ScoreIn is Score with the substitutions spending b, a budget they share
// (with other calls: those that score one sample).
func (m *Metric) ScoreIn(predictions, references []string, b *pyre.Budget) (float64, error) {
	if len(predictions) != len(references) || len(predictions) == 0 {
		return 0, fmt.Errorf("exact_match: %d predictions for %d references", len(predictions), len(references))
	}
	p, ok, err := m.prepare(predictions, b)
	if err != nil {
		return 0, err
	}
	if !ok {
		// Two Python lists compared with ==: one bool for the whole.
		for i := range predictions {
			if predictions[i] != references[i] {
				return 0, nil
			}
		}
		return 1, nil
	}
	r, _, err := m.prepare(references, b)
	if err != nil {
		return 0, err
	}
	same := 0
	for i := range p.vals {
		if p.vals[i] == r.vals[i] {
			same++
		}
	}
	return float64(same) / float64(len(p.vals)), nil
}
