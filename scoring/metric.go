// Package scoring holds tally's metrics: pure functions from a prediction
// and its sample to named scores, one sub-package per metric family, and
// the one registry through which both task scoring and `tally metric` find
// them. Each family package registers its metrics from its own init with
// Register; a program links the families it wants with blank imports (the
// tally/benchmarks package imports every built-in one).
package scoring

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"tally/datasets"
)

// ErrUnavailable is wrapped by a scorer's error that is not the sample's
// doing: the scorer itself can no longer run (a task's Python worker that
// died or hung). A run that meets it stores no score for the sample (an
// unscorable one would stand for a fault the sample does not have) and
// ends with the error.
var ErrUnavailable = errors.New("the scorer is unavailable")

// Metric is the one definition of a metric: task scoring calls Score on
// each truncated prediction of a sample, and `tally metric NAME` scores
// JSON lines with LineForm, which is Line when the family gives its own
// line format and otherwise Score applied to {"prediction", "references",
// "metadata"} lines, so that both paths behave alike on every answer.
type Metric struct {
	// Name is the name task configs and `tally metric` use.
	Name string
	// Version names the revision of the metric's behaviour. It enters the
	// digest of every stored score the metric produced: bump it whenever a
	// change can alter a score, and stored scores are recomputed.
	Version string
	// Reference names the implementation the metric reproduces (repository,
	// file and commit, or paper).
	Reference string
	// Doc is one paragraph: what is scored and the output keys.
	Doc string
	// Score scores one prediction of a sample; keys are score names. An
	// error means the reference cannot score this answer (the sample is
	// then reported unscorable, not scored 0). Nil for metrics that only
	// exist as line metrics (aggregates over result files, helpers).
	Score func(pred string, s datasets.Sample) (map[string]float64, error)
	// Line is the metric's own line format for `tally metric`; nil derives
	// it from Score.
	Line *LineMetric
	// LMEvalNames maps a score key Score returns to the metric name
	// lm-evaluation-harness's own task gives the same number (DROP's
	// "drop.f1" is lm-eval's "f1"), for the lm-eval files tally writes; a
	// key not in it is written as it is.
	LMEvalNames map[string]string
}

// LMEvalName is the name lm-eval files give a score key: the LMEvalNames
// entry of the metric that produces it (the part of the key before its
// last "." names the metric, else the key itself), or the key unchanged.
func LMEvalName(key string) string {
	family := key
	if i := strings.LastIndexByte(key, '.'); i > 0 {
		family = key[:i]
	}
	if m, ok := Lookup(family); ok {
		if n, ok := m.LMEvalNames[key]; ok {
			return n
		}
	}
	return key
}

// LineMetric is a metric as `tally metric NAME` exposes it: one JSON object
// in, one JSON object out per line, and optionally an aggregate over all
// lines.
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

// registry holds every registered metric by name. It is written only by
// Register, from package init functions, and read afterwards.
var registry = struct {
	sync.RWMutex
	m map[string]Metric
}{m: map[string]Metric{}}

// Register adds a metric. It panics on an empty name, a missing version,
// reference or doc, a metric with neither Score nor Line, a Line named
// otherwise, or a name registered twice: all programming errors found at
// start-up.
func Register(m Metric) {
	switch {
	case m.Name == "":
		panic("scoring.Register: metric with no name")
	case m.Version == "" || m.Reference == "" || m.Doc == "":
		panic(fmt.Sprintf("scoring.Register: metric %q needs Version, Reference and Doc", m.Name))
	case m.Score == nil && m.Line == nil:
		panic(fmt.Sprintf("scoring.Register: metric %q has neither Score nor Line", m.Name))
	case m.Line != nil && m.Line.Name != m.Name:
		panic(fmt.Sprintf("scoring.Register: metric %q has line form %q", m.Name, m.Line.Name))
	}
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.m[m.Name]; dup {
		panic(fmt.Sprintf("scoring.Register: metric %q registered twice", m.Name))
	}
	registry.m[m.Name] = m
}

// Lookup returns the registered metric of that name.
func Lookup(name string) (Metric, bool) {
	registry.RLock()
	defer registry.RUnlock()
	m, ok := registry.m[name]
	return m, ok
}

// All returns every registered metric, sorted by name.
func All() []Metric {
	registry.RLock()
	defer registry.RUnlock()
	out := make([]Metric, 0, len(registry.m))
	for _, m := range registry.m {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// TaskNames lists the registered metrics a task config may name (those
// with a Score), sorted.
func TaskNames() []string {
	var out []string
	for _, m := range All() {
		if m.Score != nil {
			out = append(out, m.Name)
		}
	}
	return out
}

// LineForm returns the metric as `tally metric` runs it: its own Line, or
// one derived from Score that reads {"prediction": str, "references": the
// sample's references, "metadata": {...}} and writes Score's map.
func (m Metric) LineForm() LineMetric {
	if m.Line != nil {
		return *m.Line
	}
	score := m.Score
	name := m.Name
	return LineMetric{
		Name: m.Name,
		Doc: m.Doc + " Reproduces " + m.Reference + `. Input lines: {"prediction": str, "references": the task's ` +
			`references, "metadata": {...} (optional)}; output: the scores a task records.`,
		Score: func(raw json.RawMessage) (any, error) {
			var in struct {
				Prediction *string         `json:"prediction"`
				References json.RawMessage `json:"references"`
				Metadata   map[string]any  `json:"metadata"`
			}
			if err := json.Unmarshal(raw, &in); err != nil {
				return nil, fmt.Errorf("%s: decoding line: %w", name, err)
			}
			if in.Prediction == nil || len(in.References) == 0 {
				return nil, fmt.Errorf(`%s: line needs "prediction" and "references"`, name)
			}
			return score(*in.Prediction, datasets.Sample{ID: "line", References: in.References, Metadata: in.Metadata})
		},
	}
}

// StringRefs decodes references that are a list of strings, as most
// text metrics take them.
func StringRefs(s datasets.Sample) ([]string, error) {
	var refs []string
	if err := json.Unmarshal(s.References, &refs); err != nil {
		return nil, fmt.Errorf("references of %s are not a list of strings: %w", s.ID, err)
	}
	return refs, nil
}
