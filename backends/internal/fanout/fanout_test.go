package fanout

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"tally/backends"
)

func TestRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		parallel int
		n        int
	}{
		{"serial", 1, 10},
		{"parallel", 4, 25},
		{"more slots than requests", 16, 3},
		{"zero parallel means one", 0, 5},
		{"no requests", 4, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reqs := make([]backends.Request, tc.n)
			for i := range reqs {
				reqs[i].Index = i
			}
			var (
				mu        sync.Mutex
				seen      = map[int]int{}
				in, most  atomic.Int32
				wantLimit = int32(max(tc.parallel, 1))
			)
			err := Run(context.Background(), tc.parallel, reqs, func(r backends.Request) {
				cur := in.Add(1)
				for {
					m := most.Load()
					if cur <= m || most.CompareAndSwap(m, cur) {
						break
					}
				}
				mu.Lock()
				seen[r.Index]++
				mu.Unlock()
				in.Add(-1)
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(seen) != tc.n {
				t.Errorf("ran %d distinct requests, want %d", len(seen), tc.n)
			}
			for i, c := range seen {
				if c != 1 {
					t.Errorf("request %d ran %d times", i, c)
				}
			}
			if most.Load() > wantLimit {
				t.Errorf("%d in flight at once, limit %d", most.Load(), wantLimit)
			}
		})
	}
}

func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	reqs := make([]backends.Request, 100)
	var ran atomic.Int32
	err := Run(ctx, 2, reqs, func(backends.Request) {
		if ran.Add(1) == 3 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if n := ran.Load(); n >= 100 {
		t.Errorf("all %d requests ran after cancel", n)
	}
}
