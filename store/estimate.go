package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// RunMeasures returns what the latest runs of a model fingerprint measured
// (at most limit, newest first), for a plan's time estimate: the runs that
// generated tokens, with their token counts, seconds of model work and the
// backend's stats (the native engine's prefill and decode seconds).
func (s *Store) RunMeasures(ctx context.Context, fingerprint string, limit int) ([]Run, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT generated_tokens, prompt_tokens, gen_seconds, stats FROM runs
		WHERE fingerprint=? AND gen_seconds > 0 AND generated_tokens > 0 ORDER BY id DESC LIMIT ?`, fingerprint, limit)
	if err != nil {
		return nil, fmt.Errorf("read run measures: %w", err)
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r := Run{Fingerprint: fingerprint}
		var stats string
		if err := rows.Scan(&r.GeneratedTokens, &r.PromptTokens, &r.GenSeconds, &stats); err != nil {
			return nil, fmt.Errorf("read run measures: %w", err)
		}
		r.Stats = json.RawMessage(stats)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read run measures: %w", err)
	}
	return out, nil
}

// Continuations returns up to limit stored generations of a model
// fingerprint (of task, a variant key, unless it is ""), made here (not
// imported) and not failed: their prompt's length, text, token offsets,
// token count, budget and finish, from which a plan reads where stop sequences ended the
// model's generations. Which of them is unspecified.
func (s *Store) Continuations(ctx context.Context, fingerprint, task string, limit int) ([]Generation, error) {
	q := `SELECT task, prompt_tokens, text, offsets, n_tokens, budget, finish FROM generations
		WHERE fingerprint=? AND imported=0 AND finish NOT IN ('error', 'context')`
	args := []any{fingerprint}
	if task != "" {
		q += ` AND task=?`
		args = append(args, task)
	}
	rows, err := s.db.QueryContext(ctx, q+` LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("read stored continuations: %w", err)
	}
	defer rows.Close()
	var out []Generation
	for rows.Next() {
		g := Generation{Fingerprint: fingerprint}
		var text, offs []byte
		if err := rows.Scan(&g.Task, &g.PromptTokens, &text, &offs, &g.NTokens, &g.Budget, &g.Finish); err != nil {
			return nil, fmt.Errorf("read stored continuations: %w", err)
		}
		g.Text, g.Offsets = string(text), unpackInts(offs)
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read stored continuations: %w", err)
	}
	return out, nil
}
