package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunOllama runs the demo task through a real Ollama server (started by
// scripts/ollama-server.sh, which .ci/run calls): a full run, then a run
// with a new stop setting that is answered from the stored text, then a
// model that is not on the server.
func TestRunOllama(t *testing.T) {
	model := os.Getenv("TALLY_OLLAMA_MODEL")
	if model == "" || os.Getenv("OLLAMA_HOST") == "" {
		t.Skip("no Ollama server: run scripts/ollama-server.sh and eval its output (.ci/run does)")
	}
	bin := buildTally(t)
	db := filepath.Join(t.TempDir(), "o.db")
	first, _ := runTally(t, bin, "run", "--model", "ollama:"+model, "--tasks", "demo", "--store", db, "--json")
	if first.GenerationsNew != first.Samples || first.Errors != 0 || first.Scores["demo"]["dot"] == nil {
		t.Fatalf("first run %+v", first)
	}
	second, _ := runTally(t, bin, "run", "--model", "ollama:"+model, "--tasks", "demo", "--store", db, "--json",
		"--stop", "dot=.", "--stop", `nl=\n`, "--stop", "sp= ")
	if second.GenerationsNew != 0 || second.GenerationsReused+second.GenerationsContinued != second.Samples || second.Scores["demo"]["sp"] == nil {
		t.Errorf("second run %+v", second)
	}
	if c := storeCounts(t, db); c["generations"] != first.Samples {
		t.Errorf("generations %d, want %d", c["generations"], first.Samples)
	}
	out, err := runTallyErr(bin, "run", "--model", "ollama:no-such-model", "--tasks", "demo", "--store", db)
	if err == nil || !strings.Contains(out, "no-such-model") || strings.Count(strings.TrimSpace(out), "\n") > 0 {
		t.Errorf("missing model: %v %q", err, out)
	}
}
