package store

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
)

// TestScoreDigestsKept: score_digests holds, after every kind of write of
// scores, exactly the digest of each key's stored scores (MixedDigest
// where they disagree), on both engines: scores written with their
// generations, replaced by fewer metrics, deleted, merged by a copy into
// a store holding other metrics of the same key, and filled by the
// migration of a store that had none; and ScoreDigests reads the same
// from it as from the scores themselves.
func TestScoreDigestsKept(t *testing.T) { engines(t, testScoreDigestsKept) }

func testScoreDigestsKept(t *testing.T, newPath func() string) {
	ctx := context.Background()
	path := newPath()
	s := openAt(t, path)
	score := func(i int, metric, digest string) Score {
		return Score{GenKey: gen(i).Key, Task: "t", SampleID: fmt.Sprint(i), Setting: "dot", SettingKey: ".", Budget: 8, Metric: metric, Value: 1, Prediction: "p", Digest: digest}
	}
	check := func(s *Store, step string, want map[ScoreKey]string) {
		t.Helper()
		if got := keyDigestRows(t, s, "score_digests"); !maps.Equal(got, want) {
			t.Errorf("%s: score_digests = %v, want %v", step, got, want)
		}
		if got := keyDigestRows(t, s, "scores"); !maps.Equal(got, want) {
			t.Errorf("%s: the scores' own digests = %v, want %v", step, got, want)
		}
		var keys []string
		for k := range want {
			keys = append(keys, k.GenKey)
		}
		d, err := s.ScoreDigests(ctx, "", keys)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.All(); !maps.Equal(got, want) {
			t.Errorf("%s: ScoreDigests = %v, want %v", step, got, want)
		}
		if s.db.eng == postgresEngine {
			return
		}
		packed, packedOrder := packedRows(t, s)
		stored, storedOrder := scoresByKey(t, s)
		if !reflect.DeepEqual(packed, stored) {
			t.Errorf("%s: packed_scores = %v, want the scores %v", step, packed, stored)
		}
		// A copy's keys go last in packed_scores (their scores merged);
		// otherwise the keys come in the order their scores were last
		// written.
		if step != "copied into" && !slices.Equal(packedOrder, storedOrder) {
			t.Errorf("%s: packed rows in the order %v, want %v", step, packedOrder, storedOrder)
		}
	}
	key := func(i int) ScoreKey { return score(i, "", "").Key() }

	if err := s.PutGenerations(ctx, []Generation{gen(1), gen(2), gen(3)}, []Score{
		score(1, "em", "d1"), score(1, "f1", "d1"), score(2, "em", "d2"), score(2, "f1", "other"), score(3, "em", "d3")}); err != nil {
		t.Fatal(err)
	}
	check(s, "written with the generations", map[ScoreKey]string{key(1): "d1", key(2): MixedDigest, key(3): "d3"})

	if err := s.PutScores(ctx, []Score{score(1, "em", "d1b"), score(2, "em", "d2b"), score(2, "f1", "d2b")}); err != nil {
		t.Fatal(err)
	}
	check(s, "replaced", map[ScoreKey]string{key(1): "d1b", key(2): "d2b", key(3): "d3"})

	if err := s.DeleteScores(ctx, []ScoreKey{key(3)}); err != nil {
		t.Fatal(err)
	}
	check(s, "deleted", map[ScoreKey]string{key(1): "d1b", key(2): "d2b"})

	// A copy merges: the source's em of key 2 replaces the destination's,
	// whose f1 stays, so the key's scores disagree.
	src := openAt(t, newPath())
	// Key 1 gains a metric, written after key 2's scores: its scores are
	// no longer consecutive (which the migration below packs).
	if err := src.PutGenerations(ctx, []Generation{gen(1), gen(2), gen(4)}, []Score{score(2, "em", "d2c"), score(4, "em", "d4"), score(1, "acc", "d1b")}); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Copy(ctx, s, ""); err != nil {
		t.Fatal(err)
	}
	check(s, "copied into", map[ScoreKey]string{key(1): "d1b", key(2): MixedDigest, key(4): "d4"})

	// A store from before score_digests: its migration fills it.
	if _, err := s.db.ExecContext(ctx, `DROP TABLE score_digests`); err != nil {
		t.Fatal(err)
	}
	if s.db.eng != postgresEngine {
		if _, err := s.db.ExecContext(ctx, `DROP TABLE packed_scores`); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{`DROP TABLE variants`, `DROP INDEX generations_fp_task`, `ALTER TABLE samples DROP COLUMN seal`} { // migration 7's
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	setSchemaVersion(t, s, scoreDigestsSchema-1)
	s.Close()
	old, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := old.ScoreDigests(ctx, "", []string{gen(1).Key, gen(2).Key, gen(4).Key})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := d.All(), map[ScoreKey]string{key(1): "d1b", key(2): MixedDigest, key(4): "d4"}; !maps.Equal(got, want) {
		t.Errorf("read-only, before the migration: ScoreDigests = %v, want %v", got, want)
	}
	old.Close()
	s = openAt(t, path)
	check(s, "migrated", map[ScoreKey]string{key(1): "d1b", key(2): MixedDigest, key(4): "d4"})
}

// keyDigestRows reads the digest of every key: table score_digests's
// rows, or, for "scores", each key's scores' digest (MixedDigest where
// they disagree).
func keyDigestRows(t *testing.T, s *Store, table string) map[ScoreKey]string {
	t.Helper()
	q := `SELECT gen_key, task, sample_id, setting_key, budget, digest FROM score_digests`
	if table == "scores" {
		q = `SELECT gen_key, task, sample_id, setting_key, budget, ` + keyDigest + ` FROM scores GROUP BY gen_key, task, sample_id, setting_key, budget`
	}
	rows, err := s.db.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[ScoreKey]string{}
	for rows.Next() {
		var k ScoreKey
		var d string
		if err := rows.Scan(&k.GenKey, &k.Task, &k.SampleID, &k.SettingKey, &k.Budget, &d); err != nil {
			t.Fatal(err)
		}
		out[k] = d
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// packedRows reads a SQLite store's packed_scores: each key's scores
// unpacked (NULL values NaN), and the keys in the rows' order.
func packedRows(t *testing.T, s *Store) (map[ScoreKey][]Score, []ScoreKey) {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(), `SELECT gen_key, task, sample_id, setting_key, budget, digest, scores FROM packed_scores ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[ScoreKey][]Score{}
	var order []ScoreKey
	for rows.Next() {
		var k ScoreKey
		var digest string
		var packed []byte
		if err := rows.Scan(&k.GenKey, &k.Task, &k.SampleID, &k.SettingKey, &k.Budget, &digest, &packed); err != nil {
			t.Fatal(err)
		}
		order = append(order, k)
		if out[k], err = unpackedScores(k, packed, digest); err != nil {
			t.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out, order
}

// scoresByKey reads a SQLite store's scores by key, each key's in the
// order written (rowid), and the keys in the order their scores were last
// written.
func scoresByKey(t *testing.T, s *Store) (map[ScoreKey][]Score, []ScoreKey) {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(), `SELECT `+packedScoreCols+`, rowid FROM scores ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[ScoreKey][]Score{}
	last := map[ScoreKey]int64{}
	for rows.Next() {
		var rowid int64
		x, err := scanPackedSource(rows, &rowid)
		if err != nil {
			t.Fatal(err)
		}
		out[x.Key()] = append(out[x.Key()], x)
		last[x.Key()] = rowid
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	order := slices.Collect(maps.Keys(last))
	slices.SortFunc(order, func(a, b ScoreKey) int { return cmp.Compare(last[a], last[b]) })
	return out, order
}

// setSchemaVersion records schema version v in s (on either engine), as
// a store written by an older tally has it.
func setSchemaVersion(t *testing.T, s *Store, v int) {
	t.Helper()
	q := fmt.Sprintf(`PRAGMA user_version = %d`, v)
	if s.db.eng == postgresEngine {
		q = fmt.Sprintf(`UPDATE tally_schema SET version = %d`, v)
	}
	if _, err := s.db.ExecContext(context.Background(), q); err != nil {
		t.Fatal(err)
	}
}
