package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"tally/backends"
	"tally/backends/gomlx"
	"tally/backends/tokenizer"
)

// TestWriteDemo is item 2 of issue 34: the Ollama test model is made from
// the repository alone, of the embedded demo model: its weights and
// vocabulary as they are, the pre-tokenizer split Qwen2's, <|endoftext|>
// its EOS; the native backend loads the folder and generates with it.
func TestWriteDemo(t *testing.T) {
	dir := t.TempDir()
	if err := write(gomlx.DemoFiles(), dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config.json", "model.safetensors"} {
		want, err := fs.ReadFile(gomlx.DemoFiles(), name)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: not the demo model's (%v)", name, err)
		}
	}
	tj, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	qwen2, _ := tokenizer.PatternFor("qwen2")
	if !bytes.Contains(tj, []byte(`"Regex": `)) || !bytes.Contains(tj, mustJSON(t, qwen2)) {
		t.Errorf("tokenizer.json's split is not Qwen2's")
	}
	m, err := gomlx.Open(context.Background(), dir, gomlx.Options{FingerprintCache: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	demo, err := gomlx.Demo(context.Background(), gomlx.Options{FingerprintCache: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer demo.Close()
	var gc struct {
		EOS int `json:"eos_token_id"`
	}
	if b, err := os.ReadFile(filepath.Join(dir, "generation_config.json")); err != nil || json.Unmarshal(b, &gc) != nil || gc.EOS != 491 {
		t.Errorf("generation_config.json: eos %d (%v), want the demo's <|endoftext|>, 491", gc.EOS, err)
	}
	// A prompt of letters and spaces splits alike under either pattern.
	const prompt = "Passage: Tom plays for the Bulls.\nQuestion: Tom plays for which team?\nAnswer:"
	a, _ := m.Tokenizer().Encode(prompt, true)
	b, _ := demo.Tokenizer().Encode(prompt, true)
	if !slices.Equal(a, b) {
		t.Errorf("tokens %v, the demo's %v", a, b)
	}
	req := []backends.Request{{PromptIDs: a, MaxTokens: 4}}
	if got, want := gen(t, m, req), gen(t, demo, req); got != want {
		t.Errorf("generated %q, the demo model %q", got, want)
	}
}

// mustJSON is v as a JSON string's bytes.
func mustJSON(t *testing.T, v string) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// gen is the text be generates for reqs[0].
func gen(t *testing.T, be backends.Backend, reqs []backends.Request) string {
	t.Helper()
	var text string
	err := be.Generate(context.Background(), reqs, func(ev backends.Event) bool {
		text += ev.Text
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return text
}
