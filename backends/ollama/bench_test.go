//go:build unix

package ollama

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"tally/backends"
	"tally/backends/internal/ollamatest"
)

// bareRun sends the requests straight through the api client, `slots` at a
// time, with the options the Backend would use, and returns the tokens the
// server generated.
func bareRun(tb testing.TB, c *api.Client, model string, reqs []backends.Request, slots, numCtx int) int {
	tb.Helper()
	var tokens atomic.Int64
	work := make(chan backends.Request)
	var wg sync.WaitGroup
	for range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				err := c.Generate(context.Background(), &api.GenerateRequest{Model: model, Prompt: r.Prompt, Raw: true,
					Options: map[string]any{"num_ctx": numCtx, "num_predict": r.MaxTokens, "temperature": 0, "seed": 42}},
					func(resp api.GenerateResponse) error {
						if resp.Done {
							tokens.Add(int64(resp.EvalCount))
						}
						return nil
					})
				if err != nil {
					tb.Error(err)
				}
			}
		}()
	}
	for _, r := range reqs {
		work <- r
	}
	close(work)
	wg.Wait()
	return int(tokens.Load())
}

// tallyRun runs the requests through the Backend and returns the tokens
// generated.
func tallyRun(tb testing.TB, b *Backend, reqs []backends.Request) int {
	tb.Helper()
	var tokens atomic.Int64
	err := b.Generate(context.Background(), reqs, func(ev backends.Event) bool {
		if ev.Done {
			if ev.Err != nil {
				tb.Error(ev.Err)
			}
			tokens.Add(int64(ev.GenTokens))
		}
		return true
	})
	if err != nil {
		tb.Fatal(err)
	}
	return int(tokens.Load())
}

// BenchmarkThroughput compares tokens/s through the Backend with a bare
// client loop sending the same requests at the same concurrency; "ratio" is
// tally/bare (goal ≥ 0.95).
func BenchmarkThroughput(b *testing.B) {
	model := realModel(b)
	be, err := Open(context.Background(), model, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	prompts := testPrompts(16)
	reqs := make([]backends.Request, len(prompts))
	for i, p := range prompts {
		reqs[i] = backends.Request{Index: i, Prompt: p, MaxTokens: 96}
	}
	numCtx := be.sizeContext(reqs)
	c := be.client
	// Warm up: load the model with this num_ctx.
	tallyRun(b, be, reqs[:1])
	var tallyTok, bareTok int
	var tallyDur, bareDur time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k := range 2 { // alternate which goes first
			if (i+k)%2 == 0 {
				t0 := time.Now()
				tallyTok += tallyRun(b, be, reqs)
				tallyDur += time.Since(t0)
			} else {
				t0 := time.Now()
				bareTok += bareRun(b, c, model, reqs, be.Slots(), numCtx)
				bareDur += time.Since(t0)
			}
		}
	}
	tr := float64(tallyTok) / tallyDur.Seconds()
	br := float64(bareTok) / bareDur.Seconds()
	b.ReportMetric(tr, "tally-tok/s")
	b.ReportMetric(br, "bare-tok/s")
	b.ReportMetric(tr/br, "ratio")
}

// BenchmarkRecovery kills the server while requests stream, restarts it,
// and reports how long the Backend takes to stream again: from the restart
// (server answering) and from the kill.
func BenchmarkRecovery(b *testing.B) {
	model := realModel(b)
	srv := ollamatest.Start(b)
	be, err := Open(context.Background(), model, Options{Host: srv.Host, BaseDelay: 20 * time.Millisecond,
		MaxDelay: 200 * time.Millisecond, MaxTries: 20})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	prompts := testPrompts(4)
	reqs := make([]backends.Request, len(prompts))
	for i, p := range prompts {
		reqs[i] = backends.Request{Index: i, Prompt: p, MaxTokens: 400}
	}
	var fromRestart, fromKill time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pieces := make(chan struct{}, 4096)
		done := make(chan error, 1)
		go func() {
			done <- be.Generate(context.Background(), reqs, func(ev backends.Event) bool {
				if !ev.Done {
					select {
					case pieces <- struct{}{}:
					default:
					}
				}
				return true
			})
		}()
		for range 20 { // streaming is under way
			<-pieces
		}
		srv.Kill()
		killed := time.Now()
		for len(pieces) > 0 { // drop what arrived before the kill
			<-pieces
		}
		srv.Restart()
		restarted := time.Now()
		<-pieces
		fromRestart += time.Since(restarted)
		fromKill += time.Since(killed)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(fromRestart.Milliseconds())/float64(b.N), "ms-after-restart")
	b.ReportMetric(float64(fromKill.Milliseconds())/float64(b.N), "ms-after-kill")
}
