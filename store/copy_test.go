package store

import (
	"context"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"tally/internal/pgtest"
)

// TestCopyRoundTrip: Copy carries generations (text with a NUL byte, token
// ids, no ids), scores (an undefined value), samples and runs SQLite →
// PostgreSQL → SQLite unchanged, and a second copy adds no run.
func TestCopyRoundTrip(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mid := filepath.Join(dir, "mid.db")
	if pgtest.Available() {
		mid = pgtest.NewDatabase(t)
	}
	open := func(p string) *Store {
		s, err := Open(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, m, b := open(filepath.Join(dir, "a.db")), open(mid), open(filepath.Join(dir, "b.db"))
	id, err := a.StartRun(ctx, Run{Command: "run", Config: []byte(`{"x":1}`), Host: "h", Backend: "fake", Model: "m", Fingerprint: "fp"})
	if err != nil {
		t.Fatal(err)
	}
	a.FinishRun(ctx, id, "done", 7, 9, 1.5, []byte(`{"s":2}`))
	g1, g2 := gen(1), gen(2)
	g1.Text, g1.RunID = "a\x00b", id
	g2.IDs, g2.Offsets, g2.Imported = nil, nil, true
	scores := []Score{{GenKey: g1.Key, Task: "t", SampleID: "1", Setting: "dot", SettingKey: ".", Budget: 8, Metric: "em", Value: 1, Prediction: "a\x00", RunID: id, Digest: "d1"},
		{GenKey: g2.Key, Task: "t", SampleID: "2", Setting: "dot", SettingKey: ".", Budget: 8, Metric: "em", Value: math.NaN(), Prediction: "p", Digest: "d2"}}
	if err := a.PutSamples(ctx, []Sample{{Task: "t", ID: "1", Prompt: "q\x00", Refs: []byte(`["r"]`), Metadata: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	if err := a.PutGenerations(ctx, []Generation{g1, g2}, scores); err != nil {
		t.Fatal(err)
	}
	for _, step := range [][2]*Store{{a, m}, {a, m}, {m, b}} {
		if _, err := step[0].Copy(ctx, step[1], ""); err != nil {
			t.Fatal(err)
		}
	}
	keys := []string{g1.Key, g2.Key}
	ga, _ := a.Generations(ctx, "", keys)
	gb, _ := b.Generations(ctx, "", keys)
	runsA, _ := a.Runs(ctx)
	runsB, _ := b.Runs(ctx)
	if len(runsB) != 1 {
		t.Fatalf("runs %+v", runsB)
	}
	// Run ids are the destination's own.
	for k, g := range gb {
		if g.RunID == runsB[0].ID && ga[k].RunID == runsA[0].ID {
			g.RunID = ga[k].RunID
		}
		gb[k] = g
	}
	if !reflect.DeepEqual(ga, gb) {
		t.Errorf("generations:\n%+v\nwant\n%+v", gb, ga)
	}
	runsB[0].ID = runsA[0].ID
	if !reflect.DeepEqual(runsA, runsB) {
		t.Errorf("runs:\n%+v\nwant\n%+v", runsB, runsA)
	}
	sb, _ := b.ScoresFor(ctx, keys)
	if len(sb) != 2 {
		t.Fatalf("scores %+v", sb)
	}
	// A SQLite store's ScoresFor reads its packed rows, which keep no
	// runs: the scores table's rows say which run wrote them.
	runOf := map[string]int64{}
	rows, err := b.db.QueryContext(ctx, `SELECT gen_key, COALESCE(run_id, 0) FROM scores`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var k string
		var id int64
		if err := rows.Scan(&k, &id); err != nil {
			t.Fatal(err)
		}
		runOf[k] = id
	}
	rows.Close()
	for _, x := range sb {
		x.RunID = runOf[x.GenKey]
		want := scores[0]
		if x.GenKey == g2.Key {
			want = scores[1]
		}
		if x.Prediction != want.Prediction || x.Digest != want.Digest || (x.Value != want.Value && !(math.IsNaN(x.Value) && math.IsNaN(want.Value))) ||
			(want.RunID != 0) != (x.RunID == runsB[0].ID) {
			t.Errorf("score %+v, want %+v", x, want)
		}
	}
	smp, _ := b.Samples(ctx, "t", "")
	if smp["1"].Prompt != "q\x00" {
		t.Errorf("samples %+v", smp)
	}
}

// TestCopyAllOrNothing: a copy that fails part way (here the destination
// refuses the last table's second score, through a trigger of its own)
// leaves the destination as it was: no run, sample or generation of the
// copy, which earlier tables' batches used to leave behind; the copy
// then succeeds whole once the refusal goes.
func TestCopyAllOrNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func(p string) *Store {
		s, err := Open(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	src, dst := open(filepath.Join(dir, "src.db")), open(filepath.Join(dir, "dst.db"))
	id, err := src.StartRun(ctx, Run{Command: "run", Host: "h", Backend: "fake", Model: "m", Fingerprint: "fp"})
	if err != nil {
		t.Fatal(err)
	}
	g1, g2 := gen(1), gen(2)
	g1.RunID, g2.RunID = id, id
	if err := src.PutSamples(ctx, []Sample{{Task: "t", ID: "1", Prompt: "q", Refs: []byte(`["r"]`), Metadata: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	scores := []Score{{GenKey: g1.Key, Task: "t", SampleID: "1", Setting: "dot", SettingKey: ".", Budget: 8, Metric: "em", Value: 1, Prediction: "a", RunID: id, Digest: "d1"},
		{GenKey: g2.Key, Task: "t", SampleID: "2", Setting: "dot", SettingKey: ".", Budget: 8, Metric: "em", Value: 0, Prediction: "b", RunID: id, Digest: "d2"}}
	if err := src.PutGenerations(ctx, []Generation{g1, g2}, scores); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.db.ExecContext(ctx, `CREATE TRIGGER refuse BEFORE INSERT ON scores WHEN new.sample_id = '2' BEGIN SELECT RAISE(ABORT, 'refused'); END`); err != nil {
		t.Fatal(err)
	}
	count := func() (n int) {
		for _, table := range []string{"runs", "samples", "generations", "scores"} {
			var k int
			if err := dst.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM `+table).Scan(&k); err != nil {
				t.Fatal(err)
			}
			n += k
		}
		return n
	}
	st, err := src.Copy(ctx, dst, "")
	if err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("copy: %v, want the destination's refusal", err)
	}
	if n := count(); n != 0 || st != (CopyStats{}) {
		t.Errorf("a failed copy left %d rows in the destination (stats %+v), want none", n, st)
	}
	if _, err := dst.db.ExecContext(ctx, `DROP TRIGGER refuse`); err != nil {
		t.Fatal(err)
	}
	st, err = src.Copy(ctx, dst, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := (CopyStats{Runs: 1, Samples: 1, Generations: 2, Scores: 2}); st != want || count() != 6 {
		t.Errorf("copy after the refusal went: stats %+v, %d rows; want %+v, 6 rows", st, count(), want)
	}
}
