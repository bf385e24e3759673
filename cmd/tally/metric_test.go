package main

import (
	"os/exec"
	"strings"
	"testing"

	"tally/scoring"
)

// TestMetricListCoversRegistry checks that every registered metric (the
// one registry task scoring also uses) is reachable from `tally metric
// --list` and by name.
func TestMetricListCoversRegistry(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := buildTally(t)
	out, err := exec.Command(bin, "metric", "--list").CombinedOutput()
	if err != nil {
		t.Fatalf("metric --list: %v\n%s", err, out)
	}
	listed := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && !strings.HasPrefix(l, " ") {
			listed[f[0]] = true
		}
	}
	all := scoring.All()
	if len(all) == 0 {
		t.Fatal("no metric registered")
	}
	for _, m := range all {
		if !listed[m.Name] {
			t.Errorf("registered metric %q missing from metric --list:\n%s", m.Name, out)
		}
	}
	if len(listed) != len(all) {
		t.Errorf("metric --list shows %d metrics, %d registered", len(listed), len(all))
	}
	// A task metric with no line format of its own runs from its Score.
	cmd := exec.Command(bin, "metric", "exact_match")
	cmd.Stdin = strings.NewReader(`{"prediction": " 4 ", "references": ["4"]}` + "\n")
	got, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(got)) != `{"exact_match":1}` {
		t.Errorf("metric exact_match: %q, %v", got, err)
	}
}
