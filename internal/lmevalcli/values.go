package lmevalcli

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Limit is --limit as lm-eval reads it (lm_eval/evaluator_utils.py
// get_sample_size): a number of samples of each task, or, below 1, a
// fraction of each task's samples, math.ceil(len(docs) * limit). A number
// of 1 or more with a fraction keeps its whole part, as lm-eval's int()
// does. It implements pflag.Value; the zero Limit keeps every sample.
type Limit struct {
	// N is the number of samples (0: not a number of samples).
	N int
	// Fraction is the share of each task's samples, in (0, 1) (0: not a
	// fraction).
	Fraction float64
	// given is the value as typed, for messages.
	given string
}

// String is the limit as given ("0" when none).
func (l *Limit) String() string {
	if l.given != "" {
		return l.given
	}
	return strconv.Itoa(l.N)
}

// Type names the value in help.
func (l *Limit) Type() string { return "N|FRACTION" }

// Set parses a number of samples or a fraction below 1. Zero and negative
// numbers are refused: tally keeps every sample when --limit is not given.
func (l *Limit) Set(s string) error {
	s = strings.TrimSpace(s)
	if n, err := strconv.Atoi(s); err == nil {
		if n <= 0 {
			return fmt.Errorf("want a positive number of samples, or a fraction between 0 and 1")
		}
		*l = Limit{N: n, given: s}
		return nil
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 || x >= float64(math.MaxInt32) {
		return fmt.Errorf("want a number of samples (10) or, below 1, a fraction of each task's samples (0.1)")
	}
	if x < 1 {
		*l = Limit{Fraction: x, given: s}
	} else {
		*l = Limit{N: int(x), given: s} // lm-eval's int(limit)
	}
	return nil
}

// Of is the number of samples the limit keeps of a task of total samples:
// lm-eval's rule, math.ceil(total * limit) below 1, else the number, never
// more than total. The zero Limit keeps total.
func (l Limit) Of(total int) int {
	switch {
	case l.Fraction > 0:
		return min(total, int(math.Ceil(float64(total)*l.Fraction)))
	case l.N > 0:
		return min(total, l.N)
	}
	return total
}

// JSON is the limit as a run's recorded configuration keeps it: the
// number, or the fraction (0: none).
func (l Limit) JSON() any {
	if l.Fraction > 0 {
		return l.Fraction
	}
	return l.N
}

// Rule says, for the output, how the limit chose n samples of total (""
// for a plain number of samples).
func (l Limit) Rule(total int) string {
	switch {
	case l.Fraction > 0:
		return fmt.Sprintf("--limit %s: %d of the %d samples (lm-eval's rule for a limit below 1: ceil(%d × %s))",
			l.given, l.Of(total), total, total, l.given)
	case l.given != "" && l.given != strconv.Itoa(l.N):
		return fmt.Sprintf("--limit %s: %d samples (lm-eval's int(%s))", l.given, l.N, l.given)
	}
	return ""
}

// Auto is the value of --concurrency (lm-eval's --batch_size) that leaves
// the number of requests in flight to tally, as lm-eval's "auto" leaves
// the batch size to it: the native engine's batch of up to 8 rows that its
// memory plan fits, 4 requests (or OLLAMA_NUM_PARALLEL) for a server.
const Auto = "auto"

// AutoNote is what a command says, once, when given --concurrency auto.
const AutoNote = "--batch_size/--concurrency auto: tally's own choice: the native engine runs the batch of up to 8 rows its memory plan fits, " +
	"a server 4 requests in flight (Ollama: OLLAMA_NUM_PARALLEL when set)"

// Concurrency is --concurrency (lm-eval's --batch_size): a number of
// requests in flight, or "auto" (lm-eval's "auto" and "auto:N" too),
// which is 0: tally's own choice. It implements pflag.Value.
type Concurrency struct {
	// N is the number given (0: auto, or not given).
	N int
	// Auto records that "auto" was given.
	Auto bool
}

// String is the value: a number, or "auto".
func (c *Concurrency) String() string {
	if c.Auto {
		return Auto
	}
	return strconv.Itoa(c.N)
}

// Type names the value in help.
func (c *Concurrency) Type() string { return "N|auto" }

// Set parses a number or auto.
func (c *Concurrency) Set(s string) error {
	s = strings.TrimSpace(s)
	if s == Auto || strings.HasPrefix(s, Auto+":") {
		*c = Concurrency{Auto: true}
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("want a number of requests in flight, or auto")
	}
	*c = Concurrency{N: n}
	return nil
}
