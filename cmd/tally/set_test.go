package main

import (
	"path/filepath"
	"testing"
)

// TestSetKeepsStop is finding 1 of issue 11 through the command line:
// `tally demo --set max_tokens=24` (the task's own budget) lost the nl stop
// "\n" and generated more tokens than the plain run.
func TestSetKeepsStop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := buildTally(t)
	dir := t.TempDir()
	plain, _ := runTally(t, bin, "demo", "--store", filepath.Join(dir, "a.db"), "--json")
	set, _ := runTally(t, bin, "demo", "--store", filepath.Join(dir, "b.db"), "--json", "--set", "max_tokens=24")
	if set.GeneratedTokens != plain.GeneratedTokens || set.GenerationsNew != plain.GenerationsNew {
		t.Errorf("--set max_tokens=24: %d generations, %d tokens; plain run: %d, %d",
			set.GenerationsNew, set.GeneratedTokens, plain.GenerationsNew, plain.GeneratedTokens)
	}
	for setting, ms := range plain.Scores["demo"] {
		for m, v := range ms {
			if got := set.Scores["demo"][setting][m]; got != v {
				t.Errorf("--set max_tokens=24: %s %s = %v, plain run %v", setting, m, got, v)
			}
		}
	}
}
