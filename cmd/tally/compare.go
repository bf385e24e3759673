package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"tally/backends"
	"tally/generate"
	"tally/report"
)

func newCompareCmd() *cobra.Command {
	return comparisonCmd("compare", "text",
		"Compare stop settings (or models) side by side from stored generations: mean, 95% CI (Wilson score interval), paired difference, changed samples",
		"compare scores every stop setting from the same stored generations (no model work, and it never writes the store) and shows, per task and metric, "+
			"the mean with a 95% interval inside the scores' range (Wilson's score interval; docs/results.md), the paired difference against the first setting, and the samples whose score changed. "+
			"With --against MODEL, the second model's stored generations are set beside the first's, each setting paired by sample with the first model at the same setting. "+
			"Settings that need more generation are reported; run `tally run` with the same flags first.")
}

func newReportCmd() *cobra.Command {
	return comparisonCmd("report", "markdown",
		"Render everything stored as Markdown, HTML, text or JSON (no model work; stale scores are recomputed in memory, never written)",
		"report renders the stored scores per task, metric and stop setting "+
			"(and model, with --against), with 95% intervals (Wilson score intervals, inside the scores' range) and paired differences. It never writes the store: a score whose inputs "+
			"changed since it was stored (data, metrics, task fields) is recomputed in memory first, and the number recomputed is said on stderr.")
}

// comparisonCmd builds compare and report: read-only commands that differ
// only in their default format (text for compare, Markdown for report).
func comparisonCmd(use, defFormat, short, long string) *cobra.Command {
	f := &runFlags{}
	var showChanged int
	var against, format string
	var againstChat bool
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.json {
				format = "json"
			}
			switch format {
			case "text", "markdown", "md", "html", "json":
			default:
				return fmt.Errorf("--format %q: want text, markdown, html or json", format)
			}
			ctx := cmd.Context()
			if against == "" {
				if err := refuseUnused(cmd, "applies to the --against model only", "against-chat"); err != nil {
					return err
				}
			}
			// report with no data-selecting flags: everything stored, from
			// the store alone (--model/--tasks/--stop only filter).
			if use == "report" && against == "" && !changedAny(cmd, "data", "set", "fewshot", "chat", "limit", "max-tokens", "samples") {
				if err := refuseUnused(cmd, "report without --data, --set, --fewshot, --chat, --limit, --max-tokens or --samples renders everything stored "+
					"and opens no model; with one of them these choose the model (its arithmetic, its server) whose scores of that task variant it shows",
					"device", "dtype", "base-url", "model-revision", "skip-bad"); err != nil {
					return err
				}
				done := func() {}
				if out, ok := cmd.OutOrStdout().(*os.File); ok && format == "html" {
					done = wholeOutput(out) // the page is written as it is made: whole or nothing
				}
				err := storeReport(ctx, f, format, f.outputPath, showChanged, cmd.OutOrStdout(), cmd.ErrOrStderr())
				if err == nil {
					done()
				}
				return err
			}
			s, err := f.open(ctx, cmd.ErrOrStderr(), true)
			if err != nil {
				return err
			}
			defer s.Close()
			models := []string{f.model}
			bes := []backends.Backend{s.be}
			chats := []bool{s.chat()}
			if against != "" {
				opts := f.modelOptions(s.cfgs, s.jobs)
				if cmd.Flags().Changed("against-chat") {
					opts.chat, opts.taskChat = againstChat, nil
				}
				be, err := openModel(ctx, against, opts)
				if err != nil {
					return err
				}
				defer be.Close()
				c, _ := opts.useChat()
				models, bes, chats = append(models, against), append(bes, be), append(chats, c)
			}
			started := time.Now()
			runs, err := collect(ctx, s, models, chats, bes, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			ds, err := s.dataset(ctx, runs, f.outputPath != "", against != "")
			if err != nil {
				return err
			}
			if err := writeOutputPath(ds, f.outputPath, s.lmevalOptions(started, runs, bes), cmd.ErrOrStderr()); err != nil {
				return err
			}
			rows := ds.Rows()
			title := "tally: " + strings.Join(f.tasks, ", ") + " on " + report.ModelLabel(f.model, chats[0])
			if against != "" {
				title += " vs " + report.ModelLabel(against, chats[1])
			}
			out := cmd.OutOrStdout()
			switch format {
			case "json":
				err = writeJSON(out, rows)
			case "markdown", "md":
				err = report.Markdown(out, title, rows, showChanged)
			case "html":
				err = report.HTML(out, title, rows, showChanged)
			default:
				err = report.Text(out, rows, showChanged)
			}
			if err != nil {
				return err
			}
			for _, r := range runs {
				if err := failedExit(r.Results.Failures()); err != nil {
					return err
				}
			}
			return nil
		},
	}
	f.register(cmd, "", nil, omitStored)
	cmd.Flags().StringVar(&format, "format", defFormat, "output: text, markdown, html or json (--json is json)")
	cmd.Flags().IntVar(&showChanged, "show-changed", 10, "list at most N changed samples per row")
	cmd.Flags().StringVar(&against, "against", "", "a second model whose stored generations are set beside --model's (prompted as --model is, chat or raw)")
	cmd.Flags().BoolVar(&againstChat, "against-chat", false, "prompt the --against model through its chat template (or, =false, raw) whatever --model does: a chat run is compared with a raw one only when asked")
	return cmd
}

// collect reads each model's current scores for the session's tasks,
// without writing the store: stored scores whose digest is current are
// used, stale or missing ones are computed in memory.
func collect(ctx context.Context, s *session, models []string, chats []bool, bes []backends.Backend, stderr io.Writer) ([]report.RunResults, error) {
	var runs []report.RunResults
	for i, be := range bes {
		p, err := generate.MakePlan(ctx, s.st, be, s.jobs)
		if err != nil {
			return nil, err
		}
		res, rep, err := generate.CurrentResults(ctx, s.st, p, generate.ScoreOptions{})
		if err != nil {
			return nil, err
		}
		warnUnscorable(stderr, rep.Unscorable)
		noteRecomputed(stderr, rep.Recomputed, false)
		if pending := p.Counts[generate.Continue] + p.Counts[generate.Missing]; pending > 0 {
			fmt.Fprintf(stderr, "note: %s: %d (sample, setting) pairs need model work and are left out; run `tally run` with the same flags first\n", models[i], pending)
		}
		runs = append(runs, report.RunResults{Model: models[i], Chat: chats[i], DType: productsDType(be), Plan: p, Results: res})
	}
	return runs, nil
}

// changedAny reports whether any of the named flags was given.
func changedAny(cmd *cobra.Command, names ...string) bool {
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			return true
		}
	}
	return false
}
