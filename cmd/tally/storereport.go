package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"tally/generate"
	"tally/report"
	"tally/rescore"
	"tally/store"
)

// storeFilter turns --model, --tasks and --stop into a store filter: the
// model by name (as its runs recorded it) or fingerprint, tasks by name,
// stop settings by name (NAME or NAME=SEQ...).
func storeFilter(ctx context.Context, st *store.Store, model string, tasks, stops []string) (store.Filter, error) {
	f := store.Filter{Tasks: tasks}
	for _, s := range stops {
		name, _, _ := strings.Cut(s, "=")
		f.Settings = append(f.Settings, name)
	}
	if model == "" {
		return f, nil
	}
	models, err := st.Models(ctx)
	if err != nil {
		return f, err
	}
	for fp, m := range models {
		if m == model || fp == model || fp == "imported:"+model {
			f.Fingerprints = append(f.Fingerprints, fp)
		}
	}
	if len(f.Fingerprints) == 0 {
		return f, fmt.Errorf("no model %q in %s (see `tally ls`)", model, st.Path())
	}
	slices.Sort(f.Fingerprints)
	return f, nil
}

// storeReport is tally report from the store alone: every stored model ×
// task × stop setting (narrowed by --model, --tasks, --stop), in the
// chosen format, and the lm-eval files under outputPath when set.
func storeReport(ctx context.Context, f *runFlags, format, outputPath string, showChanged int, stdout, stderr io.Writer) error {
	st, err := openStoreReadOnly(ctx, f.storePath)
	if err != nil {
		return err
	}
	defer st.Close()
	if models, err := st.Models(ctx); err != nil {
		return err
	} else if len(models) == 0 {
		return noResults(f.storePath)
	}
	filter, err := storeFilter(ctx, st, f.model, f.tasks, f.stops)
	if err != nil {
		return err
	}
	// Stale scores are recomputed in memory; tables need the summary
	// alone; the HTML page and lm-eval files show every sample.
	rs, err := rescore.New(ctx, st)
	if err != nil {
		return err
	}
	opt := report.LoadOptions{Summary: format != "html" && outputPath == "", Fix: rs.Fix}
	ds, err := report.LoadWith(ctx, st, filter, opt)
	if err != nil {
		return err
	}
	noteChecked(stderr, rs)
	ds.Title = "tally report: " + st.Path()
	if len(ds.Tasks) == 0 {
		fmt.Fprintf(stderr, "note: no stored scores match in %s (see `tally ls`)\n", st.Path())
	}
	if outputPath != "" {
		paths, err := report.WriteLMEval(outputPath, ds, version(), time.Now())
		if err != nil {
			return err
		}
		for _, p := range paths {
			fmt.Fprintln(stderr, "wrote", p)
		}
	}
	var rows []report.Row
	for _, td := range ds.Tasks {
		rows = append(rows, td.Rows...)
	}
	switch format {
	case "json":
		return writeJSON(stdout, rows)
	case "markdown", "md":
		return report.Markdown(stdout, ds.Title, rows, showChanged)
	case "html":
		return report.WriteHTML(stdout, ds)
	}
	return report.Text(stdout, rows, showChanged)
}

// writeOutputPath writes the lm-eval files of the given model and jobs
// (their tasks and the stop settings they scored, which for an lm-eval
// task include its "until" beside --stop) after a run or rescore
// (--output-path).
func writeOutputPath(ctx context.Context, st *store.Store, f *runFlags, jobs []*generate.Job, dir string, stderr io.Writer) error {
	if dir == "" {
		return nil
	}
	var settings []string
	if len(f.stops) > 0 {
		seen := map[string]bool{}
		for _, j := range jobs {
			for _, s := range j.Settings {
				if !seen[s.Name] {
					seen[s.Name] = true
					settings = append(settings, s.Name)
				}
			}
		}
	}
	filter, err := storeFilter(ctx, st, f.model, jobTasks(jobs), settings)
	if err != nil {
		return err
	}
	rs, err := rescore.New(ctx, st)
	if err != nil {
		return err
	}
	ds, err := report.LoadWith(ctx, st, filter, report.LoadOptions{Fix: rs.Fix})
	if err != nil {
		return err
	}
	paths, err := report.WriteLMEval(dir, ds, version(), time.Now())
	if err != nil {
		return err
	}
	if len(paths) == 0 {
		fmt.Fprintf(stderr, "note: --output-path %s: nothing written: no scored samples of %s on %s\n", dir, f.model, strings.Join(jobTasks(jobs), ", "))
	}
	for _, p := range paths {
		fmt.Fprintln(stderr, "wrote", p)
	}
	return nil
}

// jobTasks are the task names of a session's jobs.
func jobTasks(jobs []*generate.Job) []string {
	out := make([]string, len(jobs))
	for i, j := range jobs {
		out[i] = j.Task
	}
	return out
}
