package generate

import (
	"context"
	"database/sql"
	"maps"
	"path/filepath"
	"testing"

	"tally/backends"
	"tally/internal/pgtest"
	"tally/store"
)

// otherModel is fakeModel under another fingerprint (another model's
// generations in the same store).
type otherModel struct {
	*fakeModel
	fp string
}

func (m otherModel) Fingerprint(context.Context) (string, error) { return m.fp, nil }

// TestLargePlanAndRescore (issue 23, finding 9): plans and rescoring large
// enough to take the paths that read many generations and scores at once
// (a scan of a model's scores through its generations, or of every score
// in ranges of rows, one a core; results a portion at a time) give what
// the key-by-key reads give: every status, digest, score and count, on
// both engines. A rescore that changes nothing writes nothing.
func TestLargePlanAndRescore(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s.db")
		testLargePlanAndRescore(t, path, func() (*sql.DB, error) { return sql.Open("sqlite", path) })
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.NewDatabase(t)
		testLargePlanAndRescore(t, dsn, func() (*sql.DB, error) { return sql.Open("pgx", dsn) })
	})
}

func testLargePlanAndRescore(t *testing.T, path string, raw func() (*sql.DB, error)) {
	if testing.Short() {
		t.Skip("generates 7,800 samples")
	}
	ctx := context.Background()
	st, err := store.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const n = 2600 // more than a scan's threshold, and than two portions of results
	be := &fakeModel{slots: 8}
	// Three models: a plan of one model's 2,600 samples reads every score
	// (a third of the generations or more), one of 2,100 reads its
	// model's scores through its generations.
	for _, m := range []backends.Backend{be, otherModel{be, "fake-v2"}, otherModel{be, "fake-v3"}} {
		p, err := MakePlan(ctx, st, m, []*Job{newJob(n, 8, dot, none)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Execute(ctx, st, m, p, Options{RunID: 7}); err != nil {
			t.Fatal(err)
		}
	}
	for _, size := range []int{n, 2100} {
		p, err := MakePlan(ctx, st, be, []*Job{newJob(size, 8, dot, none)})
		if err != nil {
			t.Fatal(err)
		}
		if p.Counts[Complete] != 2*size || p.Requests != 0 {
			t.Errorf("%d samples after their run: %v, %d requests; want all complete", size, p.Counts, p.Requests)
		}
		keys := make([]string, len(p.Items))
		for i, it := range p.Items {
			keys[i] = it.Key
		}
		scanned, err := st.ScoreDigests(ctx, p.Fingerprint, keys)
		if err != nil {
			t.Fatal(err)
		}
		keyed, err := st.ScoreDigests(ctx, "", keys)
		if err != nil {
			t.Fatal(err)
		}
		if scanned.Len() != 2*size || len(scanned.All()) != 2*size || !maps.Equal(scanned.All(), keyed.All()) {
			t.Errorf("%d samples: %d digests by scan, %d by key, equal %v", size, scanned.Len(), keyed.Len(), maps.Equal(scanned.All(), keyed.All()))
		}
	}

	// A changed scoring spec: every score is stale, rescored, then current.
	job := newJob(n, 8, dot, none)
	job.Spec = "len/v2"
	p, err := MakePlan(ctx, st, be, []*Job{job})
	if err != nil {
		t.Fatal(err)
	}
	if p.Counts[Answerable] != 2*n || p.Stale != 2*n {
		t.Errorf("changed spec: %v, %d stale; want all answerable and stale", p.Counts, p.Stale)
	}
	var got Results
	rep, err := Rescore(ctx, st, be, []*Job{job}, func(_ *Job, _ *Plan, res Results) error { got = res; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if rep.Scored != 2*n || rep.Recomputed != 2*n || counts(got)["t"]["dot"].Scored != n || len(got["t"]["none"]["len"]) != n {
		t.Errorf("rescore: %+v, counts %v", rep, counts(got))
	}
	res, err := ReadResults(ctx, st, p)
	if err != nil {
		t.Fatal(err)
	}
	if want := means(res); !maps.Equal(means(got)["t"]["dot"], want["t"]["dot"]) || !maps.Equal(means(got)["t"]["none"], want["t"]["none"]) {
		t.Errorf("rescore means %v, read back %v", means(got), want)
	}
	if p, _ := MakePlan(ctx, st, be, []*Job{job}); p.Counts[Complete] != 2*n {
		t.Errorf("after the rescore: %v; want all complete", p.Counts)
	}

	// Nothing changed: nothing is written (a mark on one score stays), but
	// a wrong stored value is put right.
	db, err := raw()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := p.Items[0].Key
	mark := `UPDATE scores SET run_id = 99 WHERE gen_key = '` + key + `'`
	wrong := `UPDATE scores SET value = 1000 WHERE gen_key = '` + p.Items[1].Key + `'`
	for _, q := range []string{mark, wrong} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if rep, err = Rescore(ctx, st, be, []*Job{job}, func(*Job, *Plan, Results) error { return nil }); err != nil || rep.Scored != 2*n || rep.Recomputed != 0 {
		t.Errorf("rescore of what is current: %+v, %v", rep, err)
	}
	var marked, wrongs int
	db.QueryRowContext(ctx, `SELECT COUNT(*) FROM scores WHERE run_id = 99`).Scan(&marked)
	db.QueryRowContext(ctx, `SELECT COUNT(*) FROM scores WHERE value = 1000`).Scan(&wrongs)
	if marked != 2 || wrongs != 0 {
		t.Errorf("after a rescore that changed nothing: %d scores still marked (want 2: not rewritten), %d wrong values (want 0)", marked, wrongs)
	}
}
