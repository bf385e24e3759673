package store

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// PostgreSQL writes a batch of generations and scores with arrays unnested
// server-side rather than a statement per row, and a worker's commit (its
// generations, their scores, the release of its claims) in one statement.

// pgGenerationsSQL upserts the generations whose columns are the 18
// array arguments (a failed attempt never replacing a stored success:
// keepsSuccess).
const pgGenerationsSQL = `INSERT INTO generations
		(key,fingerprint,task,sample_id,prompt_tokens,text,ids,offsets,n_tokens,budget,finish,stops,error,continued,imported,gen_seconds,run_id,updated_at)
		SELECT * FROM unnest(?::text[],?::text[],?::text[],?::text[],?::bigint[],?::bytea[],?::bytea[],?::bytea[],?::bigint[],?::bigint[],
			?::text[],?::text[],?::text[],?::bigint[],?::bigint[],?::float8[],?::bigint[],?::text[])
		ON CONFLICT(key) DO UPDATE SET prompt_tokens=excluded.prompt_tokens, text=excluded.text, ids=excluded.ids,
		offsets=excluded.offsets, n_tokens=excluded.n_tokens, budget=excluded.budget, finish=excluded.finish,
		stops=excluded.stops, error=excluded.error, continued=excluded.continued, imported=excluded.imported,
		gen_seconds=excluded.gen_seconds, run_id=excluded.run_id, updated_at=excluded.updated_at
		WHERE ` + keepsSuccess

// pgGenerationArgs are the 18 column arrays of pgGenerationsSQL.
func pgGenerationArgs(gens []Generation, now string) []any {
	last := make(map[string]int, len(gens))
	for i, g := range gens {
		last[g.Key] = i
	}
	n := len(last)
	var (
		key, fp, task, sid, finish, stops, errs, upd = make([]string, 0, n), make([]string, 0, n), make([]string, 0, n),
			make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
		ptok, ntok, budget, cont, imp, run = make([]int64, 0, n), make([]int64, 0, n), make([]int64, 0, n), make([]int64, 0, n),
			make([]int64, 0, n), make([]int64, 0, n)
		text, ids, offs = make([][]byte, 0, n), make([][]byte, 0, n), make([][]byte, 0, n)
		secs            = make([]float64, 0, n)
	)
	for i, g := range gens {
		if last[g.Key] != i {
			continue
		}
		key, fp, task, sid = append(key, g.Key), append(fp, g.Fingerprint), append(task, g.Task), append(sid, g.SampleID)
		ptok, text = append(ptok, int64(g.PromptTokens)), append(text, []byte(g.Text))
		ids, offs = append(ids, packInts(g.IDs)), append(offs, packInts(g.Offsets))
		ntok, budget, finish = append(ntok, int64(g.NTokens)), append(budget, int64(g.Budget)), append(finish, g.Finish)
		stops, errs, cont = append(stops, nullJSON(g.Stops)), append(errs, g.Error), append(cont, int64(g.Continued))
		imp, secs, run, upd = append(imp, int64(boolInt(g.Imported))), append(secs, g.GenSeconds), append(run, g.RunID), append(upd, now)
	}
	return []any{key, fp, task, sid, ptok, text, ids, offs, ntok, budget, finish, stops, errs, cont, imp, secs, run, upd}
}

// pgScoresSQL upserts the scores whose columns are the 11 array
// arguments.
const pgScoresSQL = `INSERT INTO scores(gen_key,task,sample_id,setting,setting_key,budget,metric,value,prediction,run_id,digest)
		SELECT * FROM unnest(?::text[],?::text[],?::text[],?::text[],?::text[],?::bigint[],?::text[],?::float8[],?::bytea[],?::bigint[],?::text[])
		ON CONFLICT(gen_key,task,sample_id,setting_key,budget,metric) DO UPDATE SET setting=excluded.setting,
		value=excluded.value, prediction=excluded.prediction, run_id=excluded.run_id, digest=excluded.digest`

// pgPutScores replaces the scores of each (generation, sample, setting,
// budget) present by those given, as putScores does.
func pgPutScores(ctx context.Context, tx *txn, scores []Score) error {
	if len(scores) == 0 {
		return nil
	}
	keys, rows := pgScoreArgs(scores)
	if _, err := tx.ExecContext(ctx, `DELETE FROM scores s USING unnest(?::text[],?::text[],?::text[],?::text[],?::bigint[]) AS d(g,t,i,k,b)
		WHERE s.gen_key=d.g AND s.task=d.t AND s.sample_id=d.i AND s.setting_key=d.k AND s.budget=d.b`, keys...); err != nil {
		return fmt.Errorf("replace %d scores: %w", len(scores), err)
	}
	if _, err := tx.ExecContext(ctx, pgScoresSQL, rows...); err != nil {
		return fmt.Errorf("store %d scores: %w", len(scores), err)
	}
	return putKeyDigests(ctx, tx, keyDigests(keyScores(scores)))
}

// pgKeyDigestsSQL upserts the score_digests rows whose columns are the 6
// array arguments (each key once).
const pgKeyDigestsSQL = `INSERT INTO score_digests(gen_key,task,sample_id,setting_key,budget,digest)
		SELECT * FROM unnest(?::text[],?::text[],?::text[],?::text[],?::bigint[],?::text[])
		ON CONFLICT(gen_key,task,sample_id,setting_key,budget) DO UPDATE SET digest=excluded.digest`

