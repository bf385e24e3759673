package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
)

// TestEachEntryInRanges: scores over several of the ranges a SQLite
// store's scores are read in (entryRange rowids each, on several cores)
// come to fn one at a time in storage order, the order they were written
// (PostgreSQL: the same scores), with their cells numbered as met, under
// a filter too, whether they are read from packed_scores or (a SQLite
// store of schema 5) from scores; an error from fn ends the read with
// that error, and a cancelled read ends.
func TestEachEntryInRanges(t *testing.T) {
	engines(t, func(t *testing.T, newPath func() string) {
		ctx := context.Background()
		s, err := Open(ctx, newPath())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		n := entryRange*5/2 + 7 // generations, two scores each: five ranges of scores and a bit, three of packed rows
		order := rand.New(rand.NewPCG(1, 2)).Perm(n)
		var want []Score
		for lo := 0; lo < n; lo += 2000 {
			var gens []Generation
			var scores []Score
			for _, i := range order[lo:min(lo+2000, n)] {
				g := gen(i)
				g.Task = fmt.Sprint("t", i%3)
				gens = append(gens, g)
				for _, m := range []string{"em", "f1"} {
					scores = append(scores, Score{GenKey: g.Key, Task: g.Task, SampleID: g.SampleID, Setting: []string{"dot", "nl"}[i%2],
						SettingKey: []string{".", "\n"}[i%2], Budget: 8, Metric: m, Value: float64(i), Prediction: fmt.Sprint("p", i/2), Digest: "d"})
				}
			}
			if err := s.PutGenerations(ctx, gens, scores); err != nil {
				t.Fatal(err)
			}
			want = append(want, scores...)
		}
		read := func(f Filter) []Score {
			t.Helper()
			var got []Score
			cells := map[[3]string]int{}
			if err := s.EachEntry(ctx, f, func(e Entry) error {
				c := [3]string{e.Task, e.Setting, e.Metric}
				if id, ok := cells[c]; !ok && e.Cell != len(cells) || ok && id != e.Cell {
					t.Fatalf("cell %v numbered %d (%d met before)", c, e.Cell, len(cells))
				}
				cells[c] = e.Cell
				e.Score.RunID = 0
				got = append(got, e.Score)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			return got
		}
		sorted := func(x []Score) []Score {
			x = append([]Score(nil), x...)
			sort.Slice(x, func(a, b int) bool { return x[a].GenKey+x[a].Metric < x[b].GenKey+x[b].Metric })
			return x
		}
		got := read(Filter{})
		if s.db.eng != postgresEngine {
			if !reflect.DeepEqual(got, want) {
				t.Errorf("not in storage order: %d entries, want %d", len(got), len(want))
			}
			// A store of schema 5, read-only, has no packed rows: its
			// scores are read.
			s.schema = packedScoresSchema - 1
			if got := read(Filter{}); !reflect.DeepEqual(got, want) {
				t.Errorf("from the scores table: not in storage order: %d entries, want %d", len(got), len(want))
			}
			var some []Score
			for _, sc := range want {
				if sc.Task != "t0" && sc.Setting == "nl" {
					some = append(some, sc)
				}
			}
			if got := read(Filter{Tasks: []string{"t1", "t2"}, Settings: []string{"nl"}, Fingerprints: []string{"fp"}}); !reflect.DeepEqual(got, some) {
				t.Errorf("from the scores table, filtered: not in storage order: %d entries, want %d", len(got), len(some))
			}
			s.schema = 0
		} else if !reflect.DeepEqual(sorted(got), sorted(want)) {
			t.Errorf("%d entries, want %d", len(got), len(want))
		}
		var some []Score
		for _, sc := range want {
			if sc.Task != "t0" && sc.Setting == "nl" {
				some = append(some, sc)
			}
		}
		got = read(Filter{Tasks: []string{"t1", "t2"}, Settings: []string{"nl"}, Fingerprints: []string{"fp"}})
		if s.db.eng != postgresEngine {
			if !reflect.DeepEqual(got, some) {
				t.Errorf("filtered: not in storage order: %d entries, want %d", len(got), len(some))
			}
		} else if !reflect.DeepEqual(sorted(got), sorted(some)) {
			t.Errorf("filtered: %d entries, want %d", len(got), len(some))
		}
		stop := errors.New("stop")
		for _, at := range []int{0, entryRange + 1, len(want) - 1} {
			k := 0
			err := s.EachEntry(ctx, Filter{}, func(Entry) error {
				if k == at {
					return stop
				}
				k++
				return nil
			})
			if !errors.Is(err, stop) || k != at {
				t.Errorf("fn failing at entry %d: %v after %d entries", at, err, k)
			}
		}
		cctx, cancel := context.WithCancel(ctx)
		k := 0
		err = s.EachEntry(cctx, Filter{}, func(Entry) error {
			if k++; k == 10 {
				cancel()
			}
			return nil
		})
		if err == nil || k >= len(want) {
			t.Errorf("cancelled after 10 entries: %v after %d", err, k)
		}
	})
}
