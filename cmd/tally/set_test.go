package main

import (
	"fmt"
	"path/filepath"
	"testing"

	"tally/tasks"
)

// TestSetKeepsStop is finding 1 of issue 11 through the command line:
// `tally demo --set max_tokens=N` (the task's own budget) lost the nl stop
// "\n" and generated more tokens than the plain run.
func TestSetKeepsStop(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := buildTally(t)
	dir := t.TempDir()
	cfg, err := tasks.Resolve("demo")
	if err != nil {
		t.Fatal(err)
	}
	budget := fmt.Sprintf("max_tokens=%d", cfg.MaxTokens)
	plain, _ := runTally(t, bin, "demo", "--store", filepath.Join(dir, "a.db"), "--json")
	set, _ := runTally(t, bin, "demo", "--store", filepath.Join(dir, "b.db"), "--json", "--set", budget)
	if set.GeneratedTokens != plain.GeneratedTokens || set.GenerationsNew != plain.GenerationsNew {
		t.Errorf("--set %s: %d generations, %d tokens; plain run: %d, %d", budget,
			set.GenerationsNew, set.GeneratedTokens, plain.GenerationsNew, plain.GeneratedTokens)
	}
	for setting, ms := range plain.Scores["demo"] {
		for m, v := range ms {
			if got := set.Scores["demo"][setting][m]; got != v {
				t.Errorf("--set %s: %s %s = %v, plain run %v", budget, setting, m, got, v)
			}
		}
	}
}
