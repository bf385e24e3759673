package store

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strconv"

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
		if g.Stops, err = s.shownStops(&g, stops); err != nil {
			return nil, err
		}
		g.Error = redact.String(g.Error)
		out = append(out, g)
	}
	return out, rows.Err()
}

// generationIndex numbers the generations the filter selects, handing
// each to gen as EachEntryAndGeneration does. Only the columns a report
// shows are read: each column read costs (the six left out took a sixth
// of the HTML report's time on a store of 200,000 generations).
func (s *Store) generationIndex(ctx context.Context, f Filter, gen func(int32, Generation) error) (*genIndex, error) {
	out := newGenIndex()
	give := func(g *Generation, key, fp []byte) error { return gen(out.add(key, fp), *g) }
	if s.db.eng == postgresEngine {
		return out, s.eachShownGeneration(ctx, f, give)
	}
	return out, s.shownGenerationsInRanges(ctx, f, give)
}

// shownGenerationsInRanges is eachShownGeneration on a SQLite store: the
// generations in storage order, read in ranges on every core
// (inRangesOrdered), as two columns: the error and the text joined (their
// split given by the error's length in bytes), and every other field
// joined before the fingerprint (last: it may hold anything).
func (s *Store) shownGenerationsInRanges(ctx context.Context, f Filter, fn func(g *Generation, key, fp []byte) error) error {
	sep := s.fieldSep()
	q := `SELECT concat_ws(?, key, prompt_tokens, imported, finish, octet_length(error), ` + s.sealTail() + `, fingerprint), error || text FROM generations`
	where, args := f.where("")
	var conds []string
	if where != "" {
		conds = []string{where}
	}
	var g Generation
	finishes := ""
	return s.inRangesOrdered(ctx, "generations", "read generations", q, conds, append([]any{sep}, args...), scanPair, func(r *rangeRows) error {
		return r.each(func(raw, errText []byte, _ float64) error {
			f, ok := splitN(raw, sep[0], 7)
			if !ok {
				return fmt.Errorf("read generations: malformed row %q", raw)
			}
			key, tokens, imported, finish, errLen, fp := f[0], f[1], f[2], f[3], f[4], f[6]
			if err := s.checkShown(key, fp, finish, f[5]); err != nil {
				return err
			}
			n, err1 := strconv.Atoi(string(errLen))
			pt, err2 := strconv.Atoi(string(tokens))
			if err1 != nil || err2 != nil || n > len(errText) {
				return fmt.Errorf("read generations: malformed row %q", raw)
			}
			if string(finish) != finishes {
				finishes = string(finish) // consecutive generations mostly end alike
			}
			g = Generation{Key: string(key), PromptTokens: pt, Text: string(errText[n:]), Finish: finishes, Imported: string(imported) == "1"}
			if n > 0 {
				g.Error = redact.String(string(errText[:n]))
			}
			return fn(&g, key, fp)
		})
	})
}

// eachShownGeneration reads what generationIndex hands over of the
// generations, and hands fn each with its key's bytes and its model's
// fingerprint's (neither of which outlive the call).
func (s *Store) eachShownGeneration(ctx context.Context, f Filter, fn func(g *Generation, key, fp []byte) error) error {
	sep := s.fieldSep()
	q := `SELECT concat_ws(?, key, fingerprint),prompt_tokens,text,finish,error,imported FROM generations`
	where, wargs := f.where("")
	if where != "" {
		q += " WHERE " + where
	}
	rows, err := s.db.QueryContext(ctx, q, append([]any{sep}, wargs...)...)
	if err != nil {
		return fmt.Errorf("read generations: %w", err)
	}
	defer rows.Close()
	var g Generation // scanned into in place: one allocation, not one a row
	var raw sql.RawBytes
	for rows.Next() {
		if err := rows.Scan(&raw, &g.PromptTokens, &g.Text, &g.Finish, &g.Error, &g.Imported); err != nil {
			return fmt.Errorf("read generations: %w", err)
		}
		// The key is hexadecimal; the fingerprint is the rest.
		i := bytes.IndexByte(raw, sep[0])
		if i < 0 {
			return fmt.Errorf("read generations: malformed row %q", raw)
		}
		key, fp := raw[:i], raw[i+1:]
		g.Key, g.Error = string(key), redact.String(g.Error)
		if err := fn(&g, key, fp); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read generations: %w", err)
	}
	return nil
}

// SampleNotes reads one note of every stored sample of a task
// (datasets.Stored's "notes"), by sample id (a sample without it is left
// out), without reading the rest of the column into the program (the data
// row, most of it): the engine's JSON functions pick the member.
func (s *Store) SampleNotes(ctx context.Context, task, member string) (map[string]string, error) {
	q := `SELECT id, json_extract(metadata, '$.notes.' || json_quote(?)) FROM samples WHERE task=?`
	if s.db.eng == postgresEngine {
		q = `SELECT id, (metadata::json->'notes')->>? FROM samples WHERE task=?`
	}
	rows, err := s.db.QueryContext(ctx, q, member, task)
	if err != nil {
		return nil, fmt.Errorf("read samples' %s of %s: %w", member, task, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id string
		var v sql.NullString
		if err := rows.Scan(&id, &v); err != nil {
			return nil, fmt.Errorf("read samples' %s of %s: %w", member, task, err)
		}
		if v.Valid {
			out[id] = v.String
		}
	}
	return out, rows.Err()
}
