// Package fanout runs a server backend's requests with a fixed number in
// flight: the worker pool that the ollama and openai backends share.
package fanout

import (
	"context"

	"tally/backends"
)

// Run calls one for every request, in order, with at most parallel calls
// running at a time (at least one), and returns when all calls it started
// have returned. When ctx ends first it stops handing out requests and
// returns ctx's error; requests not yet handed out are never started.
func Run(ctx context.Context, parallel int, reqs []backends.Request, one func(backends.Request)) error {
	work := make(chan backends.Request)
	done := make(chan struct{})
	n := min(max(parallel, 1), max(len(reqs), 1))
	for range n {
		go func() {
			defer func() { done <- struct{}{} }()
			for r := range work {
				one(r)
			}
		}()
	}
	var err error
feed:
	for _, r := range reqs {
		select {
		case work <- r:
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(work)
	for range n {
		<-done
	}
	if err == nil {
		err = ctx.Err()
	}
	return err
}
