package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"sync"

	"golang.org/x/sync/errgroup"
)

// This file holds the reads that planning and rescoring make of many
// scores at once: each score crosses the driver as few columns as it can
// (the driver's cost is per column), and a large scan is split over the
// cores.

// addDigest records digest d for k (MixedDigest when k has another).
func addDigest(out map[ScoreKey]string, k ScoreKey, d string) {
	if old, ok := out[k]; ok && old != d {
		d = MixedDigest
	}
	out[k] = d
}

// scanScoreDigests is ScoreDigests by one scan of a model's scores, or
// of all scores (keeping the keys wanted) when the keys are a third of
// the store's generations or more: reading every score in storage order
// costs less than half of finding a model's through its generations (a
// lookup in two indexes a row). Every score is read in ranges, one a
// core (inRanges).
func (s *Store) scanScoreDigests(ctx context.Context, fingerprint string, want map[string]bool) (map[ScoreKey]string, error) {
	sep := s.fieldSep()
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM generations`).Scan(&total); err != nil {
		return nil, err
	}
	if 3*len(want) < total {
		return s.digestRows(ctx, want, `SELECT concat_ws(?, s.gen_key, s.task, s.sample_id, s.setting_key, s.budget, s.digest)
			FROM scores s JOIN generations g ON g.key = s.gen_key WHERE g.fingerprint=?`, sep, fingerprint)
	}
	all := `SELECT concat_ws(?, gen_key, task, sample_id, setting_key, budget, digest) FROM scores`
	var out map[ScoreKey]string
	var mu sync.Mutex
	err := s.inRanges(ctx, "scores", func(ctx context.Context, cond string, args ...any) error {
		part, err := s.digestRows(ctx, want, all+" WHERE "+cond, append([]any{sep}, args...)...)
		mu.Lock()
		defer mu.Unlock()
		if out == nil {
			out = part
			return err
		}
		for k, d := range part {
			addDigest(out, k, d)
		}
		return err
	})
	return out, err
}

// inRanges calls read for parts of a table that together cover it, at
// once, each named by a condition on its rows: for a SQLite store, one
// range of rowids a core ("rowid >= ? AND rowid < ?", its bounds as
// args); for PostgreSQL the whole table ("TRUE").
func (s *Store) inRanges(ctx context.Context, table string, read func(ctx context.Context, cond string, args ...any) error) error {
	if s.db.eng == postgresEngine {
		return read(ctx, "TRUE")
	}
	var lo, hi sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT MIN(rowid), MAX(rowid) FROM `+table).Scan(&lo, &hi); err != nil {
		return err
	}
	if !lo.Valid {
		return read(ctx, "TRUE")
	}
	parts := int64(min(runtime.GOMAXPROCS(0), maxOpenSQLite))
	step := (hi.Int64 - lo.Int64 + parts) / parts
	g, gctx := errgroup.WithContext(ctx)
	for i := range parts {
		from := lo.Int64 + i*step
		g.Go(func() error { return read(gctx, `rowid >= ? AND rowid < ?`, from, from+step) })
	}
	return g.Wait()
}

// digestRows runs a query of score rows (each one column joining gen_key,
// task, sample_id, setting_key, budget and digest) and collects the
// digests of the keys wanted. The scores of one key (one row per metric,
// usually with one digest) come together: a row equal to the one before
// it is skipped, and a key's strings are made once (task and setting
// names shared).
func (s *Store) digestRows(ctx context.Context, want map[string]bool, q string, args ...any) (map[ScoreKey]string, error) {
	sep := s.fieldSep()
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[ScoreKey]string{}
	names := map[string]string{}
	intern := func(b []byte) string {
		if x, ok := names[string(b)]; ok {
			return x
		}
		x := string(b)
		names[x] = x
		return x
	}
	var raw sql.RawBytes
	var prev []byte
	var genKey, sampleID string
	for rows.Next() {
		if err := rows.Scan(&raw); err != nil {
			return nil, err
		}
		if bytes.Equal(raw, prev) {
			continue
		}
		prev = append(prev[:0], raw...)
		parts := bytes.SplitN(raw, []byte(sep), 6)
		if len(parts) != 6 {
			return nil, fmt.Errorf("malformed score row %q", raw)
		}
		if string(parts[0]) != genKey {
			genKey = string(parts[0])
		}
		if !want[genKey] {
			continue
		}
		if string(parts[2]) != sampleID {
			sampleID = string(parts[2])
		}
		budget, err := strconv.Atoi(string(parts[4]))
		if err != nil {
			return nil, fmt.Errorf("malformed score row %q", raw)
		}
		addDigest(out, ScoreKey{GenKey: genKey, Task: intern(parts[1]), SampleID: sampleID, SettingKey: intern(parts[3]), Budget: budget}, string(parts[5]))
	}
	return out, rows.Err()
}

