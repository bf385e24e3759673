// Command mktestmodel writes a tiny Hugging Face model directory that
// Ollama's safetensors converter accepts: the llama-tiny fixture's
// config.json and model.safetensors, a 512-entry byte-level BPE
// tokenizer.json trained on a built-in corpus, a tokenizer_config.json
// naming <|endoftext|> as BOS/EOS (BOS not added), and a
// generation_config.json with that EOS id, so Ollama and the native
// backend stop on the same token.
//
// Usage: go run ./backends/ollama/internal/mktestmodel -src ../shared/fixtures/models/llama-tiny -out DIR
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"tally/backends/tokenizer"
)

func main() {
	src := flag.String("src", "../shared/fixtures/models/llama-tiny", "fixture model directory (config.json, model.safetensors)")
	out := flag.String("out", "", "directory to write (created if missing)")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "mktestmodel: -out is required")
		os.Exit(2)
	}
	if err := write(*src, *out); err != nil {
		fmt.Fprintln(os.Stderr, "mktestmodel:", err)
		os.Exit(1)
	}
}

// vocabSize matches config.json's vocab_size; it counts <|endoftext|>.
const vocabSize = 512

func write(src, out string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", out, err)
	}
	for _, name := range []string{"config.json", "model.safetensors"} {
		if err := copyFile(filepath.Join(src, name), filepath.Join(out, name)); err != nil {
			return err
		}
	}
	tok, err := tokenizer.TrainByteLevel(corpus(), vocabSize)
	if err != nil {
		return fmt.Errorf("train tokenizer: %w", err)
	}
	var check struct {
		Model struct {
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
		AddedTokens []struct {
			ID int `json:"id"`
		} `json:"added_tokens"`
	}
	if err := json.Unmarshal(tok, &check); err != nil {
		return fmt.Errorf("read back tokenizer.json: %w", err)
	}
	if n := len(check.Model.Vocab) + len(check.AddedTokens); n != vocabSize {
		return fmt.Errorf("tokenizer has %d entries, want %d (corpus too small for the merges)", n, vocabSize)
	}
	eos := check.AddedTokens[0].ID
	files := map[string]any{
		"tokenizer_config.json": map[string]any{
			"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
			"add_bos_token": false, "add_eos_token": false,
			"model_max_length": 4096, "tokenizer_class": "Qwen2Tokenizer",
		},
		"generation_config.json": map[string]any{
			"do_sample": false, "eos_token_id": eos, "max_new_tokens": 64,
		},
	}
	if err := os.WriteFile(filepath.Join(out, "tokenizer.json"), tok, 0o644); err != nil {
		return fmt.Errorf("write tokenizer.json: %w", err)
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

func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return fmt.Errorf("copy %s: %w", from, err)
	}
	defer in.Close()
	o, err := os.Create(to)
	if err != nil {
		return fmt.Errorf("copy to %s: %w", to, err)
	}
	if _, err := io.Copy(o, in); err != nil {
		o.Close()
		return fmt.Errorf("copy %s to %s: %w", from, to, err)
	}
	if err := o.Close(); err != nil {
		return fmt.Errorf("copy to %s: %w", to, err)
	}
	return nil
}

// corpus is varied English-like text with enough repeated pairs for 255
// merges.
func corpus() string {
	subjects := []string{"the harness", "a small model", "every request", "the server", "our benchmark", "this test", "the scheduler", "a long document"}
	verbs := []string{"reads", "writes", "counts", "streams", "scores", "checks", "retries", "measures"}
	objects := []string{"the tokens", "each answer", "forty-two numbers", "the context window", "a stop sequence", "the question", "every sample", "the final score"}
	tails := []string{"before noon.", "in order.", "with care.", "again and again.", "on the CPU.", "for 12 seconds.", "without errors.", "as expected."}
	var b strings.Builder
	for i := 0; i < 600; i++ {
		fmt.Fprintf(&b, "%s %s %s %s", subjects[i%8], verbs[(i/8)%8], objects[(i*3+i/64)%8], tails[(i*5+i/8)%8])
		if i%7 == 6 {
			fmt.Fprintf(&b, "\nQuestion %d: what is %d plus %d?\nAnswer: %d\n", i, i%97, i%13, i%97+i%13)
		} else {
			b.WriteByte(' ')
		}
	}
	words := strings.Fields(`alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima
	mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu
	january february march april may june july august september october november december
	monday tuesday wednesday thursday friday saturday sunday morning evening afternoon night
	mountain river forest valley desert island ocean glacier volcano meadow canyon harbour
	quickly slowly brightly quietly loudly gently firmly rarely always never sometimes often`)
	for i := 0; i < 3; i++ {
		for j, w := range words {
			fmt.Fprintf(&b, "%s %s, ", w, words[(j*7+i)%len(words)])
		}
		b.WriteString("\n")
	}
	return b.String()
}
