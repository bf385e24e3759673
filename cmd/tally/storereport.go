package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"

	"tally/report"
	"tally/rescore"
	"tally/store"
	"tally/tasks/variant"
)

// storeFilter turns --model, --tasks and --stop into a store filter: the
// model by name (as its runs recorded it) or fingerprint, tasks by name,
// stop settings by name (NAME or NAME=SEQ...).
func storeFilter(ctx context.Context, st *store.Store, model string, tasks, stops []string) (store.Filter, error) {
	f := store.Filter{}
	if len(tasks) > 0 {
		// A task name selects every stored variant of it; a variant's key
		// selects that one.
		keys, err := st.Tasks(ctx)
		if err != nil {
			return f, err
		}
		for _, k := range keys {
			if slices.Contains(tasks, k) || slices.Contains(tasks, variant.Name(k)) {
				f.Tasks = append(f.Tasks, k)
			}
		}
		if len(f.Tasks) == 0 {
			f.Tasks = tasks // none stored: the report says nothing matches
		}
	}
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
	st, err := openStoreReadOnly(ctx, f.storePath, stderr)
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
	title := "tally report: " + st.Path()
	var ds *report.Dataset
	if format == "html" && outputPath == "" {
		// The page is written task by task, never holding the store; a
		// lower collection target keeps the process near what it holds
		// (issue 23: 250 MB at 200,000 generations; 35 against 40 was
		// 0.96x the peak and 1.02x the CPU, 30 no less memory and 1.06x
		// the CPU). A memory limit instead (collections only near it)
		// costs less while the heap is small, but a collection all the
		// time once what the report holds passes it: three times the CPU
		// on a store of 2.4 million scores.
		defer debug.SetGCPercent(debug.SetGCPercent(35))
		ds, err = report.WriteHTMLStore(ctx, stdout, st, filter, title, report.LoadOptions{Fix: rs.Fix})
	} else {
		ds, err = report.LoadWith(ctx, st, filter, report.LoadOptions{Summary: outputPath == "", Fix: rs.Fix})
	}
	if err != nil {
		return err
	}
	noteChecked(stderr, rs, ds)
	ds.Title = title
	if len(ds.Tasks) == 0 {
		fmt.Fprintf(stderr, "note: no stored scores match in %s (see `tally ls`)\n", st.Path())
	}
	if outputPath != "" {
		runs, err := st.Runs(ctx)
		if err != nil {
			return err
		}
		if err := writeOutputPath(ds, outputPath, report.LMEvalOptionsOf(runs, version()), stderr); err != nil {
			return err
		}
	}
	rows := ds.Rows()
	switch format {
	case "json":
		return writeJSON(stdout, rows)
	case "markdown", "md":
		return report.Markdown(stdout, ds.Title, rows, showChanged)
	case "html":
		if outputPath == "" {
			return nil // written above
		}
		return report.WriteHTML(stdout, ds)
	}
	return report.Text(stdout, rows, showChanged)
}