// ScoreStatesFor returns the stored scores of the given generation keys
// without their predictions, settings' display names and runs (each
// Score's key, metric, value and digest: what rescoring compares; the
// digest covers the prediction). Each row crosses the driver as two
// columns (its names joined, and its value), which costs a third of
// ScoresFor's.
func (s *Store) ScoreStatesFor(ctx context.Context, genKeys []string) ([]Score, error) {
	var out []Score
	sep := s.fieldSep()
	names := map[string]string{}
	intern := func(b []byte) string {
		if x, ok := names[string(b)]; ok {
			return x
		}
		x := string(b)
		names[x] = x
		return x
	}
	const chunk = 500
	for i := 0; i < len(genKeys); i += chunk {
		part := genKeys[i:min(i+chunk, len(genKeys))]
		rows, err := s.db.QueryContext(ctx, `SELECT concat_ws(?, gen_key, task, sample_id, setting_key, budget, metric, digest), value
			FROM scores WHERE gen_key IN (`+placeholders(len(part))+`)`, append([]any{sep}, anys(part)...)...)
		if err != nil {
			return nil, fmt.Errorf("read scores: %w", err)
		}
		var raw sql.RawBytes
		var v sql.NullFloat64
		var genKey string
		for rows.Next() {
			if err := rows.Scan(&raw, &v); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read scores: %w", err)
			}
			f := bytes.SplitN(raw, []byte(sep), 7)
			if len(f) != 7 {
				rows.Close()
				return nil, fmt.Errorf("read scores: malformed row %q", raw)
			}
			budget, err := strconv.Atoi(string(f[4]))
			if err != nil {
				rows.Close()
				return nil, fmt.Errorf("read scores: malformed row %q", raw)
			}
			if string(f[0]) != genKey {
				genKey = string(f[0])
			}
			x := Score{GenKey: genKey, Task: intern(f[1]), SampleID: string(f[2]), SettingKey: intern(f[3]), Budget: budget,
				Metric: intern(f[5]), Digest: string(f[6]), Value: math.NaN()}
			if v.Valid {
				x.Value = v.Float64
			}
			out = append(out, x)
		}
		if err := rows.Close(); err != nil {
			return nil, fmt.Errorf("read scores: %w", err)
		}
	}
	return out, nil
}

// scanGenerations is Generations by a scan of the model's rows (in ranges,
// one a core: inRanges), keeping the keys wanted.
func (s *Store) scanGenerations(ctx context.Context, fingerprint string, want map[string]bool) (map[string]Generation, error) {
	out := make(map[string]Generation, len(want))
	var mu sync.Mutex
	err := s.inRanges(ctx, "generations", func(ctx context.Context, cond string, args ...any) error {
		rows, err := s.db.QueryContext(ctx, "SELECT "+generationCols+" FROM generations WHERE fingerprint=? AND "+cond, append([]any{fingerprint}, args...)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			g, ok, err := scanGeneration(rows.Scan, want)
			if err != nil {
				return err
			}
			if ok {
				mu.Lock()
				out[g.Key] = g
				mu.Unlock()
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("read generations: %w", err)
	}
	return out, nil
}
