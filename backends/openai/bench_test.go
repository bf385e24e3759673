//go:build unix

package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tally/backends"
)

// bareRun sends the requests straight to /v1/completions with net/http,
// `slots` at a time, with the body the Backend would send, reads each SSE
// stream to [DONE] and returns the tokens the server reported.
func bareRun(tb testing.TB, base, model string, reqs []backends.Request, slots int) int {
	tb.Helper()
	var tokens atomic.Int64
	work := make(chan backends.Request)
	var wg sync.WaitGroup
	for range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range work {
				body, _ := json.Marshal(map[string]any{"model": model, "prompt": r.Prompt, "max_tokens": r.MaxTokens,
					"temperature": 0, "seed": 42, "stream": true, "stream_options": map[string]any{"include_usage": true}})
				resp, err := http.Post(base+"/completions", "application/json", bytes.NewReader(body))
				if err != nil {
					tb.Error(err)
					continue
				}
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					data, ok := strings.CutPrefix(sc.Text(), "data: ")
					if !ok || data == "[DONE]" {
						continue
					}
					var c struct {
						Usage *usage `json:"usage"`
					}
					if json.Unmarshal([]byte(data), &c) == nil && c.Usage != nil && c.Usage.CompletionTokens > 0 {
						tokens.Add(int64(c.Usage.CompletionTokens))
					}
				}
				resp.Body.Close()
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

// BenchmarkOverhead compares tokens/s through the Backend with a bare
// net/http loop sending the same requests at the same concurrency to the
// same server (Ollama's /v1/completions); "overhead" is bare tok/s over
// tally tok/s (goal ≤ 1.05).
func BenchmarkOverhead(b *testing.B) {
	model, base := ollamaBase(b)
	be, err := Open(context.Background(), model, Options{BaseURL: base})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	prompts := testPrompts(16)
	reqs := make([]backends.Request, len(prompts))
	for i, p := range prompts {
		reqs[i] = backends.Request{Index: i, Prompt: p, MaxTokens: 96}
	}
	tallyRun(b, be, reqs[:1]) // warm up: the model is loaded
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
				bareTok += bareRun(b, base, model, reqs, be.Slots())
				bareDur += time.Since(t0)
			}
		}
	}
	tr := float64(tallyTok) / tallyDur.Seconds()
	br := float64(bareTok) / bareDur.Seconds()
	b.ReportMetric(tr, "tally-tok/s")
	b.ReportMetric(br, "bare-tok/s")
	b.ReportMetric(br/tr, "overhead")
}
