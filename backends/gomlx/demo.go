package gomlx

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
)

// demoFiles is the demo model in the Hugging Face layout, as
// scripts/train-demo writes it.
//
//go:embed demomodel/config.json demomodel/model.safetensors demomodel/tokenizer.json
var demoFiles embed.FS

// DemoFiles is the embedded demo model's folder in the Hugging Face layout
// (config.json, model.safetensors, tokenizer.json), for a tool that hands
// the demo model to another engine (scripts/ollama-server.sh makes its
// Ollama test model of it).
func DemoFiles() fs.FS {
	sub, err := fs.Sub(demoFiles, "demomodel")
	if err != nil {
		panic(err) // a constant, valid path
	}
	return sub
}

// demoVersion leads the demo model's fingerprint.
const demoVersion = "demo-v3"

// Demo loads the embedded demo model through OpenFS, the loader a user's
// model goes through: a tiny Llama-architecture model (see
// tally/backends/gomlx/demotrain) trained in Go on synthetic DROP-style
// reading questions (tally/internal/demodata), with its byte-level BPE
// tokenizer. Given the leaderboard's few-shot DROP prompt it answers and
// then starts the next passage ("7.5\n\nPassage: …"), as base models do.
func Demo(ctx context.Context, opts Options) (*Model, error) {
	sub, err := fs.Sub(demoFiles, "demomodel")
	if err != nil {
		return nil, fmt.Errorf("demo model: %w", err)
	}
	m, err := OpenFS(ctx, sub, "demo", opts)
	if err != nil {
		return nil, fmt.Errorf("demo model: %w", err)
	}
	m.fpExtra = demoVersion + ":" + m.fpExtra
	return m, nil
}
