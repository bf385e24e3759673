package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"

	"tally/tasks/variant"
)

// CopyStats counts what Copy wrote.
type CopyStats struct {
	Runs        int `json:"runs"`
	Samples     int `json:"samples"`
	Generations int `json:"generations"`
	Scores      int `json:"scores"`
}

// Copy copies the store's runs, samples, task variants, generations and scores into dst
// (a store of either engine), all of them or, with fingerprint set, one
// model's: its runs, generations and their scores, and the samples of the
// tasks it generated for. Rows are copied as they are (text, token ids,
// timestamps, digests), so dst reports exactly what the store reports.
// Generations (except that a failed one never replaces a success),
// scores and samples replace those with the same keys in dst;
// runs are added with new ids (the generations and scores that name them
// follow), except a run dst already holds (same start time, host, command
// and model), which is reused: copying twice changes nothing. Claims and
// workers, which describe work in progress, are not copied. The copy is
// one transaction of dst: all of it is written or, on an error or a
// cancelled ctx, none of it. A SQLite store's scores are checked first
// (verifyScores): a damaged store is not copied.
func (s *Store) Copy(ctx context.Context, dst *Store, fingerprint string) (CopyStats, error) {
	if s.hasPackedScores() {
		// The copy reads the rows of scores, which it packs and seals
		// anew: they must hold what the store reports.
		if err := s.verifyScores(ctx); err != nil {
			return CopyStats{}, err
		}
	}
	var st CopyStats
	err := dst.tx(ctx, func(tx *txn) error {
		st = CopyStats{}
		runIDs, err := s.copyRuns(ctx, tx, fingerprint, &st)
		if err != nil {
			return err
		}
		if err := s.copySamples(ctx, tx, fingerprint, &st); err != nil {
			return err
		}
		if err := s.copyVariants(ctx, tx); err != nil {
			return err
		}
		if err := s.copyGenerations(ctx, tx, fingerprint, runIDs, &st); err != nil {
			return err
		}
		if err := s.copyScores(ctx, tx, fingerprint, runIDs, &st); err != nil {
			return err
		}
		return sealSamples(ctx, tx) // the copied samples, as read
	})
	if err != nil {
		return CopyStats{}, err
	}
	return st, nil
}

// where returns a WHERE clause on fingerprint (column col) and its args.
func where(col, fingerprint string) (string, []any) {
	if fingerprint == "" {
		return "", nil
	}
	return " WHERE " + col + "=?", []any{fingerprint}
}

func (s *Store) copyRuns(ctx context.Context, tx *txn, fingerprint string, st *CopyStats) (map[int64]int64, error) {
	w, args := where("fingerprint", fingerprint)
	beat := `NULL, 0`
	if s.hasRunBeats() {
		beat = `heartbeat_at, lease_ms`
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id,started_at,finished_at,command,config,version,host,backend,model,fingerprint,status,
		generated_tokens,prompt_tokens,gen_seconds,stats,`+beat+` FROM runs`+w+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("copy runs: %w", err)
	}
	type run struct {
		id                                                                         int64
		started                                                                    string
		finished                                                                   sql.NullString
		command, config, version, host, backend, model, fingerprint, status, stats string
		gen, prompt                                                                int64
		secs                                                                       float64
		beat                                                                       sql.NullInt64
		lease                                                                      int64
	}
	var runs []run
	for rows.Next() {
		var r run
		if err := rows.Scan(&r.id, &r.started, &r.finished, &r.command, &r.config, &r.version, &r.host, &r.backend, &r.model,
			&r.fingerprint, &r.status, &r.gen, &r.prompt, &r.secs, &r.stats, &r.beat, &r.lease); err != nil {
			rows.Close()
			return nil, fmt.Errorf("copy runs: %w", err)
		}
		runs = append(runs, r)
	}
	if err := rows.Close(); err != nil {
		return nil, fmt.Errorf("copy runs: %w", err)
	}
	ids := map[int64]int64{}
	for _, r := range runs {
		var id int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM runs WHERE started_at=? AND host=? AND command=? AND fingerprint=? ORDER BY id LIMIT 1`,
			r.started, r.host, r.command, r.fingerprint).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			err = tx.QueryRowContext(ctx, `INSERT INTO runs(started_at,finished_at,command,config,version,host,backend,model,fingerprint,status,
				generated_tokens,prompt_tokens,gen_seconds,stats,heartbeat_at,lease_ms) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?) RETURNING id`,
				r.started, r.finished, r.command, r.config, r.version, r.host, r.backend, r.model, r.fingerprint, r.status,
				r.gen, r.prompt, r.secs, r.stats, r.beat, r.lease).Scan(&id)
			st.Runs++
		}
		if err != nil {
			return nil, fmt.Errorf("copy run %d: %w", r.id, err)
		}
		ids[r.id] = id
	}
	return ids, nil
}

// copyVariants copies every variant record (a handful of rows: the
// records of tasks dst does not receive samples of are harmless).
func (s *Store) copyVariants(ctx context.Context, tx *txn) error {
	recs, err := s.Variants(ctx)
	if err != nil {
		return fmt.Errorf("copy variants: %w", err)
	}
	all := make([]variant.Record, 0, len(recs))
	for _, k := range slices.Sorted(maps.Keys(recs)) {
		all = append(all, recs[k])
	}
	return putVariants(ctx, tx, all)
}

