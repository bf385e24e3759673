// Package hostiletest holds what the tests of hostile inputs (issue 37)
// share: the bound on what one case may allocate, and a runner that
// checks it.
package hostiletest

import (
	"runtime"
	"testing"
	"time"
)

// Bytes is what one hostile case may allocate in all (issue 37: each
// case under 200 MB).
const Bytes = 200 << 20

// Bounded runs f, failing the test when it allocates more than limit
// bytes in this process, and when it has not returned after a minute (a
// hang on the old code: the test fails rather than hangs; the minute is
// no bound of the time a case takes, which the code's own bounds hold).
func Bounded(t testing.TB, limit uint64, f func()) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("still running after a minute")
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > limit {
		t.Errorf("allocated %d MB, more than the %d MB a hostile case may", got>>20, limit>>20)
	}
}
