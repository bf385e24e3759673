// Command tally evaluates local LLMs on long-context and generative
// benchmarks: it generates once into a durable store, re-runs only what a
// change affects, and scores stored generations under any stop setting.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"tally/internal/atomicfile"
	"tally/internal/lmevalcli"
	"tally/internal/redact"
	"tally/store"
	"tally/tasks/lmeval"
)

// Exit statuses (documented in the README).
const (
	// ExitError: the command failed (bad flags, data, model or store).
	ExitError = 1
	// ExitFailed: the command completed, but some samples failed (backend
	// error, prompt beyond the context); they count as 0 in the means
	// printed.
	ExitFailed = 3
	// ExitInterrupted: interrupted (Ctrl-C, SIGTERM); finished work is
	// committed.
	ExitInterrupted = 130
)

// exitError is an error that sets tally's exit status.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	interrupted := interrupts(cancel, os.Stderr, func(code int) { undoAtExit(); atomicfile.RemovePending(); os.Exit(code) })
	err := newRoot().ExecuteContext(ctx)
	stopPython()
	cancel()
	code := exitStatus(err, os.Stderr)
	if interrupted.Load() && code != ExitInterrupted {
		// The command ended on its own after the signal: it was still
		// interrupted.
		fmt.Fprintln(os.Stderr, "tally: interrupted; finished work is committed, run the same command again to resume")
		code = ExitInterrupted
	}
	if code != 0 && code != ExitFailed {
		undoAtExit()
	}
	atomicfile.RemovePending()
	os.Exit(code)
}

// interruptBound is how long after the first SIGINT or SIGTERM tally
// ends at the latest, whatever it is doing: the writes that record
// finished work get store.CommitGrace, and a command waiting on something
// that ignores its cancelled context (a read of a pipe that never ends,
// a file system that does not answer) is ended this much after the
// signal.
const interruptBound = store.CommitGrace + 2*time.Second

// interrupts makes SIGINT and SIGTERM cancel the command's context (work
// stops, and what finished is committed within a few seconds: see
// store.CommitGrace); a command still running interruptBound later, or a
// second signal, ends tally with status ExitInterrupted through exit
// (every write is a transaction, every file written whole: nothing
// committed is lost). The flag it returns says whether a signal came.
func interrupts(cancel context.CancelFunc, w io.Writer, exit func(code int)) *atomic.Bool {
	var came atomic.Bool
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		came.Store(true)
		cancel()
		select {
		case <-sigs:
			fmt.Fprintln(w, "tally: interrupted again: exiting now; committed work is kept, run the same command again to resume")
		case <-time.After(interruptBound):
			fmt.Fprintf(w, "tally: interrupted: still busy %s after the signal, exiting now; committed work is kept, run the same command again to resume\n", interruptBound)
		}
		exit(ExitInterrupted)
	}()
	return &came
}

// exitStatus prints err (if any) on w and returns the exit status for it.
func exitStatus(err error, w io.Writer) int {
	if err == nil {
		return 0
	}
	err = store.Explain(err) // a damaged store's raw SQLite error names the store
	if errors.Is(err, context.Canceled) {
		fmt.Fprintln(w, "tally: interrupted; finished work is committed, run the same command again to resume")
		return ExitInterrupted
	}
	// Every message goes through one redaction: the OpenAI API key (a
	// server may echo it), Authorization values, store passwords.
	fmt.Fprintln(w, "tally:", redact.String(err.Error(), os.Getenv("OPENAI_API_KEY")))
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return ExitError
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
		newExportCmd(),
		newCompareCmd(),
		newReportCmd(),
		newLsCmd(),
		newUpgradeCmd(),
		newCheckCmd(),
		newMetricCmd(),
		newTasksCmd(),
		newGenerateCmd(),
		newTokenizeCmd(),
		newVersionCmd(),
	)
	understandLMEval(root)
	return root
}

// understandLMEval makes root's commands take lm-evaluation-harness's
// spellings (--num_fewshot, --output_path, --model hf --model_args …) as
// aliases of tally's flags, and refuse the others with one line naming
// tally's spelling. Call it after every subcommand is added.
func understandLMEval(root *cobra.Command) {
	root.SetGlobalNormalizationFunc(lmevalcli.Normalize)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if refused := refusedFlag(c, err); refused != nil {
			return refused
		}
		return lmevalcli.FlagError(c.CommandPath(), c.Flags(), err)
	})
	root.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if err := lmevalcli.ApplyModelArgs(c.Flags()); err != nil {
			return err
		}
		usePython(c)
		return nil
	}
}

// pythonHelp is --python's help.
const pythonHelp = "opt in to running lm-eval task folders' Python functions that tally has no Go port of, with this interpreter " +
	"(e.g. python3; default $" + lmeval.EnvPython + "): this runs the task folder's code (docs/security.md)"

// stopPython ends the Python bridge's worker, if a command started one.
var stopPython = func() {}

// usePython turns the Python bridge on for the command when its --python
// flag or $TALLY_LMEVAL_PYTHON names an interpreter.
func usePython(c *cobra.Command) {
	python := ""
	if f := c.Flags().Lookup("python"); f != nil {
		python = f.Value.String()
	}
	if c.Name() == "tasks" {
		return // the survey counts; it runs no Python
	}
	_, stopPython = lmeval.UsePython(c.Context(), python)
}
