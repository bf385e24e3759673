package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"tally/backends"
	"tally/generate"
	"tally/report"
)

func newCompareCmd() *cobra.Command {
	return comparisonCmd("compare", true,
		"Compare stop settings (or models) side by side from stored generations: mean, bootstrap 95% CI, paired difference, changed samples",
		"compare scores every stop setting from the same stored generations (no model work) and shows, per task and metric, "+
			"the mean with a bootstrap 95% interval, the paired difference against the first column, and the samples whose score changed. "+
			"With --against MODEL, the same settings of a second model's stored generations are set beside the first's. "+
			"Settings that need more generation are reported; run `tally run` with the same flags first.")
}

func newReportCmd() *cobra.Command {
	return comparisonCmd("report", false,
		"Render stored scores as Markdown, HTML, text or JSON (no scoring, no model work)",
		"report renders the scores already in the store, as `tally run` or `tally rescore` left them, per task, metric and stop setting "+
			"(and model, with --against), with bootstrap 95% intervals and paired differences. It never recomputes a score.")
}

// comparisonCmd builds compare and report: they differ in whether stored
// generations are (re)scored first and in the default format.
func comparisonCmd(use string, rescore bool, short, long string) *cobra.Command {
	f := &runFlags{}
	var showChanged int
	var against, format string
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
			if !rescore && against == "" { // report: from the store alone
				return storeReport(ctx, f, format, f.outputPath, showChanged, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			s, err := f.open(ctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer s.Close()
			models := []string{f.model}
			bes := []backends.Backend{s.be}
			if against != "" {
				be, err := openModel(ctx, against, f.device, f.concurrency)
				if err != nil {
					return err
				}
				defer be.Close()
				models, bes = append(models, against), append(bes, be)
			}
			results, err := collect(ctx, s, models, bes, rescore, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if against == "" {
				models = nil // one model: columns are named by setting alone
			}
			rows := report.Compare(s.jobs, models, results)
			title := "tally: " + strings.Join(f.tasks, ", ") + " on " + f.model
			if against != "" {
				title += " vs " + against
			}
			out := cmd.OutOrStdout()
			switch format {
			case "json":
				return writeJSON(out, rows)
			case "markdown", "md":
				return report.Markdown(out, title, rows, showChanged)
			case "html":
				return report.HTML(out, title, rows, showChanged)
			}
			return report.Text(out, rows, showChanged)
		},
	}
	f.register(cmd, "", nil)
	def := "text"
	if !rescore {
		def = "markdown"
	}
	cmd.Flags().StringVar(&format, "format", def, "output: text, markdown, html or json (--json is json)")
	cmd.Flags().IntVar(&showChanged, "show-changed", 10, "list at most N changed samples per row")
	cmd.Flags().StringVar(&against, "against", "", "a second model whose stored generations are set beside --model's")
	return cmd
}

// collect reads each model's stored scores for the session's tasks, first
// scoring what the stored generations answer when rescore is set.
func collect(ctx context.Context, s *session, models []string, bes []backends.Backend, rescore bool, stderr io.Writer) ([]generate.Results, error) {
	var results []generate.Results
	for i, be := range bes {
		p, err := generate.MakePlan(ctx, s.st, be, s.jobs)
		if err != nil {
			return nil, err
		}
		if rescore {
			_, unscorable, err := generate.Rescore(ctx, s.st, p, 0)
			if err != nil {
				return nil, err
			}
			warnUnscorable(stderr, unscorable)
		}
		if pending := p.Counts[generate.Continue] + p.Counts[generate.Missing] + p.Counts[generate.Failed]; pending > 0 {
			fmt.Fprintf(stderr, "note: %s: %d (sample, setting) pairs need model work and are left out; run `tally run` with the same flags first\n", models[i], pending)
		}
		res, err := generate.ReadResults(ctx, s.st, p)
		if err != nil {
			return nil, err
		}
		results = append(results, res)
	}
	return results, nil
}
