package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"tally/backends"
	"tally/backends/gomlx"
	"tally/generate"
	"tally/report"
	"tally/tasks/lmeval"
	"tally/tasks/variant"
)

// chat reports whether the session prompts its model through the chat
// template (--chat, or every task saying chat: true).
func (s *session) chat() bool {
	c, _ := s.flags.modelOptions(s.cfgs, s.jobs).useChat()
	return c
}

// taskInfo is what the session's task configs say of themselves, for
// lm-eval files.
func (s *session) taskInfo() map[string]*report.TaskInfo {
	out := map[string]*report.TaskInfo{}
	for i, c := range s.cfgs {
		data := c.Data
		if s.flags.data != "" {
			data = s.flags.data
		}
		info := &report.TaskInfo{FewShot: c.FewShot, FewShotSeparator: c.FewShotSeparator, Prompt: c.Prompt, Target: c.Target,
			Data: data, Metrics: c.Metrics, Description: c.Description}
		if lm := c.LMEval(); lm != nil {
			// A task read from an lm-eval YAML writes its own config and
			// filter pipelines, its own generation being the setting of
			// its until.
			info.Version, info.FewShot, info.Prompt, info.Target, info.Description = lm.Version(), lm.NumFewshot(), "", "", ""
			info.OwnSetting, info.LMEvalConfig, info.Filters, info.LMEval = lmeval.UntilSetting, lm.ConfigDict(), lm.FilterPipelines(), lm
		}
		out[s.jobs[i].Task] = info
	}
	return out
}

// variantsByKey are the session's task variants, by key.
func (s *session) variantsByKey() map[string]variant.Record {
	out := make(map[string]variant.Record, len(s.variants))
	for _, r := range s.variants {
		out[r.Key] = r
	}
	return out
}

// labels names the session's tasks for people (variant.Labels): their
// names, told apart where two variants of one task run together.
func (s *session) labels() map[string]string {
	keys := make([]string, len(s.jobs))
	for i, j := range s.jobs {
		keys[i] = j.Task
	}
	return variant.Labels(keys, s.variantsByKey())
}

// dataset is the Dataset of the session's jobs under the given runs'
// results: the one source of the figures the command prints and the files
// it writes. full reads every sample's generation (for lm-eval files).
func (s *session) dataset(ctx context.Context, runs []report.RunResults, full, modelLabels bool) (*report.Dataset, error) {
	return s.datasetOf(ctx, s.jobs, runs, full, modelLabels)
}

// datasetOf is dataset for some of the session's jobs.
func (s *session) datasetOf(ctx context.Context, jobs []*generate.Job, runs []report.RunResults, full, modelLabels bool) (*report.Dataset, error) {
	return report.FromResults(ctx, s.st, jobs, runs, report.FromOptions{Full: full, ModelLabels: modelLabels,
		Totals: s.totals, Limit: s.flags.limit.N, Info: s.taskInfo(), Variants: s.variantsByKey()})
}

// lmevalOptions is what the session's runs say in lm-eval files: the
// evaluation's span (from start to now), and per model the device, batch
// size, backend and the chat template tally rendered.
func (s *session) lmevalOptions(start time.Time, runs []report.RunResults, bes []backends.Backend) report.LMEvalOptions {
	opt := report.LMEvalOptions{Version: version(), Start: start, End: time.Now(), Models: map[string]report.LMEvalModel{}}
	for i, r := range runs {
		if r.Plan == nil || i >= len(bes) {
			continue
		}
		m := report.LMEvalModel{Device: s.flags.device, BatchSize: s.flags.concurrency, Backend: bes[i].Name()}
		if nm, ok := bes[i].(*gomlx.Model); ok && r.Chat {
			if tmpl, err := nativeChatTemplate(nm, r.Model); err == nil {
				m.ChatTemplate = tmpl.Source()
			}
		}
		opt.Models[r.Plan.Fingerprint] = m
	}
	return opt
}

// writeOutputPath writes the lm-eval files of a dataset under dir
// (--output-path), saying on stderr what it wrote, or why a task's files
// hold no metric values.
func writeOutputPath(ds *report.Dataset, dir string, opt report.LMEvalOptions, stderr io.Writer) error {
	if dir == "" {
		return nil
	}
	paths, err := report.WriteLMEval(dir, ds, opt)
	for _, p := range paths {
		fmt.Fprintln(stderr, "wrote", p)
	}
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		var names []string
		for _, td := range ds.Tasks {
			names = append(names, td.Label)
		}
		fmt.Fprintf(stderr, "note: --output-path %s: nothing written: nothing stored for %s\n", dir, strings.Join(append(names, "the selection")[:max(len(names), 1)], ", "))
	}
	for _, td := range ds.Tasks {
		scored := false
		for _, r := range td.Rows {
			scored = scored || r.Scored > 0
		}
		if !scored {
			fmt.Fprintf(stderr, "tally: task %s: every sample failed; its lm-eval files list them (failed samples count as 0) with no metric values\n", td.Label)
		}
		if td.Info != nil && td.Info.Unread != "" {
			fmt.Fprintf(stderr, "tally: task %s: its task file could not be read again (%s): its lm-eval files' config and filters are what the store holds of them, not all that lm-eval writes (run the report where the run could read it, with the same --python)\n", td.Label, td.Info.Unread)
		}
		if td.PromptsLost() {
			fmt.Fprintf(stderr, "tally: task %s: no lm-eval files: the store does not hold its prompts (an earlier tally's store; `tally report` shows its scores)\n", td.Label)
		}
	}
	return nil
}

// figures are a dataset's means and sample counts per task and stop
// setting, as `--json` prints them (a setting's counts are its largest
// over metrics: a failed sample is under every metric).
func figures(ds *report.Dataset) (map[string]map[string]map[string]generate.Mean, map[string]map[string]generate.SampleCounts) {
	means := map[string]map[string]map[string]generate.Mean{}
	counts := map[string]map[string]generate.SampleCounts{}
	for _, r := range ds.Rows() {
		if means[r.Task] == nil {
			means[r.Task], counts[r.Task] = map[string]map[string]generate.Mean{}, map[string]generate.SampleCounts{}
		}
		if means[r.Task][r.Stop] == nil {
			means[r.Task][r.Stop] = map[string]generate.Mean{}
		}
		means[r.Task][r.Stop][r.Metric] = r.Mean.Estimate
		c := counts[r.Task][r.Stop]
		c.Scored, c.Failed = max(c.Scored, r.Scored), max(c.Failed, r.Failed)
		counts[r.Task][r.Stop] = c
	}
	return means, counts
}

// printRows writes a dataset's figures as the table run, rerun, demo and
// rescore print (task, setting, metric, mean, n, failed), then the failed
// samples.
func printRows(w io.Writer, ds *report.Dataset) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "task\tsetting\tmetric\tmean\tn\tfailed")
	for _, td := range ds.Tasks {
		byCol := map[string][]report.Row{}
		for _, r := range td.Rows {
			byCol[r.Setting] = append(byCol[r.Setting], r)
		}
		for _, c := range td.Columns {
			for _, r := range byCol[c.Label] {
				set := generate.StopSetting{Name: r.Stop, Seqs: r.Seqs}
				mean := "n/a"
				if v := float64(r.Mean.Estimate); !math.IsNaN(v) && !math.IsInf(v, 0) {
					mean = fmt.Sprintf("%.4f", v)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\n", r.Task, set.String(), r.Metric, mean, r.N, r.Failed)
			}
		}
	}
	tw.Flush()
	report.WriteFailed(w, ds.Rows(), 10)
}
