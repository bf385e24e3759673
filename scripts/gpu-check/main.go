// Command gpu-check is the Go side of scripts/gpu-check.sh, the prepared
// GPU run of issue 25 (see docs/gpu.md): one run on a CUDA machine that
// checks the native engine's parity on the fixture models, measures its
// throughput against transformers on random Llama-shaped weights, runs a
// long-context request inside the memory plan and a real DROP run, and
// writes one Markdown report and one JSON file. The script runs each step
// under a timeout and records it; this program does the work that needs
// Go (the engine, the weights, the comparisons, the report):
//
//	gpu-check weights -shape llama-8b|llama-1b|tiny -out DIR [-tokenizer FILE] [-seed N]
//	gpu-check prompts -vocab N -configs 1x512,8x4096 -out DIR [-seed N]
//	gpu-check longprompt -tokenizer FILE -tokens N -out FILE.jsonl
//	gpu-check parity -fixtures DIR -device D -dtypes float32,bfloat16 -out FILE.jsonl [-prompts N]
//	gpu-check bench -model DIR -name NAME -device D -dtype DT -prompts DIR -configs 1x512,... -new N -out FILE.jsonl [-device-memory BYTES] [-deadline UNIX]
//	gpu-check watch -out FILE.json -- CMD ARGS...
//	gpu-check step -name NAME -status ok|failed|timeout|skipped -rc N -seconds S [-log FILE] [-note TEXT] -out FILE.json
//	gpu-check summarize -work DIR -out DIR
//
// Every result is written as soon as it is known (one JSON line per fixture,
// per configuration), so a step stopped by its timeout still leaves what it
// measured.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// command is one subcommand: its name, one line of help, and its body.
type command struct {
	name, help string
	run        func(ctx context.Context, args []string) error
}

var commands = []command{
	{"weights", "write a random bf16 Llama-shaped checkpoint (config, tokenizer, safetensors)", runWeights},
	{"prompts", "write random prompt ids for each BATCHxLENGTH configuration", runPrompts},
	{"longprompt", "write a jsonl task file whose one prompt is exactly N tokens", runLongPrompt},
	{"parity", "the fixture models against their expected logits and greedy ids", runParity},
	{"bench", "tally's native engine: prefill/decode throughput per configuration", runBench},
	{"watch", "run a command, recording the peak GPU memory (or peak RSS without a GPU)", runWatch},
	{"step", "record one step of gpu-check.sh (status, time, log tail)", runStep},
	{"summarize", "write gpu-check.md and gpu-check.json from a work folder", runSummarize},
}

func main() {
	if len(os.Args) < 2 {
		usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	for _, c := range commands {
		if c.name == os.Args[1] {
			if err := c.run(ctx, os.Args[2:]); err != nil {
				fmt.Fprintf(os.Stderr, "gpu-check %s: %v\n", c.name, err)
				os.Exit(1)
			}
			return
		}
	}
	fmt.Fprintf(os.Stderr, "gpu-check: unknown command %q\n", os.Args[1])
	usage()
	os.Exit(2)
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: gpu-check COMMAND [flags] (the Go side of scripts/gpu-check.sh)")
	for _, c := range commands {
		fmt.Fprintf(os.Stderr, "  %-11s %s\n", c.name, c.help)
	}
}
