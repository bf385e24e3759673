// Command tally evaluates local LLMs on long-context and generative
// benchmarks: it generates once into a durable store, re-runs only what a
// change affects, and scores stored generations under any stop setting.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot()
	if err := root.ExecuteContext(ctx); err != nil {
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "tally: interrupted; finished work is committed, run the same command again to resume")
			os.Exit(130)
		}
		fmt.Fprintln(os.Stderr, "tally:", err)
		os.Exit(1)
	}
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "tally",
		Short:         "Evaluate local LLMs on long-context and generative benchmarks",
		Long:          "tally generates once into a results store (SQLite), re-runs only what a change affects, and scores stored generations under any stop setting.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newRunCmd("run", "Generate and score a benchmark run"),
		newRunCmd("rerun", "Do exactly the work that `tally plan` shows, and nothing else"),
		newRunCmd("demo", "Run the demo task on the embedded demo model (no GPU, server or download)"),
		newPlanCmd(),
		newRescoreCmd(),
		newImportCmd(),
		newCompareCmd(),
		newReportCmd(),
		newLsCmd(),
		newMetricCmd(),
		newTasksCmd(),
		newGenerateCmd(),
		newTokenizeCmd(),
		newVersionCmd(),
	)
	return root
}
