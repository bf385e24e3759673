package main

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"tally/generate"
	"tally/scoring/stats"
)

// compareRow is one (task, metric, setting) line of `tally compare`.
type compareRow struct {
	Task    string         `json:"task"`
	Metric  string         `json:"metric"`
	Setting string         `json:"setting"`
	N       int            `json:"n"`
	Mean    stats.Interval `json:"mean"`
	// Diff is the paired difference against the first setting, over the
	// samples both scored (absent for the first setting).
	Diff    *stats.Interval `json:"diff_vs_first,omitempty"`
	Changed []changed       `json:"changed,omitempty"`
}

type changed struct {
	SampleID string  `json:"sample_id"`
	First    float64 `json:"first"`
	This     float64 `json:"this"`
	// Predictions under the first setting and this one.
	FirstPrediction string `json:"first_prediction"`
	ThisPrediction  string `json:"this_prediction"`
}

const bootstrapResamples, bootstrapSeed = 2000, 20261122

func newCompareCmd() *cobra.Command {
	f := &runFlags{}
	var showChanged int
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Compare stop settings side by side from stored generations (mean, bootstrap 95% CI, paired difference, changed samples)",
		Long: "compare scores every stop setting from the same stored generations (no model work) and shows, per task and metric, " +
			"the mean with a bootstrap 95% interval, the paired difference against the first setting, and the samples whose score changed. " +
			"Settings that need more generation are reported; run `tally run` with the same settings first.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.model == "" {
				return fmt.Errorf("no model: pass --model")
			}
			ctx := cmd.Context()
			s, err := f.open(ctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer s.Close()
			p, err := generate.MakePlan(ctx, s.st, s.be, s.jobs)
			if err != nil {
				return err
			}
			if _, err := generate.Rescore(ctx, s.st, p, 0); err != nil {
				return err
			}
			if pending := p.Counts[generate.Continue] + p.Counts[generate.Missing] + p.Counts[generate.Failed]; pending > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "note: %d (sample, setting) pairs need model work and are left out; run `tally run` with the same flags first\n", pending)
			}
			res, err := generate.ReadResults(ctx, s.st, p)
			if err != nil {
				return err
			}
			rows := compareRows(s.jobs, res)
			if f.json {
				return writeJSON(cmd.OutOrStdout(), rows)
			}
			printCompare(cmd.OutOrStdout(), rows, showChanged)
			return nil
		},
	}
	f.register(cmd, "", nil)
	cmd.Flags().IntVar(&showChanged, "show-changed", 10, "list at most N changed samples per row (text output)")
	return cmd
}

func compareRows(jobs []*generate.Job, res generate.Results) []compareRow {
	var rows []compareRow
	for _, j := range jobs {
		for _, m := range res.Metrics(j.Task) {
			var first map[string]generate.SampleScore
			for k, set := range j.Settings {
				xs := res[j.Task][set.Name][m]
				vals := make([]float64, len(xs))
				byID := make(map[string]generate.SampleScore, len(xs))
				for i, x := range xs {
					vals[i] = x.Value
					byID[x.SampleID] = x
				}
				row := compareRow{Task: j.Task, Metric: m, Setting: set.String(), N: len(xs),
					Mean: stats.Bootstrap(vals, bootstrapResamples, 0.95, bootstrapSeed)}
				if k == 0 {
					first = byID
				} else {
					var a, b []float64
					ids := make([]string, 0, len(byID))
					for id := range byID {
						ids = append(ids, id)
					}
					sort.Strings(ids)
					for _, id := range ids {
						x, ok := first[id]
						if !ok {
							continue
						}
						y := byID[id]
						a, b = append(a, x.Value), append(b, y.Value)
						if x.Value != y.Value {
							row.Changed = append(row.Changed, changed{id, x.Value, y.Value, x.Prediction, y.Prediction})
						}
					}
					d := stats.PairedBootstrap(a, b, bootstrapResamples, 0.95, bootstrapSeed)
					row.Diff = &d
				}
				rows = append(rows, row)
			}
		}
	}
	return rows
}

func printCompare(w io.Writer, rows []compareRow, showChanged int) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "task\tmetric\tsetting\tn\tmean\t95% CI\tdiff vs first\t95% CI\tchanged")
	for _, r := range rows {
		diff, dci := "", ""
		if r.Diff != nil {
			diff = fmt.Sprintf("%+.4f", r.Diff.Estimate)
			dci = fmt.Sprintf("[%+.4f, %+.4f]", r.Diff.Low, r.Diff.High)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.4f\t[%.4f, %.4f]\t%s\t%s\t%d\n", r.Task, r.Metric, r.Setting, r.N,
			r.Mean.Estimate, r.Mean.Low, r.Mean.High, diff, dci, len(r.Changed))
	}
	tw.Flush()
	for _, r := range rows {
		if len(r.Changed) == 0 || showChanged <= 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s %s: samples whose score changed under %s\n", r.Task, r.Metric, r.Setting)
		for i, c := range r.Changed {
			if i == showChanged {
				fmt.Fprintf(w, "  … %d more (use --json)\n", len(r.Changed)-i)
				break
			}
			fmt.Fprintf(w, "  %s: %.4g → %.4g  %q → %q\n", c.SampleID, c.First, c.This, c.FirstPrediction, c.ThisPrediction)
		}
	}
}
