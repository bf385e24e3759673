package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// storeAtVersion makes at path a SQLite store of schema version v, as a
// tally that knew v migrations made it.
func storeAtVersion(t *testing.T, path string, v int) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	x := &txn{Tx: tx, eng: sqliteEngine}
	for i := range v {
		if _, err := x.ExecContext(ctx, migrations[i]); err != nil {
			t.Fatal(err)
		}
		if fill := migrationFill(i + 1); fill != nil {
			if err := fill(ctx, x); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := x.ExecContext(ctx, "PRAGMA user_version = "+itoa(v)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// unseal removes the seal of a stored generation, as a tally from before
// seals wrote it.
func unseal(t *testing.T, s *Store, key string) {
	t.Helper()
	ctx := context.Background()
	var stored string
	if err := s.db.QueryRowContext(ctx, `SELECT stops FROM generations WHERE key=?`, key).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	stops, _, _, _ := splitSeal(stored)
	if _, err := s.db.ExecContext(ctx, `UPDATE generations SET stops=? WHERE key=?`, stops, key); err != nil {
		t.Fatal(err)
	}
}

// openAtPath opens a new SQLite store in a test's folder.
func openAtPath(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// sealedFixture stores one generation and its scores under one setting.
func sealedFixture(t *testing.T, s *Store) (Generation, []Score) {
	t.Helper()
	g := gen(1)
	scores := []Score{
		{GenKey: g.Key, Task: "t", SampleID: "1", Setting: "dot", SettingKey: ".", Budget: 8, Metric: "em", Value: 1, Prediction: "12", Digest: "d1"},
		{GenKey: g.Key, Task: "t", SampleID: "1", Setting: "dot", SettingKey: ".", Budget: 8, Metric: "f1", Value: 0.25, Prediction: "12", Digest: "d1"},
	}
	if err := s.PutGenerations(context.Background(), []Generation{g}, scores); err != nil {
		t.Fatal(err)
	}
	return g, scores
}

// TestSchemaCheck (issue 37, item 4): verifySchema finds a store whose
// schema is tally's, at its version, sound, and names what else a file
// holds: another table or view, a trigger, a table of tally's name with
// other columns, a table of tally's missing, objects under version 0; an
// index of one's own is allowed.
func TestSchemaCheck(t *testing.T) {
	tests := []struct {
		name, sql string
		version   int // 0: the store's
		want      string
	}{
		{"sound", ``, 0, ""},
		{"an index of one's own", `CREATE INDEX mine ON generations(task)`, 0, ""},
		{"a table", `CREATE TABLE notes(x)`, 0, "tables tally does not make (notes)"},
		{"a view", `CREATE VIEW v AS SELECT 1`, 0, "tables tally does not make (v)"},
		{"a trigger", `CREATE TRIGGER tr AFTER INSERT ON scores BEGIN DELETE FROM scores; END`, 0, "triggers tally does not make (tr)"},
		{"a column more", `ALTER TABLE samples ADD COLUMN x`, 0, "samples are not as tally makes them"},
		{"a table missing", `DROP TABLE claims`, 0, "lacks tally's claims"},
		{"an index missing", `DROP INDEX generations_fp`, 0, "lacks tally's generations_fp"},
		{"an older version", ``, 2, "tables tally does not make (packed_scores, score_digests, variants, workers)"},
		{"version 0", ``, -1, "no tally schema version"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openAtPath(t)
			if tc.sql != "" {
				if _, err := s.db.ExecContext(ctx, tc.sql); err != nil {
					t.Fatal(err)
				}
			}
			v := len(migrations)
			switch {
			case tc.version > 0:
				v = tc.version
			case tc.version < 0:
				v = 0
			}
			err := verifySchema(ctx, s.db, v)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("verifySchema: %v, want %q", err, tc.want)
			}
		})
	}
	// Every version's schema, made as a tally of that version made it,
	// is sound.
	for v := 1; v <= len(migrations); v++ {
		path := filepath.Join(t.TempDir(), "v.db")
		storeAtVersion(t, path, v)
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		if err := verifySchema(context.Background(), db, v); err != nil {
			t.Errorf("schema version %d: %v", v, err)
		}
		db.Close()
	}
}

// TestPackedSeal (issue 37, item 4): a sealed packed row read back as it
// was written opens; every bit flipped in its key's fields, its digest or
// its column of scores breaks it; a row from before seals opens as one.
func TestPackedSeal(t *testing.T) {
	k := ScoreKey{GenKey: "k1", Task: "t", SampleID: "s1", SettingKey: ".\x00\n", Budget: 32}
	scores := []Score{{Metric: "em", Setting: "dot", Prediction: "7", Value: 1, Digest: "d"}, {Metric: "f1", Setting: "dot", Prediction: "7", Value: 0.5, Digest: "d"}}
	row := packSealed(nil, k, scores, "d")
	fields := appendPackedKey(nil, k, "d")
	fields = fields[:len(fields)-1]
	if body, sealed, err := openSealed(fields, row); err != nil || !sealed || string(body) != string(packScores(nil, scores, "d")) {
		t.Fatalf("openSealed of a sound row: %v, sealed %v", err, sealed)
	}
	for i := range 8 * (len(fields) + len(row)) {
		f, r := slices.Clone(fields), slices.Clone(row)
		if i < 8*len(f) {
			f[i/8] ^= 1 << (i % 8)
		} else {
			j := i - 8*len(f)
			r[j/8] ^= 1 << (j % 8)
		}
		body, sealed, err := openSealed(f, r)
		if err == nil && !sealed {
			// The marker's bit flipped: read as a row from before seals,
			// which does not parse.
			_, err = unpackedScores(k, body, "d")
		}
		if err == nil {
			t.Errorf("bit %d flipped: the row still opens", i)
		}
	}
	legacy := packScores(nil, scores, "d")
	if body, sealed, err := openSealed(fields, legacy); err != nil || sealed || string(body) != string(legacy) {
		t.Errorf("a row from before seals: %v, sealed %v", err, sealed)
	}
}

// TestDamagedScoresRefused (issue 37, item 4): a value changed in a
// packed row (as a flipped bit does) is refused by every read of scores
// (EachEntry: report; ScoresFor: compare, rescore, run), naming the store
// and the row; before, report printed it and compare read another copy.
func TestDamagedScoresRefused(t *testing.T) {
	ctx := context.Background()
	s, path := openAtPath(t)
	g, _ := sealedFixture(t, s)
	var row []byte
	if err := s.db.QueryRowContext(ctx, `SELECT scores FROM packed_scores`).Scan(&row); err != nil {
		t.Fatal(err)
	}
	row[len(row)-1] ^= 0x01 // the last value's sign and exponent
	if _, err := s.db.ExecContext(ctx, `UPDATE packed_scores SET scores=?`, row); err != nil {
		t.Fatal(err)
	}
	reads := map[string]error{
		"EachEntry": s.EachEntry(ctx, Filter{}, func(Entry) error { return nil }),
	}
	_, reads["ScoresFor"] = s.ScoresFor(ctx, []string{g.Key})
	for read, err := range reads {
		var de *DamagedError
		if !errors.As(err, &de) || !strings.Contains(err.Error(), "store "+path+" is damaged") || !strings.Contains(err.Error(), "t/1") {
			t.Errorf("%s: %v; want the damaged row of t/1 named", read, err)
		}
	}
}

// TestGenerationSeal (issue 37, item 4): a generation whose stored field
// changed (as a flipped bit does) is refused by the reads that use the
// field, naming it; its stop record reads back without the seal.
func TestGenerationSeal(t *testing.T) {
	tests := []struct{ col, set string }{
		{"text", `text = 'x' || text`},
		{"ids", `ids = x'01000000'`},
		{"offsets", `offsets = x'00000000'`},
		{"n_tokens", `n_tokens = n_tokens + 1`},
		{"budget", `budget = budget * 2`},
		{"finish", `finish = 'stoq'`},
		{"fingerprint", `fingerprint = 'fq'`},
		{"prompt_tokens", `prompt_tokens = 11`},
		{"error", `error = 'e'`},
		{"stops", `stops = replace(stops, '"offset":2', '"offset":3')`},
		{"continued", `continued = 1`},
		{"imported", `imported = 1`},
	}
	shown := map[string]bool{"finish": true, "fingerprint": true} // what a report reads too
	for _, tc := range tests {
		t.Run(tc.col, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openAtPath(t)
			g, _ := sealedFixture(t, s)
			got, err := s.Generations(ctx, "", []string{g.Key})
			if err != nil || string(got[g.Key].Stops) != string(g.Stops) {
				t.Fatalf("sound: %v, stops %s", err, got[g.Key].Stops)
			}
			if _, err := s.db.ExecContext(ctx, `UPDATE generations SET `+tc.set); err != nil {
				t.Fatal(err)
			}
			var de *DamagedError
			if _, err := s.Generations(ctx, "", []string{g.Key}); !errors.As(err, &de) || !strings.Contains(err.Error(), g.Key) {
				t.Errorf("Generations: %v; want the damaged generation named", err)
			}
			err = s.EachEntry(ctx, Filter{}, func(Entry) error { return nil })
			if shown[tc.col] != errors.As(err, &de) {
				t.Errorf("EachEntry: %v (a report reads %s: %v)", err, tc.col, shown[tc.col])
			}
		})
	}
}

// TestLegacyRowsChecked (issue 37, item 4): the packed rows of a store
// written before seals are checked against their rows of scores when
// read, and the first writing open seals those that agree (recording it
// in the file's application_id) and drops, with the key's scores, those
// that do not, which a rescore then computes again.
func TestLegacyRowsChecked(t *testing.T) {
	ctx := context.Background()
	s, path := openAtPath(t)
	g, scores := sealedFixture(t, s)
	unsealPacked := func(change func([]byte)) {
		t.Helper()
		var row []byte
		if err := s.db.QueryRowContext(ctx, `SELECT scores FROM packed_scores`).Scan(&row); err != nil {
			t.Fatal(err)
		}
		body := slices.Clone(row[sealLen:])
		change(body)
		if _, err := s.db.ExecContext(ctx, `UPDATE packed_scores SET scores=?; PRAGMA application_id=0`, body); err != nil {
			t.Fatal(err)
		}
	}
	unsealPacked(func([]byte) {})
	got, err := s.ScoresFor(ctx, []string{g.Key})
	if err != nil || len(got) != 2 {
		t.Fatalf("a sound row from before seals: %v %v", got, err)
	}
	unsealPacked(func(b []byte) { b[len(b)-1] ^= 0x01 })
	var de *DamagedError
	if _, err := s.ScoresFor(ctx, []string{g.Key}); !errors.As(err, &de) {
		t.Errorf("ScoresFor of a row from before seals that disagrees with its scores: %v", err)
	}
	if err := s.EachEntry(ctx, Filter{}, func(Entry) error { return nil }); !errors.As(err, &de) {
		t.Errorf("EachEntry of a row from before seals that disagrees with its scores: %v", err)
	}
	s.Close()
	w, err := Open(ctx, path) // seals: drops the row that disagrees
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if got, err := w.ScoresFor(ctx, []string{g.Key}); err != nil || len(got) != 0 {
		t.Errorf("after the writing open: %v %v; want the key's scores dropped", got, err)
	}
	if err := w.PutScores(ctx, scores); err != nil {
		t.Fatal(err)
	}
	var id int64
	var marker []byte
	if err := w.db.QueryRowContext(ctx, `SELECT (SELECT application_id FROM pragma_application_id), substr(scores,1,1) FROM packed_scores`).Scan(&id, &marker); err != nil {
		t.Fatal(err)
	}
	if id != sealedAppID || len(marker) != 1 || marker[0] != sealMarker {
		t.Errorf("application_id %x, row marker %x; want %x, %x", id, marker, sealedAppID, sealMarker)
	}
}

// TestCheckRepair (issue 37, item 4): Check names a damaged packed row, a
// key's rows of scores that disagree with their sound packed row, a
// damaged digest and a damaged generation, each with what brings it back;
// --repair drops what is lost and restores what its packed row holds,
// after which the store checks sound.
func TestCheckRepair(t *testing.T) {
	ctx := context.Background()
	s, path := openAtPath(t)
	g2 := gen(2)
	sealedFixture(t, s)
	other := []Score{{GenKey: g2.Key, Task: "t", SampleID: "2", Setting: "dot", SettingKey: ".", Budget: 8, Metric: "em", Value: 0, Prediction: "3", Digest: "d2"}}
	if err := s.PutGenerations(ctx, []Generation{g2}, other); err != nil {
		t.Fatal(err)
	}
	if r, err := Check(ctx, path, false); err != nil || !r.Sound() {
		t.Fatalf("a sound store: %+v %v", r, err)
	}
	for _, q := range []string{
		`UPDATE scores SET value = 0.75 WHERE gen_key='k000001' AND metric='f1'`,    // a copy whose packed row holds
		`UPDATE score_digests SET digest = 'dx' WHERE gen_key='k000002'`,            // likewise
		`UPDATE packed_scores SET scores = scores || x'00' WHERE gen_key='k000002'`, // lost: rescore
		`UPDATE generations SET text = 'damaged' WHERE key='k000002'`,               // lost: rerun
	} {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	r, err := Check(ctx, path, false)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	r.Write(&out)
	for _, want := range []string{"restorable: 1 copies", "lost: 1 generations of t on fp", "tally rerun --model fp --tasks t", "lost: 1 scores of t", "tally rescore"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("check says:\n%s\nwant %q", out.String(), want)
		}
	}
	if r.Err() == nil {
		t.Error("a damaged store checks without an error")
	}
	if r, err = Check(ctx, path, true); err != nil || r.Err() != nil {
		t.Fatalf("repair: %v %v", r, err)
	}
	if r, err = Check(ctx, path, false); err != nil || !r.Sound() {
		out.Reset()
		r.Write(&out)
		t.Fatalf("after the repair: %v\n%s", err, out.String())
	}
	st, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := st.ScoresFor(ctx, []string{"k000001", "k000002"})
	if err != nil || len(got) != 2 || got[1].Value != 0.25 {
		t.Errorf("after the repair: %+v %v; want k000001's two scores as written, k000002's dropped", got, err)
	}
}

// TestCopyRefusesDamage (issue 37, item 4): a store whose rows of scores
// disagree with their sealed packed row (a flipped bit in the copy the
// report does not read) is not copied: the copy would pack and seal the
// damaged value anew in the destination.
func TestCopyRefusesDamage(t *testing.T) {
	ctx := context.Background()
	src, _ := openAtPath(t)
	sealedFixture(t, src)
	if _, err := src.db.ExecContext(ctx, `UPDATE scores SET value = 0.75 WHERE metric='f1'`); err != nil {
		t.Fatal(err)
	}
	dst, _ := openAtPath(t)
	var de *DamagedError
	if _, err := src.Copy(ctx, dst, ""); !errors.As(err, &de) || !strings.Contains(err.Error(), "t/1") {
		t.Fatalf("Copy of a damaged store: %v", err)
	}
	if n, err := dst.Counts(ctx); err != nil || n["scores"] != 0 || n["generations"] != 0 {
		t.Errorf("the destination after a refused copy: %v %v", n, err)
	}
}

// TestResealPacked: a migration that renames a task in packed_scores with
// SQL breaks the rows' seals; resealPacked seals them again.
func TestResealPacked(t *testing.T) {
	ctx := context.Background()
	s, _ := openAtPath(t)
	g, _ := sealedFixture(t, s)
	if _, err := s.db.ExecContext(ctx, `UPDATE packed_scores SET task='t@v1'`); err != nil {
		t.Fatal(err)
	}
	var de *DamagedError
	if _, err := s.ScoresFor(ctx, []string{g.Key}); !errors.As(err, &de) {
		t.Fatalf("a renamed task under the old seal: %v", err)
	}
	if err := s.tx(ctx, func(tx *txn) error { return resealPacked(ctx, tx) }); err != nil {
		t.Fatal(err)
	}
	got, err := s.ScoresFor(ctx, []string{g.Key})
	if err != nil || len(got) != 2 || got[0].Task != "t@v1" {
		t.Errorf("resealed: %+v %v", got, err)
	}
}
