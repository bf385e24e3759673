package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"tally/backends/imported"
	"tally/datasets/lmevallog"
	"tally/generate"
	"tally/importer"
	"tally/rescore"
	"tally/store"
	"tally/tasks/variant"
)

func newImportCmd() *cobra.Command {
	f := &runFlags{}
	var from string
	var followOut bool
	cmd := &cobra.Command{
		Use:   "import [FILE|DIR...]",
		Short: "Import lm-evaluation-harness files (samples_<task>_*.jsonl, as tally or lm-eval wrote them) into the store",
		Long: "import stores the outputs of an lm-evaluation-harness run (--log_samples, or the Open LLM Leaderboard's details in the same layout) " +
			"as generations of the model \"imported:NAME\", marked as imported: their text is already truncated at the harness's stop sequences, " +
			"so they can be re-scored under any metric and any stop setting that cuts inside them, but never extended. Then use " +
			"`tally rescore` or `tally compare` with --model imported:NAME and the same --tasks and --data.\n\n" +
			"With FILE or DIR arguments, import stores lm-eval output folders or sample logs as they are, with no task config: " +
			"files tally wrote with --output-path come back exactly (raw continuations, settings, scores); logs of any other " +
			"generate_until task come in as imported generations with the metric values the log holds (setting \"lm-eval\"). " +
			"Then `tally ls` and `tally report --store` show them. Only regular files are read: a FIFO, a device or a socket is refused, and so is " +
			"a symbolic link in DIR that leads out of it (--follow-symlinks allows those); a line longer than 16 MiB is refused, naming the file and line.\n\n" +
			"With --from SRC, import copies another tally store (a SQLite file or a PostgreSQL URL) into --store: its runs, samples, " +
			"generations and scores, as `tally export --store SRC --to STORE` does (with --model, one model's).",
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if from != "" || len(args) > 0 {
				if err := refuseUnused(cmd, "apply to `tally import --tasks T --data LOG` only (files and --from bring in what they hold as it is)",
					"tasks", "data", "set", "fewshot", "chat", "skip-bad"); err != nil {
					return err
				}
			}
			if from != "" {
				if err := refuseUnused(cmd, "applies to files and folders, not to --from", "follow-symlinks"); err != nil {
					return err
				}
				if len(args) > 0 {
					return fmt.Errorf("import: --from copies a store; pass no files with it")
				}
				return copyStore(cmd.Context(), from, f.storePath, f.model, f.json, cmd.OutOrStdout())
			}
			if len(args) > 0 {
				return importFiles(cmd, f, args, followOut)
			}
			return importLog(cmd, f)
		},
	}
	f.register(cmd, "", nil, omitImport)
	cmd.Flags().StringVar(&from, "from", "", "copy this tally store (a SQLite file or postgres://…) into --store")
	cmd.Flags().BoolVar(&followOut, "follow-symlinks", false, "read files in a DIR that are symbolic links to regular files outside it (refused by default)")
	return cmd
}

// importLog is tally import --tasks T --data LOG: an lm-eval sample log
// of task T, whose prompts must be T's, stored as model imported:NAME.
func importLog(cmd *cobra.Command, f *runFlags) error {
	name, ok := strings.CutPrefix(f.model, imported.Prefix)
	if !ok || name == "" {
		return fmt.Errorf("--model must be %sNAME, the name the imported outputs are stored under", imported.Prefix)
	}
	if f.data == "" || len(f.tasks) != 1 {
		return fmt.Errorf("pass one --tasks and the log as --data")
	}
	ctx := cmd.Context()
	if err := checkDataFile(f.data); err != nil {
		return err
	}
	recs, err := lmevallog.ReadFile(f.data)
	if err != nil {
		return err
	}
	if err := importer.CheckLog(f.data, recs); err != nil {
		return err
	}
	recs = lmevallog.OnePerDoc(recs) // a document logged once per filter (stop setting) is one sample
	lj, err := f.loadJobs(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	job := lj.jobs[0]
	if len(job.Samples) != len(recs) {
		return fmt.Errorf("%s: %d log lines but %d samples selected: import takes the whole log (no --limit or --samples)", f.data, len(recs), len(job.Samples))
	}
	fp := imported.Prefix + name
	gens := make([]store.Generation, len(recs))
	for i, r := range recs {
		s := job.Samples[i]
		if s.Prompt != r.Prompt {
			return fmt.Errorf("%s line %d: prompt does not match sample %s", f.data, r.Line, s.ID)
		}
		stops, _ := json.Marshal(map[string]any{"until": r.Until})
		text := r.Response
		if own, ok := r.Own(); ok {
			text = own.Raw // tally's own file: the continuation before any stop cut it
		}
		gens[i] = store.Generation{Key: generate.Key(fp, nil, r.Prompt), Fingerprint: fp, Task: s.Task, SampleID: s.ID,
			Text: text, Finish: "stop", Stops: stops, Imported: true}
	}
	st, err := store.Open(ctx, f.storePath)
	if err != nil {
		return err
	}
	defer st.Close()
	// Variant, samples and generations land together, or nothing does.
	b := store.Batch{Variants: lj.variants, Samples: make([]store.Sample, len(job.Samples)), Generations: gens}
	for i, s := range job.Samples {
		b.Samples[i] = rescore.ToStore(s)
	}
	if _, err := st.Apply(ctx, b); err != nil {
		return fmt.Errorf("import: nothing stored: %w", err)
	}
	task := variant.Name(job.Task)
	if f.json {
		return writeJSON(cmd.OutOrStdout(), map[string]any{"imported": len(gens), "model": fp, "task": task, "variant": job.Task})
	}
	fmt.Fprintf(cmd.OutOrStdout(), "imported %d generations of task %s as model %s into %s\n", len(gens), task, fp, store.Redact(f.storePath))
	return nil
}

// importFiles is tally import with file arguments.
func importFiles(cmd *cobra.Command, f *runFlags, args []string, followOut bool) error {
	ctx := cmd.Context()
	files, err := importer.Files(args, followOut)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("import: no samples_<task>_<date>.jsonl files in %s", strings.Join(args, " "))
	}
	name, _ := strings.CutPrefix(f.model, imported.Prefix)
	// Every file is read before anything is written, and all of it is
	// written in one transaction: an import stores everything or nothing.
	b, counts, err := importer.Collect(files, name, version())
	if err != nil {
		return err
	}
	st, err := store.Open(ctx, f.storePath)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := st.Apply(ctx, b); err != nil {
		return fmt.Errorf("import: nothing stored: %w", err)
	}
	if f.json {
		return writeJSON(cmd.OutOrStdout(), map[string]any{"imported": counts})
	}
	for _, p := range files {
		fmt.Fprintf(cmd.OutOrStdout(), "imported %d samples from %s\n", counts[p], p)
	}
	return nil
}
