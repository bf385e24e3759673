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

// keyDigests is ScoreDigests from score_digests (one row a key, where
// scores has one a metric): by one scan of the model's rows, or of all
// rows when the keys are a third of the store's generations or more, or,
// for few keys, by lookups of the keys in chunks.
func (s *Store) keyDigests(ctx context.Context, fingerprint string, genKeys []string, want map[string]bool) (*Digests, error) {
	sep := s.fieldSep()
	cols := `SELECT concat_ws(?, d.gen_key, d.task, d.sample_id, d.setting_key, d.budget, d.digest) FROM score_digests d`
	if fingerprint != "" && len(genKeys) > scanThreshold {
		through, err := s.throughGenerations(ctx, len(want))
		if err != nil {
			return nil, err
		}
		if through {
			return s.digestRows(ctx, want, cols+` JOIN generations g ON g.key = d.gen_key WHERE g.fingerprint=?`, sep, fingerprint)
		}
		return s.digestRows(ctx, want, cols, sep)
	}
	out := newDigests()
	for in, args := range s.keyChunks(cols+` WHERE d.gen_key`, genKeys) {
		got, err := s.digestRows(ctx, want, in, append([]any{sep}, args...)...)
		if err != nil {
			return nil, err
		}
		out.merge(got)
	}
	return out, nil
}

// throughGenerations reports whether a scan for n keys of one model reads
// the model's rows through its generations (the keys are under a third of
// the store's generations) rather than every row, keeping the keys
// wanted: reading every row in storage order costs less than half of
// finding a model's through its generations (a lookup in two indexes a
// row).
func (s *Store) throughGenerations(ctx context.Context, n int) (bool, error) {
	var total int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM generations`).Scan(&total); err != nil {
		return false, err
	}
	return 3*n < total, nil
}

// scanScoreDigests is ScoreDigests by one scan of a model's scores, or
// of all scores (throughGenerations). Every score is read in ranges, one
// a core (inRanges).
func (s *Store) scanScoreDigests(ctx context.Context, fingerprint string, want map[string]bool) (*Digests, error) {
	sep := s.fieldSep()
	through, err := s.throughGenerations(ctx, len(want))
	if err != nil {
		return nil, err
	}
	if through {
		return s.digestRows(ctx, want, `SELECT concat_ws(?, s.gen_key, s.task, s.sample_id, s.setting_key, s.budget, s.digest)
			FROM scores s JOIN generations g ON g.key = s.gen_key WHERE g.fingerprint=?`, sep, fingerprint)
	}
	all := `SELECT concat_ws(?, gen_key, task, sample_id, setting_key, budget, digest) FROM scores`
	var out *Digests
	var mu sync.Mutex
	err = s.inRanges(ctx, "scores", func(ctx context.Context, cond string, args ...any) error {
		part, err := s.digestRows(ctx, want, all+" WHERE "+cond, append([]any{sep}, args...)...)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if out == nil {
			out = part
		} else {
			out.merge(part)
		}
		return nil
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
	if err := s.db.QueryRowContext(ctx, rowidBounds(table)).Scan(&lo, &hi); err != nil {
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

// rowidBounds is the query of a SQLite table's smallest and largest rowid:
// two subqueries, for each of which SQLite reads one end of the table
// (MIN and MAX in one query scan all of it).
func rowidBounds(table string) string {
	return `SELECT (SELECT MIN(rowid) FROM ` + table + `), (SELECT MAX(rowid) FROM ` + table + `)`
}

// digestRows runs a query of score rows (each one column joining gen_key,
// task, sample_id, setting_key, budget and digest) and collects the
// digests of the keys wanted. The scores of one key (one row per metric,
// usually with one digest) come together: a row equal to the one before
// it is skipped; and so do a generation's keys, which are added to its
// entries without finding them again; a key's strings are made once
// (task and setting names shared).
func (s *Store) digestRows(ctx context.Context, want map[string]bool, q string, args ...any) (*Digests, error) {
	sep := s.fieldSep()
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := newDigests()
	intern := make(interner).of
	var raw sql.RawBytes
	var prev []byte
	// The generation of the rows being read, whether it is wanted, and
	// its entries (put back when the next one starts).
	var genKey, sampleID string
	var wanted bool
	var entries []digestEntry
	done := func() {
		if wanted {
			out.byGen[genKey] = entries
		}
	}
	for rows.Next() {
		if err := rows.Scan(&raw); err != nil {
			return nil, err
		}
		if bytes.Equal(raw, prev) {
			continue
		}
		prev = append(prev[:0], raw...)
		parts, ok := splitFields(raw, sep[0])
		if !ok {
			return nil, fmt.Errorf("malformed score row %q", raw)
		}
		if string(parts[0]) != genKey || genKey == "" {
			done()
			genKey = string(parts[0])
			if wanted = want[genKey]; wanted {
				entries = out.byGen[genKey]
			}
		}
		if !wanted {
			continue
		}
		if string(parts[2]) != sampleID {
			sampleID = string(parts[2])
		}
		budget, err := strconv.Atoi(string(parts[4]))
		if err != nil {
			return nil, fmt.Errorf("malformed score row %q", raw)
		}
		var n int
		entries, n = addEntry(entries, digestEntry{task: intern(parts[1]), sampleID: sampleID, settingKey: intern(parts[3]), budget: budget, digest: string(parts[5])})
		out.n += n
	}
	done()
	return out, rows.Err()
}

// splitFields splits a row of six fields joined by sep (the last may
// hold anything), without allocating.
func splitFields(raw []byte, sep byte) (parts [6][]byte, ok bool) {
	for n := range 5 {
		k := bytes.IndexByte(raw, sep)
		if k < 0 {
			return parts, false
		}
		parts[n], raw = raw[:k], raw[k+1:]
	}
	parts[5] = raw
	return parts, true
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
	intern := make(interner).of
	for in, args := range s.keyChunks(`SELECT concat_ws(?, gen_key, task, sample_id, setting_key, budget, metric, digest), value
			FROM scores WHERE gen_key`, genKeys) {
		rows, err := s.db.QueryContext(ctx, in, append([]any{sep}, args...)...)
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
		return nil, s.named(fmt.Errorf("read generations: %w", err))
	}
	return out, nil
}

// interner gives one string for equal bytes: names that repeat over many
// rows (tasks, settings, metrics, fingerprints) are allocated once.
type interner map[string]string

// of returns the string of b, the one made for equal bytes before.
func (in interner) of(b []byte) string {
	if x, ok := in[string(b)]; ok {
		return x
	}
	x := string(b)
	in[x] = x
	return x
}
