package store

import (
	"context"
	"encoding/json"
	"fmt"

	"tally/internal/redact"
)

// FailedGenerations returns the generations the filter selects (its
// Settings are ignored) that ended in a failure (finish "error" or
// "context"), without their text, token ids and offsets: what a report
// needs to count failed samples, which have no scores. Errors are
// redacted, as every read of them is (a store written by an older tally
// may hold a server's message as it came).
func (s *Store) FailedGenerations(ctx context.Context, f Filter) ([]Generation, error) {
	q := `SELECT key,fingerprint,task,sample_id,prompt_tokens,n_tokens,budget,finish,stops,error,imported,COALESCE(run_id,0) FROM generations
		WHERE finish IN ('error','context')`
	where, args := f.where("")
	if where != "" {
		q += " AND " + where
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read failed generations: %w", err)
	}
	defer rows.Close()
	var out []Generation
	for rows.Next() {
		var g Generation
		var stops string
		if err := rows.Scan(&g.Key, &g.Fingerprint, &g.Task, &g.SampleID, &g.PromptTokens, &g.NTokens, &g.Budget, &g.Finish, &stops,
			&g.Error, &g.Imported, &g.RunID); err != nil {
			return nil, fmt.Errorf("read failed generations: %w", err)
		}
		g.Stops, g.Error = json.RawMessage(stops), redact.String(g.Error)
		out = append(out, g)
	}
	return out, rows.Err()
}

// EachGeneration calls fn with every generation the filter selects (its
// Settings are ignored), in no particular order, without its token ids,
// offsets: what a report shows of a continuation (its text, how it
// ended; its error redacted), read in one pass and held by the caller
// only as far as it wants.
func (s *Store) EachGeneration(ctx context.Context, f Filter, fn func(Generation) error) error {
	q := `SELECT key,fingerprint,task,sample_id,prompt_tokens,text,n_tokens,budget,finish,stops,error,imported FROM generations`
	where, args := f.where("")
	if where != "" {
		q += " WHERE " + where
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("read generations: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var g Generation
		var stops string
		if err := rows.Scan(&g.Key, &g.Fingerprint, &g.Task, &g.SampleID, &g.PromptTokens, &g.Text, &g.NTokens, &g.Budget, &g.Finish,
			&stops, &g.Error, &g.Imported); err != nil {
			return fmt.Errorf("read generations: %w", err)
		}
		g.Stops, g.Error = json.RawMessage(stops), redact.String(g.Error)
		if err := fn(g); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read generations: %w", err)
	}
	return nil
}
