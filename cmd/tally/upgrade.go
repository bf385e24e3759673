package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"tally/store"
	"tally/tasks/variant"
)

func newUpgradeCmd() *cobra.Command {
	var storePath string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "upgrade",
		Short: "Migrate a store to this tally's schema, splitting an earlier tally's tasks into their variants",
		Long: "upgrade migrates the store as any writing command does when it opens one, and says what it did. An earlier tally " +
			"stored a task by name, with one prompt per task and sample id: a second run with other settings (--fewshot 0 after the " +
			"default, another --data, --set or --chat) replaced the stored prompts while both runs' generations stayed. upgrade " +
			"splits such a task by the settings its runs were given: the variant of the task's newest run keeps the stored prompts, " +
			"every other variant keeps its generations and scores under a key of its own, its prompts marked not stored. " +
			"Read-only commands refuse such a store until it is upgraded; a store with one variant per task needs no upgrade to be read.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			up, err := store.Upgrade(cmd.Context(), storePath)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), up)
			}
			printUpgraded(cmd.OutOrStdout(), store.Redact(storePath), up)
			return nil
		},
	}
	cmd.Flags().StringVar(&storePath, "store", defaultStore(), "results store: a SQLite file or a PostgreSQL URL (default from $TALLY_STORE, else tally.db)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object instead of lines")
	return cmd
}

// printUpgraded says what store.Upgrade did.
func printUpgraded(w io.Writer, where string, up store.Upgraded) {
	switch {
	case up.From == up.To:
		fmt.Fprintf(w, "store %s: schema %d, this tally's: nothing to migrate\n", where, up.To)
	case up.From == 0:
		fmt.Fprintf(w, "store %s: at schema %d\n", where, up.To)
	default:
		fmt.Fprintf(w, "store %s: migrated from schema %d to %d\n", where, up.From, up.To)
	}
	keys := make([]string, len(up.Legacy))
	recs := map[string]variant.Record{}
	for i, r := range up.Legacy {
		keys[i], recs[r.Key] = r.Key, r
	}
	labels := variant.Labels(keys, recs)
	for _, r := range up.Legacy {
		prompts := "its prompts stored"
		if !r.Spec.Legacy.Prompts {
			prompts = "its prompts not stored (a later run with other settings replaced them)"
		}
		fmt.Fprintf(w, "task %s: %d generations, %s; stored as %s\n", labels[r.Key], up.Generations[r.Key], prompts, r.Key)
	}
}
