package generate

import (
	"context"
	"fmt"
	"time"

	"tally/backends"
	"tally/store"
)

// result is one finished request on its way to the store.
type result struct {
	it  *Item
	gen store.Generation
}

// writeOutcome is what the writer reports when the results are drained.
type writeOutcome struct {
	err        error
	unscorable []string
}

// writeResults commits the results as they come, in portions, until the
// channel is closed; ctx outlives an interrupt by store.CommitGrace, so
// that finished work is still written. The first failed commit is passed
// to fail (and reported once the results are drained).
func writeResults(ctx context.Context, st *store.Store, results <-chan result, opt Options, fail func(error)) writeOutcome {
	var gens []store.Generation
	var scores []store.Score
	var firstErr error
	var unscorable []string
	flush := func() {
		if len(gens) == 0 {
			return
		}
		// Stored and released together: peers waiting for these read
		// them from the store.
		if err := st.CommitGenerations(ctx, opt.Owner, gens, scores); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("store generations: %w", err)
			fail(firstErr)
		}
		gens, scores = gens[:0], scores[:0]
	}
	tick := time.NewTicker(opt.FlushEvery)
	defer tick.Stop()
	for {
		select {
		case r, ok := <-results:
			if !ok {
				flush()
				return writeOutcome{firstErr, unscorable}
			}
			gens = append(gens, r.gen)
			if r.gen.Finish != backends.FinishError && r.gen.Finish != backends.FinishContext {
				for k := range r.it.Job.Settings {
					sc, warn, fatal := scoreSetting(r.it, &r.gen, k, opt.RunID, nil)
					if fatal != nil && firstErr == nil {
						// The generation is kept; its scores are left to a
						// later rescore.
						firstErr = fatal
						fail(fatal)
					}
					if warn != "" {
						unscorable = append(unscorable, warn)
					}
					scores = append(scores, sc...)
				}
			}
			if len(gens) >= opt.FlushSize {
				flush()
			}
		case <-tick.C:
			flush()
		}
	}
}
