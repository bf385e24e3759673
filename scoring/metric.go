// Package scoring holds tally's metrics: pure functions from a prediction
// and its sample to named scores, one sub-package per metric family, plus
// the LineMetric adapter that `tally metric` uses to score JSON lines.
package scoring

import "encoding/json"

// LineMetric is a metric as `tally metric NAME` exposes it: one JSON object
// in, one JSON object out per line, and optionally an aggregate over all
// lines. Each family package returns its LineMetrics from a function; the
// command line assembles the list, so there is no global registry.
type LineMetric struct {
	// Name is the command-line name (e.g. "drop", "drop-fixed").
	Name string
	// Doc is one paragraph: the reference reproduced and the input and
	// output fields.
	Doc string
	// Score scores one input line. Nil for aggregate-only metrics.
	// An error is reported on that line's output as {"error": ...}.
	Score func(line json.RawMessage) (any, error)
	// Aggregate scores the whole input at once (with --aggregate). Nil when
	// the metric has no aggregate form.
	Aggregate func(lines []json.RawMessage) (any, error)
	// Options are extra command-line options the metric accepts, by name
	// (e.g. "judges" for 3c3h-file); values arrive in Configure.
	Options []string
	// Configure, when set, receives option values before scoring starts and
	// returns the metric to use.
	Configure func(opts map[string]string) (LineMetric, error)
}
