package tasks

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"tally/datasets"
	"tally/generate"
	"tally/scoring"
)

// TestCountingStarsOneBehaviour is finding 10 of issue 11: the task metric
// scored an unparseable Counting-Stars answer 0 where `tally metric
// counting-stars` reported an error. Both now come from one registered
// metric and agree, on parseable and unparseable answers, under both rules.
func TestCountingStarsOneBehaviour(t *testing.T) {
	m, ok := scoring.Lookup("counting-stars")
	if !ok {
		t.Fatal("counting-stars is not registered")
	}
	lm := m.LineForm()
	for _, rule := range []string{"paper", "current"} {
		c, err := ResolveWith("counting-stars", map[string]string{"scoring_rule": rule, "stars": "4", "lengths": "[4000]"})
		if err != nil {
			t.Fatal(err)
		}
		l, err := c.Load(LoadOptions{Data: shared(t, "data/counting_stars/context_data"), Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		s := l.Samples[0]
		score := c.Scorer()
		for _, answer := range []string{
			`{"little_penguin": ` + string(s.References) + `}`,
			`{"little_penguin": [1, 2`,
			`I counted the stars`,
			``,
			`[1, 2]`,
		} {
			taskVals, taskErr := score(answer, s)
			var refs []float64
			if err := json.Unmarshal(s.References, &refs); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(map[string]any{"rule": s.Metadata["scoring_rule"], "lang": s.Metadata["lang"],
				"test_type": s.Metadata["test_type"], "m": len(refs), "answer": answer, "reference": refs})
			out, lineErr := lm.Score(b)
			if (taskErr != nil) != (lineErr != nil) {
				t.Errorf("rule %s, answer %q: task error %v, line error %v", rule, answer, taskErr, lineErr)
				continue
			}
			if taskErr != nil {
				continue
			}
			ob, _ := json.Marshal(out)
			var lo struct{ Mean *float64 }
			json.Unmarshal(ob, &lo)
			if lo.Mean == nil || *lo.Mean != taskVals["counting_stars"] {
				t.Errorf("rule %s, answer %q: task %v, line %s", rule, answer, taskVals, ob)
			}
		}
	}
}

// TestBuiltinMetricsRegistered checks that every metric a built-in task
// names resolves to a registered metric that scores samples, with a
// version, and that MetricNames lists it.
func TestBuiltinMetricsRegistered(t *testing.T) {
	for _, n := range Builtin() {
		c, err := Resolve(n)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range c.Metrics {
			m, ok := scoring.Lookup(name)
			if !ok || m.Score == nil || m.Version == "" || m.Reference == "" {
				t.Errorf("task %s: metric %q: registered %v, %+v", n, name, ok, m)
			}
			if !strings.Contains(","+strings.Join(MetricNames(), ",")+",", ","+name+",") {
				t.Errorf("task %s: metric %q missing from MetricNames %v", n, name, MetricNames())
			}
		}
	}
}

// TestMetricVersionInSpec checks that a metric's registered version is in
// the task's scoring spec, so bumping it changes every score digest.
func TestMetricVersionInSpec(t *testing.T) {
	c, err := Resolve("demo")
	if err != nil {
		t.Fatal(err)
	}
	spec := c.ScoringSpec()
	for _, name := range c.Metrics {
		m, _ := scoring.Lookup(name)
		want := fmt.Sprintf(`{"name":%q,"version":%q}`, name, m.Version)
		if !strings.Contains(spec, want) {
			t.Errorf("scoring spec %s lacks %s", spec, want)
		}
	}
}

// TestMetricVersionBumpMakesStale checks that bumping one metric's version
// changes the score digest of every sample, so its stored scores are
// recomputed.
func TestMetricVersionBumpMakesStale(t *testing.T) {
	c, err := Resolve("demo")
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Load(LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bumped := func(name string) string {
		if name == "drop-fixed" {
			return metricVersion(name) + "-bumped"
		}
		return metricVersion(name)
	}
	now := &generate.Job{Task: c.Task, Spec: c.ScoringSpec()}
	next := &generate.Job{Task: c.Task, Spec: c.scoringSpec(bumped)}
	set := c.Settings()[0]
	for _, s := range l.Samples {
		if generate.ScoreDigest(now, &s, set, c.MaxTokens, "x") == generate.ScoreDigest(next, &s, set, c.MaxTokens, "x") {
			t.Fatalf("sample %s: digest unchanged by a version bump of drop-fixed", s.ID)
		}
	}
	if c.scoringSpec(metricVersion) != c.ScoringSpec() {
		t.Error("scoringSpec(metricVersion) differs from ScoringSpec")
	}
}

// TestBuiltinLoadersRegistered checks that every built-in task's loader is
// registered by its datasets package, and that an unknown loader is
// refused with the registered names.
func TestBuiltinLoadersRegistered(t *testing.T) {
	for _, n := range Builtin() {
		c, err := Resolve(n)
		if err != nil {
			t.Fatal(err)
		}
		l, ok := datasets.LookupLoader(c.Loader)
		if !ok || (l.Rows == nil) == (l.Samples == nil) {
			t.Errorf("task %s: loader %q: registered %v", n, c.Loader, ok)
		}
	}
	for _, want := range []string{"3c3h-judge", "counting-stars", "drop", "jsonl", "leval", "pairwise-judge"} {
		if _, ok := datasets.LookupLoader(want); !ok {
			t.Errorf("loader %q not registered (have %v)", want, datasets.LoaderNames())
		}
	}
}
