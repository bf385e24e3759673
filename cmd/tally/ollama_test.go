package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tally/backends/gomlx"
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

// TestRunGGUF runs the native backend on the GGUF file Ollama made of its
// test model (the weights llama.cpp runs, read in place): a run of the demo
// task stores and scores every sample, the model shows under its path, and
// --chat on a file without a chat template is a one-line error.
func TestRunGGUF(t *testing.T) {
	root, model := os.Getenv("TALLY_OLLAMA_MODELS"), os.Getenv("TALLY_OLLAMA_MODEL")
	if root == "" || model == "" {
		t.Skip("no Ollama models: run scripts/ollama-server.sh and eval its output (.ci/run does)")
	}
	manifest := filepath.Join(root, "manifests", "registry.ollama.ai", "library", model, "latest")
	blob, ok, err := gomlx.OllamaModelBlob(manifest)
	if err != nil || !ok {
		t.Fatalf("manifest of %s: %v (a manifest: %v)", model, err, ok)
	}
	bin := buildTally(t)
	db := filepath.Join(t.TempDir(), "g.db")
	s, _ := runTally(t, bin, "run", "--model", blob, "--tasks", "demo", "--limit", "4", "--store", db, "--json")
	if s.GenerationsNew != 4 || s.Errors != 0 || s.Scores["demo"]["nl"] == nil {
		t.Errorf("run on %s: %+v", blob, s)
	}
	if ls := tallyOut(t, "ls", "--store", db); !strings.Contains(ls, blob) {
		t.Errorf("ls does not name the GGUF file:\n%s", ls)
	}
	// The model's manifest names the same file: the same fingerprint, so
	// the stored generations are reused.
	again, _ := runTally(t, bin, "run", "--model", manifest,
		"--tasks", "demo", "--limit", "4", "--store", db, "--json")
	if again.GenerationsNew != 0 || again.GenerationsReused != 4 {
		t.Errorf("run on the manifest: %+v", again)
	}
	out, err := runTallyErr(bin, "run", "--model", blob, "--tasks", "demo", "--limit", "1", "--store", db, "--chat")
	if err == nil || !strings.Contains(out, "carries no tokenizer.chat_template") || strings.Count(strings.TrimSpace(out), "\n") > 0 {
		t.Errorf("--chat without a template: %v %q", err, out)
	}
}
