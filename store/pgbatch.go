package store

import (
	"context"
	"fmt"
	"math"
)

// PostgreSQL writes a batch of generations and scores in three statements
// (arrays unnested server-side) rather than a round trip per row: the
// claim-and-commit loop of many workers is bound by round trips.

// pgPutGenerations upserts generations (the last of any repeated key wins).
func pgPutGenerations(ctx context.Context, tx *txn, gens []Generation, now string) error {
	if len(gens) == 0 {
		return nil
	}
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
	_, err := tx.ExecContext(ctx, `INSERT INTO generations
		(key,fingerprint,task,sample_id,prompt_tokens,text,ids,offsets,n_tokens,budget,finish,stops,error,continued,imported,gen_seconds,run_id,updated_at)
		SELECT * FROM unnest(?::text[],?::text[],?::text[],?::text[],?::bigint[],?::bytea[],?::bytea[],?::bytea[],?::bigint[],?::bigint[],
			?::text[],?::text[],?::text[],?::bigint[],?::bigint[],?::float8[],?::bigint[],?::text[])
		ON CONFLICT(key) DO UPDATE SET prompt_tokens=excluded.prompt_tokens, text=excluded.text, ids=excluded.ids,
		offsets=excluded.offsets, n_tokens=excluded.n_tokens, budget=excluded.budget, finish=excluded.finish,
		stops=excluded.stops, error=excluded.error, continued=excluded.continued, imported=excluded.imported,
		gen_seconds=excluded.gen_seconds, run_id=excluded.run_id, updated_at=excluded.updated_at`,
		key, fp, task, sid, ptok, text, ids, offs, ntok, budget, finish, stops, errs, cont, imp, secs, run, upd)
	if err != nil {
		return fmt.Errorf("store %d generations: %w", n, err)
	}
	return nil
}

// pgPutScores replaces the scores of each (generation, sample, setting,
// budget) present by those given, as putScores does.
func pgPutScores(ctx context.Context, tx *txn, scores []Score) error {
	if len(scores) == 0 {
		return nil
	}
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
	if _, err := tx.ExecContext(ctx, `DELETE FROM scores s USING unnest(?::text[],?::text[],?::text[],?::text[],?::bigint[]) AS d(g,t,i,k,b)
		WHERE s.gen_key=d.g AND s.task=d.t AND s.sample_id=d.i AND s.setting_key=d.k AND s.budget=d.b`, dg, dt, di, dk, db); err != nil {
		return fmt.Errorf("replace %d scores: %w", len(scores), err)
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
	if _, err := tx.ExecContext(ctx, `INSERT INTO scores(gen_key,task,sample_id,setting,setting_key,budget,metric,value,prediction,run_id,digest)
		SELECT * FROM unnest(?::text[],?::text[],?::text[],?::text[],?::text[],?::bigint[],?::text[],?::float8[],?::bytea[],?::bigint[],?::text[])
		ON CONFLICT(gen_key,task,sample_id,setting_key,budget,metric) DO UPDATE SET setting=excluded.setting,
		value=excluded.value, prediction=excluded.prediction, run_id=excluded.run_id, digest=excluded.digest`,
		g, t, id, set, sk, budget, metric, val, pred, run, dig); err != nil {
		return fmt.Errorf("store %d scores: %w", n, err)
	}
	return nil
}
