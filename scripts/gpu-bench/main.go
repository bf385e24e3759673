// Command gpu-bench runs greedy generation of prompts from a JSON file on
// tally's native backend and prints one JSON line of timings, for
// scripts/gpu-bench.sh. The prompts file is {"prompts": [[ids...], ...]}.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	"tally/backends"
	"tally/backends/gomlx"
)

// result is the line gpu-bench prints.
type result struct {
	Batch          int     `json:"batch"`
	PromptTokens   int     `json:"prompt_tokens"`
	NewTokens      int     `json:"new_tokens"`
	FirstSeconds   float64 `json:"first_run_s"` // includes compilation
	Seconds        float64 `json:"run_s"`
	PrefillSeconds float64 `json:"prefill_s"`
	TokensPerSec   float64 `json:"tokens_per_s"`
	DecodeMsPerTok float64 `json:"decode_ms_per_step"`
	Compilations   int     `json:"compilations"`
	IDs            [][]int `json:"ids"`
	Plan           string  `json:"plan"`
}

func main() {
	model := flag.String("model", "", "model directory")
	device := flag.String("device", "xla", "gomlx device: cpu or xla")
	prompts := flag.String("prompts", "", "JSON file of prompts")
	maxNew := flag.Int("new", 128, "new tokens per prompt")
	flag.Parse()
	if err := run(*model, *device, *prompts, *maxNew); err != nil {
		fmt.Fprintln(os.Stderr, "gpu-bench:", err)
		os.Exit(1)
	}
}

func run(model, device, promptsPath string, maxNew int) error {
	data, err := os.ReadFile(promptsPath)
	if err != nil {
		return fmt.Errorf("read prompts: %w", err)
	}
	var in struct {
		Prompts [][]int `json:"prompts"`
	}
	if err := json.Unmarshal(data, &in); err != nil {
		return fmt.Errorf("parse %s: %w", promptsPath, err)
	}
	if len(in.Prompts) == 0 {
		return fmt.Errorf("%s: no prompts", promptsPath)
	}
	ctx := context.Background()
	m, err := gomlx.Open(ctx, model, gomlx.Options{Device: device, MaxBatch: len(in.Prompts), FingerprintCache: "-"})
	if err != nil {
		return err
	}
	defer m.Close()
	// The model directory has no EOS id (hf.py), so every row runs its budget.
	reqs := make([]backends.Request, len(in.Prompts))
	for i, p := range in.Prompts {
		reqs[i] = backends.Request{Index: i, PromptIDs: p, MaxTokens: maxNew}
	}
	res := result{Batch: len(reqs), PromptTokens: len(in.Prompts[0]), NewTokens: maxNew, IDs: make([][]int, len(reqs))}
	if p, err := m.MemoryPlan(res.PromptTokens, maxNew); err == nil {
		res.Plan = p.String()
	} else {
		res.Plan = err.Error()
	}
	once := func(keep bool) (total, prefill time.Duration, err error) {
		start := time.Now()
		var first time.Time
		seen := 0
		err = m.Generate(ctx, reqs, func(ev backends.Event) bool {
			if ev.Err != nil {
				fmt.Fprintf(os.Stderr, "request %d: %v\n", ev.Index, ev.Err)
			}
			if len(ev.IDs) > 0 {
				seen++
				if seen == len(reqs) {
					first = time.Now()
				}
				if keep {
					res.IDs[ev.Index] = append(res.IDs[ev.Index], ev.IDs...)
				}
			}
			return true
		})
		return time.Since(start), first.Sub(start), err
	}
	t0, _, err := once(true)
	if err != nil {
		return fmt.Errorf("first run: %w", err)
	}
	total, prefill, err := once(false)
	if err != nil {
		return fmt.Errorf("timed run: %w", err)
	}
	res.FirstSeconds, res.Seconds, res.PrefillSeconds = t0.Seconds(), total.Seconds(), prefill.Seconds()
	res.TokensPerSec = float64(len(reqs)*maxNew) / total.Seconds()
	if maxNew > 1 {
		res.DecodeMsPerTok = (total - prefill).Seconds() * 1000 / float64(maxNew-1)
	}
	res.Compilations = m.Compilations()
	return json.NewEncoder(os.Stdout).Encode(res)
}
