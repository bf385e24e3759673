package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"tally/backends"
	"tally/backends/gomlx"
	"tally/backends/imported"
	"tally/backends/ollama"
)

// openModel opens the backend a --model value names: "demo" (the embedded
// demo model), "ollama:NAME" (an Ollama server), or a Hugging Face
// directory or cache name for the native backend.
func openModel(ctx context.Context, spec, device string, concurrency int) (backends.Backend, error) {
	opts := gomlx.Options{Device: device, MaxBatch: concurrency, Log: os.Stderr}
	switch {
	case spec == "demo":
		m, err := gomlx.Demo(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("open demo model: %w", err)
		}
		return m, nil
	case strings.HasPrefix(spec, imported.Prefix):
		return imported.New(strings.TrimPrefix(spec, imported.Prefix)), nil
	case strings.HasPrefix(spec, "ollama:"):
		m, err := ollama.Open(ctx, strings.TrimPrefix(spec, "ollama:"), ollama.Options{Parallel: concurrency})
		if err != nil {
			return nil, fmt.Errorf("open model %s: %w", spec, err)
		}
		return m, nil
	default:
		m, err := gomlx.Open(ctx, spec, opts)
		if err != nil {
			return nil, fmt.Errorf("open model %s: %w", spec, err)
		}
		return m, nil
	}
}
