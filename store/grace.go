package store

import (
	"context"
	"time"
)

// CommitGrace is how long the writes that record finished work and close a
// run (committed generations, released claims, a worker's and a run's end)
// may go on once the command is interrupted (SIGINT, SIGTERM): ample for a
// store that answers, and short enough that a signal ends tally within
// seconds when the store does not (a PostgreSQL server lost, a SQLite file
// whose lock another process holds).
const CommitGrace = 3 * time.Second

// WithGrace returns a context for those writes: it is not cancelled with
// ctx, but CommitGrace after ctx is (CommitGrace after the call when ctx is
// already done). Call cancel when the writes are over.
func WithGrace(ctx context.Context) (context.Context, context.CancelFunc) {
	gctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(CommitGrace, cancel) })
	return gctx, func() {
		stop()
		cancel()
	}
}
