package main

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"tally/backends"
	"tally/generate"
	"tally/scoring/stats"
)

// compareRow is one (task, metric, setting) line of `tally compare`.
type compareRow struct {
	Task   string `json:"task"`
	Metric string `json:"metric"`
	// Setting names the column: the stop setting, prefixed by the model
	// when models are compared.
	Setting string         `json:"setting"`
	N       int            `json:"n"`
	Mean    stats.Interval `json:"mean"`
	// Diff is the paired difference against the first column, over the
	// samples both scored (absent for the first column).
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
	var against string
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Compare stop settings (or models) side by side from stored generations: mean, bootstrap 95% CI, paired difference, changed samples",
		Long: "compare scores every stop setting from the same stored generations (no model work) and shows, per task and metric, " +
			"the mean with a bootstrap 95% interval, the paired difference against the first column, and the samples whose score changed. " +
			"With --against MODEL, the same settings of a second model's stored generations are set beside the first's. " +
			"Settings that need more generation are reported; run `tally run` with the same flags first.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			s, err := f.open(ctx, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer s.Close()
			models := []string{f.model}
			backends := []backends.Backend{s.be}
			if against != "" {
				be, err := openModel(ctx, against, f.device, f.concurrency)
				if err != nil {
					return err
				}
				defer be.Close()
				models, backends = append(models, against), append(backends, be)
			}
			var results []generate.Results
			for i, be := range backends {
				p, err := generate.MakePlan(ctx, s.st, be, s.jobs)
				if err != nil {
					return err
				}
				if _, err := generate.Rescore(ctx, s.st, p, 0); err != nil {
					return err
				}
				if pending := p.Counts[generate.Continue] + p.Counts[generate.Missing] + p.Counts[generate.Failed]; pending > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "note: %s: %d (sample, setting) pairs need model work and are left out; run `tally run` with the same flags first\n", models[i], pending)
				}
				res, err := generate.ReadResults(ctx, s.st, p)
				if err != nil {
					return err
				}
				results = append(results, res)
			}
			if against == "" {
				models = nil // one model: columns are named by setting alone
			}
			rows := compareRows(s.jobs, models, results)
			if f.json {
				return writeJSON(cmd.OutOrStdout(), rows)
			}
			printCompare(cmd.OutOrStdout(), rows, showChanged)
			return nil
		},
	}
	f.register(cmd, "", nil)
	cmd.Flags().IntVar(&showChanged, "show-changed", 10, "list at most N changed samples per row (text output)")
	cmd.Flags().StringVar(&against, "against", "", "a second model whose stored generations are compared with --model's")
	return cmd
}

// compareRows makes one row per (task, metric, column), where the columns
// are every stop setting of every model (models names them when there are
// several), each paired by sample with the first column.
func compareRows(jobs []*generate.Job, models []string, results []generate.Results) []compareRow {
	var rows []compareRow
	for _, j := range jobs {
		metrics := map[string]bool{}
		for _, res := range results {
			for _, m := range res.Metrics(j.Task) {
				metrics[m] = true
			}
		}
		names := make([]string, 0, len(metrics))
		for m := range metrics {
			names = append(names, m)
		}
		sort.Strings(names)
		for _, m := range names {
			var first map[string]generate.SampleScore
			for mi, res := range results {
				for _, set := range j.Settings {
					xs := res[j.Task][set.Name][m]
					vals := make([]float64, len(xs))
					byID := make(map[string]generate.SampleScore, len(xs))
					for i, x := range xs {
						vals[i] = x.Value
						byID[x.SampleID] = x
					}
					label := set.String()
					if len(models) > 0 {
						label = models[mi] + " " + label
					}
					row := compareRow{Task: j.Task, Metric: m, Setting: label, N: len(xs),
						Mean: stats.Bootstrap(vals, bootstrapResamples, 0.95, bootstrapSeed)}
					if first == nil {
						first = byID
					} else {
						row.Diff, row.Changed = pairWith(first, byID)
					}
					rows = append(rows, row)
				}
			}
		}
	}
	return rows
}

// pairWith pairs a column's scores with the first column's by sample id and
// returns the paired difference and the samples whose score changed.
func pairWith(first, this map[string]generate.SampleScore) (*stats.Interval, []changed) {
	ids := make([]string, 0, len(this))
	for id := range this {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var a, b []float64
	var ch []changed
	for _, id := range ids {
		x, ok := first[id]
		if !ok {
			continue
		}
		y := this[id]
		a, b = append(a, x.Value), append(b, y.Value)
		if x.Value != y.Value {
			ch = append(ch, changed{id, x.Value, y.Value, x.Prediction, y.Prediction})
		}
	}
	d := stats.PairedBootstrap(a, b, bootstrapResamples, 0.95, bootstrapSeed)
	return &d, ch
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