func (s *Store) copySamples(ctx context.Context, tx *txn, fingerprint string, st *CopyStats) error {
	q := `SELECT task,id,prompt,refs,metadata FROM samples`
	var args []any
	if fingerprint != "" {
		q += ` WHERE task IN (SELECT DISTINCT task FROM generations WHERE fingerprint=?)`
		args = append(args, fingerprint)
	}
	return copyRows(ctx, s, tx, q, args, 5, `INSERT INTO samples(task,id,prompt,refs,metadata) VALUES(?,?,?,?,?)
			ON CONFLICT(task,id) DO UPDATE SET prompt=excluded.prompt, refs=excluded.refs, metadata=excluded.metadata`, func(v []any) []any {
		v[2] = tx.eng.text(str(v[2]))
		st.Samples++
		return v
	})
}

func (s *Store) copyGenerations(ctx context.Context, tx *txn, fingerprint string, runIDs map[int64]int64, st *CopyStats) error {
	w, args := where("fingerprint", fingerprint)
	q := `SELECT key,fingerprint,task,sample_id,prompt_tokens,text,ids,offsets,n_tokens,budget,finish,stops,error,continued,imported,
		gen_seconds,run_id,updated_at FROM generations` + w
	return copyRows(ctx, s, tx, q, args, 18, `INSERT INTO generations
			(key,fingerprint,task,sample_id,prompt_tokens,text,ids,offsets,n_tokens,budget,finish,stops,error,continued,imported,gen_seconds,run_id,updated_at)
			VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)
			ON CONFLICT(key) DO UPDATE SET fingerprint=excluded.fingerprint, task=excluded.task, sample_id=excluded.sample_id,
			prompt_tokens=excluded.prompt_tokens, text=excluded.text, ids=excluded.ids, offsets=excluded.offsets, n_tokens=excluded.n_tokens,
			budget=excluded.budget, finish=excluded.finish, stops=excluded.stops, error=excluded.error, continued=excluded.continued,
			imported=excluded.imported, gen_seconds=excluded.gen_seconds, run_id=excluded.run_id, updated_at=excluded.updated_at
			WHERE `+keepsSuccess, func(v []any) []any {
		v[5] = tx.eng.text(str(v[5]))
		v[6], v[7] = blob(v[6]), blob(v[7])
		v[16] = mapRun(v[16], runIDs)
		st.Generations++
		return v
	})
}

// copyScores copies the scores, then sets the digests of the keys it
// wrote from what dst then holds for them (its scores of a key merge with
// those dst had: another metric of dst's stays).
func (s *Store) copyScores(ctx context.Context, tx *txn, fingerprint string, runIDs map[int64]int64, st *CopyStats) error {
	seen := map[ScoreKey]bool{}
	var keys []ScoreKey // in the order copied
	q := `SELECT s.gen_key,s.task,s.sample_id,s.setting,s.setting_key,s.budget,s.metric,s.value,s.prediction,s.run_id,s.digest FROM scores s`
	var args []any
	if fingerprint != "" {
		q += ` JOIN generations g ON g.key = s.gen_key WHERE g.fingerprint=?`
		args = append(args, fingerprint)
	}
	err := copyRows(ctx, s, tx, q, args, 11, `INSERT INTO scores(gen_key,task,sample_id,setting,setting_key,budget,metric,value,prediction,run_id,digest)
			VALUES(?,?,?,?,?,?,?,?,?,?,?)
			ON CONFLICT(gen_key,task,sample_id,setting_key,budget,metric) DO UPDATE SET setting=excluded.setting,
			value=excluded.value, prediction=excluded.prediction, run_id=excluded.run_id, digest=excluded.digest`, func(v []any) []any {
		if k := (ScoreKey{GenKey: str(v[0]), Task: str(v[1]), SampleID: str(v[2]), SettingKey: str(v[4]), Budget: budgetOf(v[5])}); !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
		v[8] = tx.eng.text(str(v[8]))
		v[9] = mapRun(v[9], runIDs)
		st.Scores++
		return v
	})
	if err != nil {
		return err
	}
	return refreshKeyDigests(ctx, tx, keys)
}

// copyRows runs query on src and writes each row, as conv turns it into
// the arguments of the statement insert, through tx.
func copyRows(ctx context.Context, src *Store, tx *txn, query string, args []any, ncol int, insert string, conv func([]any) []any) error {
	rows, err := src.db.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("copy: read: %w", err)
	}
	defer rows.Close()
	stmt, err := tx.PrepareContext(ctx, insert)
	if err != nil {
		return fmt.Errorf("copy: write: %w", err)
	}
	defer stmt.Close()
	v := make([]any, ncol)
	ptrs := make([]any, ncol)
	for rows.Next() {
		for i := range v {
			v[i] = nil
			ptrs[i] = &v[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return fmt.Errorf("copy: read: %w", err)
		}
		if _, err := stmt.ExecContext(ctx, conv(v)...); err != nil {
			return fmt.Errorf("copy: write: %w", err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("copy: read: %w", err)
	}
	return nil
}

// str reads a text column scanned into an any (string or bytes).
func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// blob reads a blob column scanned into an any: bytes, or nil for NULL.
func blob(v any) any {
	switch x := v.(type) {
	case []byte:
		return append([]byte(nil), x...)
	case string:
		return []byte(x)
	}
	return nil
}

// mapRun maps a run id column scanned into an any to the destination's
// run id (NULL stays NULL; an id the copy did not carry becomes NULL).
func mapRun(v any, ids map[int64]int64) any {
	id, ok := intOf(v)
	if !ok {
		return nil
	}
	if n, ok := ids[id]; ok {
		return n
	}
	return nil
}

// budgetOf reads a budget column scanned into an any.
func budgetOf(v any) int {
	n, _ := intOf(v)
	return int(n)
}

// intOf reads an integer column scanned into an any (ok false for NULL).
func intOf(v any) (_ int64, ok bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int32:
		return int64(x), true
	case int:
		return int64(x), true
	}
	return 0, false
}
