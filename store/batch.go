package store

import (
	"context"
	"fmt"
	"time"

	"tally/tasks/variant"
)

// Batch is a set of writes that land together or not at all (Store.Apply):
// what one import brings into a store.
type Batch struct {
	// Runs are recorded as they are given, finished (Status, RunDone
	// when empty), never left RunRunning.
	Runs []Run
	// Variants are the records of the samples' task variants.
	Variants    []variant.Record
	Samples     []Sample
	Generations []Generation
	// Scores replace the scores stored for each (generation, sample,
	// setting, budget) present, as PutScores does.
	Scores []Score
}

// Apply writes the batch in one transaction: on any error nothing of it
// is stored, no run record either. It returns the ids of the runs
// recorded, in order.
func (s *Store) Apply(ctx context.Context, b Batch) ([]int64, error) {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	gens := redactErrors(b.Generations)
	var ids []int64
	err := s.tx(ctx, func(tx *txn) error {
		ids = ids[:0]
		for _, r := range b.Runs {
			status := r.Status
			if status == "" {
				status = RunDone
			}
			var id int64
			if err := tx.QueryRowContext(ctx, `INSERT INTO runs(started_at,finished_at,command,config,version,host,backend,model,fingerprint,status)
				VALUES(?,?,?,?,?,?,?,?,?,?) RETURNING id`, now, now, r.Command, nullJSON(r.Config), r.Version, r.Host, r.Backend,
				r.Model, r.Fingerprint, status).Scan(&id); err != nil {
				return fmt.Errorf("record run: %w", err)
			}
			ids = append(ids, id)
		}
		if err := putVariants(ctx, tx, b.Variants); err != nil {
			return err
		}
		if err := putSamples(ctx, tx, b.Samples); err != nil {
			return err
		}
		if err := putGenerations(ctx, tx, gens, now); err != nil {
			return err
		}
		return putScores(ctx, tx, b.Scores)
	})
	if err != nil {
		return nil, err
	}
	return ids, nil
}
