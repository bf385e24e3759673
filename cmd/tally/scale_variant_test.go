package main

import (
	"context"
	"testing"

	"tally/store"
	"tally/tasks"
	"tally/tasks/variant"
)

// scaleVariant keys a scale task's samples by its variant and records the
// variant in st, as tally run does, and returns the key its job runs
// under. scripts/scale-bench.sh gives a BASE that predates variants (no
// copy of this file) one that returns the task's name: its store is then
// written as an earlier tally wrote it, and the working tree's migration
// adopts it.
func scaleVariant(b *testing.B, st *store.Store, cfg *tasks.Config, loaded tasks.Loaded, spec, _ string) string {
	rec := cfg.Variant(loaded, tasks.VariantOptions{TaskSpec: spec})
	tasks.Keyed(loaded, rec)
	if err := st.PutVariants(context.Background(), []variant.Record{rec}); err != nil {
		b.Fatal(err)
	}
	return rec.Key
}
