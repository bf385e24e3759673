//go:build unix

package ollama

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"tally/backends"
	"tally/backends/internal/ollamatest"
)

// realModel returns the model name of the running server, or skips.
func realModel(tb testing.TB) string {
	tb.Helper()
	return ollamatest.Model(tb)
}

// testPrompts are varied prompts for the tiny model.
func testPrompts(n int) []string {
	base := []string{
		"the harness reads the tokens", "Question 7: what is 3 plus 4?\nAnswer:", "alpha bravo charlie",
		"every request streams", "monday tuesday", "a long document checks the question",
		"the server counts forty-two numbers before noon.", "mountain river forest",
	}
	out := make([]string, n)
	for i := range out {
		out[i] = base[i%len(base)]
		if i >= len(base) {
			out[i] = fmt.Sprintf("%s %d", out[i], i)
		}
	}
	return out
}

// run generates every prompt and returns texts and Done events by index.
func run(tb testing.TB, b *Backend, prompts []string, maxTokens int, stops []string) ([]string, []backends.Event, []int) {
	tb.Helper()
	reqs := make([]backends.Request, len(prompts))
	for i, p := range prompts {
		reqs[i] = backends.Request{Index: i, Prompt: p, MaxTokens: maxTokens, StopHint: stops}
	}
	var mu sync.Mutex
	texts := make([]string, len(reqs))
	pieces := make([]int, len(reqs))
	done := make([]backends.Event, len(reqs))
	err := b.Generate(context.Background(), reqs, func(ev backends.Event) bool {
		mu.Lock()
		defer mu.Unlock()
		if ev.Done {
			if done[ev.Index].Done {
				tb.Errorf("request %d: two Done events", ev.Index)
			}
			done[ev.Index] = ev
			return false
		}
		texts[ev.Index] += ev.Text
		pieces[ev.Index]++
		return true
	})
	if err != nil {
		tb.Fatalf("Generate: %v", err)
	}
	for i, ev := range done {
		if !ev.Done {
			tb.Errorf("request %d: no Done event", i)
		}
	}
	return texts, done, pieces
}

