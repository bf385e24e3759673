package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"tally/backends/tokenizer"
)

// config is one throughput configuration: Batch prompts of Prompt tokens.
type config struct{ Batch, Prompt int }

func (c config) String() string { return fmt.Sprintf("%dx%d", c.Batch, c.Prompt) }

// parseConfigs reads "1x512,8x512,32x4096".
func parseConfigs(s string) ([]config, error) {
	var out []config
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		b, p, ok := strings.Cut(f, "x")
		bn, err1 := strconv.Atoi(b)
		pn, err2 := strconv.Atoi(p)
		if !ok || err1 != nil || err2 != nil || bn <= 0 || pn <= 0 {
			return nil, fmt.Errorf("configuration %q: want BATCHxPROMPT, e.g. 8x512", f)
		}
		out = append(out, config{bn, pn})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no configurations in %q", s)
	}
	return out, nil
}

// promptFile is the file of c's prompts under dir, shared by tally's and
// transformers' benchmarks: {"prompts": [[ids], ...]}.
func promptFile(dir string, c config) string {
	return filepath.Join(dir, fmt.Sprintf("b%d-p%d.json", c.Batch, c.Prompt))
}

// maxPromptID keeps random prompts out of Llama 3's special tokens
// (128000 and up).
const maxPromptID = 128000

func runPrompts(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("prompts", flag.ContinueOnError)
	vocab := fs.Int("vocab", 0, "vocabulary size")
	configs := fs.String("configs", "", "BATCHxPROMPT list")
	out := fs.String("out", "", "folder for the prompt files")
	seed := fs.Uint64("seed", 25, "random seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cs, err := parseConfigs(*configs)
	if err != nil {
		return err
	}
	if *vocab <= 0 || *out == "" {
		return fmt.Errorf("want -vocab N and -out DIR")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	top := min(*vocab, maxPromptID)
	for _, c := range cs {
		rng := rand.New(rand.NewPCG(*seed, uint64(c.Batch)<<32|uint64(c.Prompt)))
		p := make([][]int, c.Batch)
		for i := range p {
			p[i] = make([]int, c.Prompt)
			for j := range p[i] {
				p[i][j] = rng.IntN(top)
			}
		}
		if err := writeJSONFile(promptFile(*out, c), map[string]any{"prompts": p}); err != nil {
			return err
		}
	}
	return nil
}

// readPrompts reads a prompts file.
func readPrompts(path string) ([][]int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var in struct {
		Prompts [][]int `json:"prompts"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	if len(in.Prompts) == 0 {
		return nil, fmt.Errorf("%s: no prompts", path)
	}
	return in.Prompts, nil
}

// longWords are the words the long prompt is made of.
var longWords = strings.Fields(`the of and to in a is that for it as was with be by on not he this are or his from at which
but have an they you were her she there been one all we their has would when if so no out more some what time into only
do could new other then them these two may first any like now my such make over our even most after also did many before
must through back years where much your way well down should because long each just those people state good very world
river city water house night story letter number morning window garden island market music school street summer winter`)

func runLongPrompt(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("longprompt", flag.ContinueOnError)
	tokPath := fs.String("tokenizer", "", "tokenizer.json (or .gz, or a model folder)")
	n := fs.Int("tokens", 0, "prompt length in tokens")
	out := fs.String("out", "", "jsonl task file to write")
	seed := fs.Uint64("seed", 25, "random seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tokPath == "" || *n <= 0 || *out == "" {
		return fmt.Errorf("want -tokenizer FILE -tokens N -out FILE")
	}
	tok, err := tokenizer.Load(*tokPath)
	if err != nil {
		return err
	}
	text, err := textOfTokens(tok, *n, *seed)
	if err != nil {
		return err
	}
	line, err := json.Marshal(map[string]any{"id": fmt.Sprintf("long-%d", *n), "prompt": text, "answers": []string{"none"}})
	if err != nil {
		return err
	}
	return os.WriteFile(*out, append(line, '\n'), 0o644)
}

// textOfTokens is a text of random words that tok encodes (with its
// special tokens, as a task's prompt is) to exactly n tokens.
func textOfTokens(tok *tokenizer.Tokenizer, n int, seed uint64) (string, error) {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	count := func(s string) (int, error) {
		ids, err := tok.Encode(s, true)
		return len(ids), err
	}
	var b strings.Builder
	b.WriteString("Text:")
	// Add words in steps, counting the whole text now and then: a word
	// after a space is its own pre-token, so counts add up but for the
	// boundary, which the final loop settles word by word.
	for {
		have, err := count(b.String())
		if err != nil {
			return "", err
		}
		if have >= n-64 {
			break
		}
		for range (n - have) / 2 {
			b.WriteString(" " + longWords[rng.IntN(len(longWords))])
		}
	}
	words := strings.Fields(b.String())
	for {
		text := strings.Join(words, " ")
		have, err := count(text)
		if err != nil {
			return "", err
		}
		switch {
		case have == n:
			return text, nil
		case have > n:
			if len(words) <= 1 {
				return "", fmt.Errorf("cannot make a text of %d tokens", n)
			}
			words = words[:len(words)-1]
		default:
			// One-token words only, so the count cannot step over n.
			w := "the"
			if one, _ := count(text + " " + w); one != have+1 {
				return "", fmt.Errorf("tokenizer: %q is not one token after a space", w)
			}
			words = append(words, w)
		}
	}
}
