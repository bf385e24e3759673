package main

import (
	"github.com/spf13/cobra"

	"tally/store"
)

func newCheckCmd() *cobra.Command {
	var storePath string
	var repair bool
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check a store whole: SQLite's integrity_check and every row's seal; say what is lost and what a rerun generates again",
		Long: "check reads every page and row of a SQLite store: SQLite's integrity_check, the schema, every generation's seal, every packed row of scores' seal, " +
			"and each key's other copies (its rows of scores, its digest) against its packed row. It lists what is damaged, and per model and task " +
			"what `tally rerun` would generate again and what `tally rescore` would recompute. With --repair (when SQLite finds the file itself sound) " +
			"it drops the damaged rows and restores the copies whose packed row holds, in one transaction. Exit status 1 when the store is damaged (and not repaired).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := store.Check(cmd.Context(), storePath, repair)
			if err != nil {
				return err
			}
			r.Write(cmd.OutOrStdout())
			return r.Err()
		},
	}
	cmd.Flags().StringVar(&storePath, "store", defaultStore(), "the store to check: a SQLite file (default from $TALLY_STORE, else tally.db)")
	cmd.Flags().BoolVar(&repair, "repair", false, "drop the damaged rows (a rerun or rescore makes them again) and restore the copies whose packed row holds")
	return cmd
}
