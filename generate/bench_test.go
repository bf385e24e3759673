package generate

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"tally/internal/pgtest"
	"tally/store"
)

// shareRun executes one plan of n samples with w workers (each with its
// own store handle, as separate processes would have) on the store at
// path, with an instant backend, and returns the seconds the executions
// took (claims, commits, releases; the plans are made before the clock
// starts).
func shareRun(b *testing.B, path string, n, w int) (secs, claimSecs float64) {
	b.Helper()
	ctx := context.Background()
	type worker struct {
		st *store.Store
		p  *Plan
	}
	be := &fakeModel{slots: 8}
	ws := make([]worker, w)
	for i := range ws {
		st, err := store.Open(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		p, err := MakePlan(ctx, st, be, []*Job{newJob(n, 4, dot)})
		if err != nil {
			b.Fatal(err)
		}
		ws[i] = worker{st, p}
	}
	var wg sync.WaitGroup
	errs := make([]error, w)
	made := make([]int, w)
	claims := make([]float64, w)
	start := time.Now()
	for i, x := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sum, err := Execute(ctx, x.st, be, x.p, Options{Poll: 5 * time.Millisecond})
			errs[i], made[i], claims[i] = err, sum.GenerationsNew, sum.ClaimSeconds
		}()
	}
	wg.Wait()
	secs = time.Since(start).Seconds()
	total := 0
	for i, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
		total += made[i]
		claimSecs += claims[i] / float64(w)
	}
	if total != n {
		b.Fatalf("%d generations made by %d workers, want %d", total, w, n)
	}
	return secs, claimSecs
}

// BenchmarkShareThroughput measures claim-and-commit throughput with an
// instant backend (issue 15): one SQLite process, one PostgreSQL worker and
// eight PostgreSQL workers, each on a fresh store, in the same iteration,
// and reports samples/s for each and the ratio of one PostgreSQL worker to
// SQLite (target ≥ 0.8; eight workers: target ≥ 5,000 samples/s). It needs
// a PostgreSQL server (TALLY_TEST_POSTGRES) and skips saying so otherwise.
func BenchmarkShareThroughput(b *testing.B) {
	const n = 2000
	if !pgtest.Available() {
		b.Skip("no PostgreSQL server: set " + pgtest.Env)
	}
	var sqlite, pg1, pg8, sqliteClaim, pg1Claim float64
	for i := 0; i < b.N; i++ {
		s, c := shareRun(b, filepath.Join(b.TempDir(), "s.db"), n, 1)
		sqlite, sqliteClaim = sqlite+s, sqliteClaim+c
		s, c = shareRun(b, pgtest.NewDatabase(b), n, 1)
		pg1, pg1Claim = pg1+s, pg1Claim+c
		s, _ = shareRun(b, pgtest.NewDatabase(b), n, 8)
		pg8 += s
	}
	// The share of the time spent claiming and looking at what peers
	// stored (Summary.ClaimSeconds).
	b.ReportMetric(sqliteClaim/sqlite, "sqlite-claim-share")
	b.ReportMetric(pg1Claim/pg1, "pg1-claim-share")
	rate := func(secs float64) float64 { return float64(n*b.N) / secs }
	b.ReportMetric(rate(sqlite), "sqlite-samples/s")
	b.ReportMetric(rate(pg1), "pg1-samples/s")
	b.ReportMetric(rate(pg8), "pg8-samples/s")
	b.ReportMetric(rate(pg1)/rate(sqlite), "pg1/sqlite")
	b.ReportMetric(0, "ns/op")
}