func TestIntegrationGenerate(t *testing.T) {
	model := realModel(t)
	ctx := context.Background()
	b, err := Open(ctx, model, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fp, err := b.Fingerprint(ctx)
	if err != nil || !strings.HasPrefix(fp, "ollama:") || len(fp) < len("ollama:")+64 {
		t.Fatalf("Fingerprint = %q, %v", fp, err)
	}
	t.Logf("fingerprint %s, context %d, slots %d", fp, b.ContextLength(), b.Slots())

	prompts := testPrompts(6)
	const budget = 48
	texts, done, _ := run(t, b, prompts, budget, nil)
	for i, ev := range done {
		if ev.Err != nil || (ev.Finish != backends.FinishLength && ev.Finish != backends.FinishEOS) {
			t.Errorf("request %d: Done %+v", i, ev)
		}
		if ev.PromptTokens <= 0 || ev.GenTokens > budget || (ev.Finish == backends.FinishLength && ev.GenTokens != budget) {
			t.Errorf("request %d: prompt tokens %d, gen tokens %d (budget %d)", i, ev.PromptTokens, ev.GenTokens, budget)
		}
	}
	// Greedy: a second run is identical.
	again, _, _ := run(t, b, prompts, budget, nil)
	for i := range texts {
		if again[i] != texts[i] {
			t.Errorf("request %d not deterministic:\n%q\n%q", i, texts[i], again[i])
		}
	}
	// A stop hint taken from request 0's output ends it there.
	var stop string
	for _, w := range strings.Fields(texts[0]) {
		if len(w) >= 2 {
			stop = w[:2]
			break
		}
	}
	if stop == "" {
		t.Fatalf("no word in %q to use as a stop", texts[0])
	}
	stopped, sdone, _ := run(t, b, prompts[:1], budget, []string{stop})
	want := texts[0][:strings.Index(texts[0], stop)]
	if stopped[0] != want || sdone[0].Finish != backends.FinishEOS {
		t.Errorf("with stop %q: %q (%s), want %q (eos)", stop, stopped[0], sdone[0].Finish, want)
	}
}

// countingTransport counts /api/generate requests.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if strings.HasSuffix(r.URL.Path, "/api/generate") {
		c.n.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func TestIntegrationServerRestarts(t *testing.T) {
	model := realModel(t)
	srv := ollamatest.Start(t)
	ctx := context.Background()
	const n, budget, restarts = 12, 160, 5
	prompts := testPrompts(n)

	ref, err := Open(ctx, model, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, _, refPieces := run(t, ref, prompts, budget, nil)
	expected := 0
	for _, p := range refPieces {
		expected += p
	}

	ct := &countingTransport{}
	b, err := Open(ctx, model, Options{Host: srv.Host, Transport: ct, Parallel: 4,
		BaseDelay: 20 * time.Millisecond, MaxDelay: 500 * time.Millisecond, MaxTries: 10})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	reqs := make([]backends.Request, n)
	for i, p := range prompts {
		reqs[i] = backends.Request{Index: i, Prompt: p, MaxTokens: budget}
	}
	var (
		mu       sync.Mutex
		texts    = make([]string, n)
		pieces   = make([]int, n)
		done     = make([]backends.Event, n)
		total    int
		progress = make(chan int, 1024)
	)
	genErr := make(chan error, 1)
	go func() {
		genErr <- b.Generate(ctx, reqs, func(ev backends.Event) bool {
			mu.Lock()
			defer mu.Unlock()
			if ev.Done {
				if done[ev.Index].Done {
					t.Errorf("request %d: two Done events", ev.Index)
				}
				done[ev.Index] = ev
				return false
			}
			texts[ev.Index] += ev.Text
			pieces[ev.Index]++
			total++
			select {
			case progress <- total:
			default:
			}
			return true
		})
	}()
	// Kill and restart the server each time another 1/(restarts+1) of the
	// expected tokens has streamed.
	var recoveries []time.Duration
	var finished bool
	var gerr error
	wait := func(above int) bool { // until a piece beyond `above` streamed
		for {
			select {
			case got := <-progress:
				if got > above {
					return true
				}
			case gerr = <-genErr:
				finished = true
				return false
			}
		}
	}
	for k := 1; k <= restarts && !finished; k++ {
		if !wait(k*expected/(restarts+1) - 1) {
			break
		}
		srv.Kill()
		mu.Lock()
		at := total
		mu.Unlock()
		srv.Restart()
		restarted := time.Now()
		if wait(at) {
			recoveries = append(recoveries, time.Since(restarted))
		}
	}
	if !finished {
		gerr = <-genErr
	}
	if gerr != nil {
		t.Fatal(gerr)
	}
	if len(recoveries) < restarts {
		t.Errorf("only %d of %d restarts happened during the run", len(recoveries), restarts)
	}
	identical := 0
	for i := range n {
		ev := done[i]
		if ev.Err != nil || ev.Finish == backends.FinishError {
			t.Errorf("request %d failed: %+v", i, ev)
		}
		// A request restarted from scratch would stream its first part
		// twice: more pieces than the budget.
		if pieces[i] > budget {
			t.Errorf("request %d streamed %d pieces for a budget of %d (duplicated text?)", i, pieces[i], budget)
		}
		if texts[i] == want[i] {
			identical++
		}
	}
	if sent := ct.n.Load(); sent <= n {
		t.Errorf("only %d generate calls for %d requests: the restarts interrupted nothing", sent, n)
	} else {
		t.Logf("%d generate calls for %d requests over %d restarts", sent, n, restarts)
	}
	// Replay makes a resumed request equal the uninterrupted one, as far
	// as the server is deterministic across restarts and batch mixes.
	if identical < n/2 {
		t.Errorf("only %d/%d identical to an uninterrupted run", identical, n)
	}
	t.Logf("identical to an uninterrupted run: %d/%d; recovery after each restart (first piece): %v", identical, n, recoveries)
}

func TestIntegrationFaultProxy(t *testing.T) {
	model := realModel(t)
	ctx := context.Background()
	direct, err := Open(ctx, model, Options{})
	if err != nil {
		t.Fatal(err)
	}
	prompts := testPrompts(8)
	const budget = 40
	want, _, _ := run(t, direct, prompts, budget, nil)

	up, err := url.Parse(direct.host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(up)
	var calls, failed atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/generate" {
			// The first three calls fail, then every fourth.
			if c := calls.Add(1); c <= 3 || c%4 == 0 {
				failed.Add(1)
				http.Error(w, `{"error":"injected fault"}`, http.StatusInternalServerError)
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	b, err := Open(ctx, model, Options{Host: front.URL, BaseDelay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	texts, done, _ := run(t, b, prompts, budget, nil)
	for i := range prompts {
		if done[i].Err != nil || texts[i] != want[i] {
			t.Errorf("request %d: %q %+v, want %q", i, texts[i], done[i], want[i])
		}
	}
	if failed.Load() < 3 {
		t.Errorf("only %d injected faults", failed.Load())
	}
	t.Logf("%d injected 500s over %d generate calls", failed.Load(), calls.Load())
}
