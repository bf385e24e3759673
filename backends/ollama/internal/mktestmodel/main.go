// Command mktestmodel writes the model scripts/ollama-server.sh serves:
// tally's embedded demo model (backends/gomlx.DemoFiles) as a Hugging Face
// model directory that Ollama's safetensors converter accepts. The weights
// and the vocabulary are the demo model's; the tokenizer's pre-tokenizer
// split becomes Qwen2's, which Ollama's converter recognises (it names it
// "qwen2" in the GGUF file, and llama.cpp then splits prompts exactly as
// the native tokenizer does; the demo's own GPT-2 split is not recognised,
// and llama.cpp's fallback splits numbers and punctuation otherwise). A
// tokenizer_config.json names <|endoftext|> as BOS and EOS (BOS not
// added), and a generation_config.json gives that EOS id, so Ollama and
// the native backend stop on the same token.
//
// Usage: go run ./backends/ollama/internal/mktestmodel -out DIR
//
// It needs nothing outside the repository; every failure is one line on
// stderr and exit status 1.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"tally/backends/gomlx"
	"tally/backends/tokenizer"
)

func main() {
	out := flag.String("out", "", "directory to write (created if missing)")
	flag.Parse()
	if *out == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "mktestmodel: usage: mktestmodel -out DIR")
		os.Exit(2)
	}
	if err := write(gomlx.DemoFiles(), *out); err != nil {
		fmt.Fprintln(os.Stderr, "mktestmodel:", err)
		os.Exit(1)
	}
}

// endOfText is the demo tokenizer's one added token, its EOS.
const endOfText = "<|endoftext|>"

// write writes the model directory of the demo model files src into out.
func write(src fs.FS, out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	for _, name := range []string{"config.json", "model.safetensors"} {
		b, err := fs.ReadFile(src, name)
		if err != nil {
			return fmt.Errorf("demo model: %w", err)
		}
		if err := os.WriteFile(filepath.Join(out, name), b, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	raw, err := fs.ReadFile(src, "tokenizer.json")
	if err != nil {
		return fmt.Errorf("demo model: %w", err)
	}
	tok, eos, err := qwen2Split(raw)
	if err != nil {
		return fmt.Errorf("demo model's tokenizer.json: %w", err)
	}
	files := map[string]any{
		"tokenizer.json": tok,
		"tokenizer_config.json": map[string]any{
			"bos_token": endOfText, "eos_token": endOfText,
			"add_bos_token": false, "add_eos_token": false,
			"model_max_length": 1024, "tokenizer_class": "Qwen2Tokenizer",
		},
		"generation_config.json": map[string]any{
			"do_sample": false, "eos_token_id": eos, "max_new_tokens": 64,
		},
	}
	for name, v := range files {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("encode %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(out, name), append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	return nil
}

// qwen2Split returns the tokenizer.json raw with its pre-tokenizer's Split
// pattern set to Qwen2's, and the id of its end-of-text token.
func qwen2Split(raw []byte) (map[string]any, int, error) {
	pattern, _ := tokenizer.PatternFor("qwen2")
	var tok map[string]any
	if err := json.Unmarshal(raw, &tok); err != nil {
		return nil, 0, err
	}
	pre, _ := tok["pre_tokenizer"].(map[string]any)
	steps, _ := pre["pretokenizers"].([]any)
	split := false
	for _, s := range steps {
		if m, ok := s.(map[string]any); ok && m["type"] == "Split" {
			m["pattern"] = map[string]any{"Regex": pattern}
			split = true
		}
	}
	if !split {
		return nil, 0, errors.New("no Split pre-tokenizer")
	}
	added, _ := tok["added_tokens"].([]any)
	for _, a := range added {
		if m, ok := a.(map[string]any); ok && m["content"] == endOfText {
			if id, ok := m["id"].(float64); ok {
				return tok, int(id), nil
			}
		}
	}
	return nil, 0, fmt.Errorf("no %s token", endOfText)
}