// pgKeyDigestArgs returns the 6 column arrays of pgKeyDigestsSQL.
func pgKeyDigestArgs(rows []keyDigestRow) []any {
	var g, t, i, k, d []string
	var b []int64
	for _, r := range rows {
		g, t, i, k = append(g, r.GenKey), append(t, r.Task), append(i, r.SampleID), append(k, r.SettingKey)
		b, d = append(b, int64(r.Budget)), append(d, r.digest)
	}
	return []any{g, t, i, k, b, d}
}

// pgScoreArgs returns the 5 column arrays of the scores' keys (each once)
// and the 11 column arrays of pgScoresSQL (the last score of a repeated
// key and metric wins).
func pgScoreArgs(scores []Score) (keys, rows []any) {
	var dg, dt, di, dk []string
	var db []int64
	seen := map[ScoreKey]bool{}
	for _, x := range scores {
		k := x.Key()
		if seen[k] {
			continue
		}
		seen[k] = true
		dg, dt, di, dk, db = append(dg, k.GenKey), append(dt, k.Task), append(di, k.SampleID), append(dk, k.SettingKey), append(db, int64(k.Budget))
	}
	type pk struct {
		k      ScoreKey
		metric string
	}
	last := make(map[pk]int, len(scores))
	for i, x := range scores {
		last[pk{x.Key(), x.Metric}] = i
	}
	n := len(last)
	g, t, id, set, sk, metric, dig := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n),
		make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	budget, run := make([]int64, 0, n), make([]int64, 0, n)
	val := make([]*float64, 0, n)
	pred := make([][]byte, 0, n)
	for i, x := range scores {
		if last[pk{x.Key(), x.Metric}] != i {
			continue
		}
		var v *float64
		if !math.IsNaN(x.Value) && !math.IsInf(x.Value, 0) {
			f := x.Value
			v = &f
		}
		g, t, id, set, sk = append(g, x.GenKey), append(t, x.Task), append(id, x.SampleID), append(set, x.Setting), append(sk, x.SettingKey)
		budget, metric, val, pred = append(budget, int64(x.Budget)), append(metric, x.Metric), append(val, v), append(pred, []byte(x.Prediction))
		run, dig = append(run, x.RunID), append(dig, x.Digest)
	}
	return []any{dg, dt, di, dk, db}, []any{g, t, id, set, sk, budget, metric, val, pred, run, dig}
}

// pgCommit stores generations and their scores and releases owner's
// claims on them in one statement (one round trip, atomic as a
// transaction): the scores of each (generation, sample, setting, budget)
// present are upserted and any other metric stored for it deleted, which
// replaces them as putScores does (score_digests too). Each array is sent once: the deletion
// of other metrics reads the scores' own key columns, and the release
// the generations' keys.
func (s *Store) pgCommit(ctx context.Context, owner string, gens []Generation, scores []Score, now string) error {
	args := pgGenerationArgs(gens, now) // $1 … $18, keys first
	q := `WITH g AS (` + postgresEngine.rebind(pgGenerationsSQL) + ` RETURNING 1)`
	if len(scores) > 0 {
		_, rows := pgScoreArgs(scores) // $19 … $29: gen_key, task, sample_id, setting, setting_key, budget, metric, …
		q += `, s AS (` + renumber(postgresEngine.rebind(pgScoresSQL), 18) + ` RETURNING 1),
		d AS (DELETE FROM scores x USING unnest($19::text[],$20::text[],$21::text[],$23::text[],$24::bigint[],$25::text[]) AS k(g,t,i,sk,b,m)
			WHERE x.gen_key=k.g AND x.task=k.t AND x.sample_id=k.i AND x.setting_key=k.sk AND x.budget=k.b AND x.metric<>k.m
			AND NOT EXISTS (SELECT 1 FROM unnest($19::text[],$20::text[],$21::text[],$23::text[],$24::bigint[],$25::text[]) AS n(g,t,i,sk,b,m)
				WHERE n.g=x.gen_key AND n.t=x.task AND n.i=x.sample_id AND n.sk=x.setting_key AND n.b=x.budget AND n.m=x.metric)
			RETURNING 1)`
		args = append(args, rows...)
		q += `, sd AS (` + renumber(postgresEngine.rebind(pgKeyDigestsSQL), len(args)) + ` RETURNING 1)`
		args = append(args, pgKeyDigestArgs(keyDigests(keyScores(scores)))...)
	}
	if owner != "" {
		q += fmt.Sprintf(`, r AS (DELETE FROM claims WHERE owner=$%d AND gen_key IN (SELECT unnest($1::text[])) RETURNING 1)`, len(args)+1)
		args = append(args, owner)
	}
	q += ` SELECT 1`
	if _, err := s.db.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("store %d generations and %d scores: %w", len(gens), len(scores), s.named(err))
	}
	return nil
}

// renumber adds by to every $n parameter of q (a statement with numbered
// parameters placed after others).
func renumber(q string, by int) string {
	var b strings.Builder
	b.Grow(len(q) + 16)
	for i := 0; i < len(q); i++ {
		b.WriteByte(q[i])
		if q[i] != '$' {
			continue
		}
		j := i + 1
		for j < len(q) && q[j] >= '0' && q[j] <= '9' {
			j++
		}
		if j > i+1 {
			n, _ := strconv.Atoi(q[i+1 : j])
			b.WriteString(strconv.Itoa(n + by))
			i = j - 1
		}
	}
	return b.String()
}
