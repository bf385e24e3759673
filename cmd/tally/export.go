package main

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"tally/internal/lmevalcli"
	"tally/store"
)

func newExportCmd() *cobra.Command {
	var from, to, model string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "export --to DEST",
		Short: "Copy the store's runs (generations, scores, samples, run records) into another store, SQLite or PostgreSQL",
		Long: "export copies everything the store holds, or one model's runs with --model, into the store DEST: a SQLite file " +
			"(created if needed) or a PostgreSQL URL postgres://…, whichever engine the source is. Rows are copied as they are, " +
			"so `tally report --store DEST` and `tally ls --store DEST` show what they show for the source; generations and scores " +
			"replace those with the same keys, and a run already copied is not copied again. `tally import --from SRC` is the " +
			"same copy seen from the destination.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to == "" {
				return fmt.Errorf("export: pass --to DEST (a SQLite file or postgres://…)")
			}
			return copyStore(cmd.Context(), from, to, model, asJSON, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&from, "store", defaultStore(), "the store to copy from: a SQLite file or a PostgreSQL URL (default from $TALLY_STORE, else tally.db)")
	cmd.Flags().StringVar(&to, "to", "", "the store to copy into: a SQLite file or a PostgreSQL URL")
	cmd.Flags().StringVar(&model, "model", "", "copy only the runs of this model, as run's --model named it ("+lmevalcli.ModelForms+"), or of this fingerprint")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}

// copyStore copies the store at from (read only) into the store at to,
// all of it or one model's part.
func copyStore(ctx context.Context, from, to, model string, asJSON bool, w io.Writer) error {
	if from == to || store.Redact(from) == store.Redact(to) {
		return fmt.Errorf("copy: source and destination are the same store %s", store.Redact(from))
	}
	src, err := store.OpenReadOnly(ctx, from)
	if err != nil {
		return err
	}
	defer src.Close()
	fps := []string{""}
	if model != "" {
		models, err := src.Models(ctx)
		if err != nil {
			return err
		}
		fps = nil
		for fp, name := range models {
			if name == model || fp == model {
				fps = append(fps, fp)
			}
		}
		if len(fps) == 0 {
			return fmt.Errorf("copy: no model %q in %s (tally ls lists them)", model, store.Redact(from))
		}
		slices.Sort(fps)
	}
	dst, err := store.Open(ctx, to)
	if err != nil {
		return err
	}
	defer dst.Close()
	var total store.CopyStats
	for _, fp := range fps {
		n, err := src.Copy(ctx, dst, fp)
		if err != nil {
			return fmt.Errorf("copy %s to %s: %w", store.Redact(from), store.Redact(to), err)
		}
		total.Runs += n.Runs
		total.Samples += n.Samples
		total.Generations += n.Generations
		total.Scores += n.Scores
	}
	if asJSON {
		return writeJSON(w, struct {
			From string `json:"from"`
			To   string `json:"to"`
			store.CopyStats
		}{store.Redact(from), store.Redact(to), total})
	}
	_, err = fmt.Fprintf(w, "copied %d runs, %d samples, %d generations, %d scores from %s to %s\n",
		total.Runs, total.Samples, total.Generations, total.Scores, store.Redact(from), store.Redact(to))
	return err
}
