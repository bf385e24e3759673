package report

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"tally/store"
)

// TestEachEntryPipelined: fn sees every entry in order, in batches or
// not; an error of fn is returned and ends the read well before its end;
// an error of the read is returned (fn having seen no entry past it);
// a cancelled context ends both.
func TestEachEntryPipelined(t *testing.T) {
	errFn, errRead := errors.New("fn failed"), errors.New("read failed")
	for _, c := range []struct {
		n, fnFailsAt, readFailsAt int
		cancelAt                  int
		want                      error
	}{
		{n: 0},
		{n: 1},
		{n: 255},
		{n: 256},
		{n: 257},
		{n: 100_000},
		{n: 100_000, fnFailsAt: 3, want: errFn},
		{n: 100_000, fnFailsAt: 5000, want: errFn},
		{n: 1000, readFailsAt: 700, want: errRead},
		{n: 100_000, cancelAt: 1000, want: context.Canceled},
	} {
		t.Run(fmt.Sprint(c.n, c.fnFailsAt, c.readFailsAt, c.cancelAt), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			produced := 0
			each := func(fn func(store.Entry) error) error {
				for i := range c.n {
					if c.readFailsAt > 0 && i == c.readFailsAt {
						return errRead
					}
					if c.cancelAt > 0 && i == c.cancelAt {
						cancel()
					}
					produced++
					if err := fn(store.Entry{Cell: i}); err != nil {
						return err
					}
				}
				return nil
			}
			seen := 0
			err := eachEntryPipelined(ctx, each, func(e store.Entry) error {
				if e.Cell != seen {
					t.Fatalf("entry %d seen as number %d", e.Cell, seen)
				}
				seen++
				if c.fnFailsAt > 0 && seen == c.fnFailsAt {
					return errFn
				}
				return nil
			})
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			switch {
			case c.want == nil && seen != c.n:
				t.Errorf("fn saw %d entries of %d", seen, c.n)
			case c.readFailsAt > 0 && seen > c.readFailsAt:
				t.Errorf("fn saw %d entries, the read failed at %d", seen, c.readFailsAt)
			case c.want != nil && c.readFailsAt == 0 && produced == c.n:
				t.Errorf("the read went on to its end (%d entries) after %v", produced, c.want)
			}
		})
	}
}
