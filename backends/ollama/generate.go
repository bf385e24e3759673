package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

	"github.com/ollama/ollama/api"

	"tally/backends"
	"tally/backends/internal/fanout"
	"tally/backends/internal/resume"
	"tally/backends/internal/retry"
)

// HTTPError is a non-2xx answer from the server (4xx answers are not
// retried; 5xx and 429 are).
type HTTPError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Message is the server's "error" field, or the body.
	Message string
}

// Error formats the status code and the server's message.
func (e *HTTPError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.StatusCode, e.Message)
}

// statusTransport turns non-2xx answers into *HTTPError, so that the api
// client's stream reader (which drops the status code) still lets the
// backend tell a 404 from a 500.
type statusTransport struct{ base http.RoundTripper }

// RoundTrip sends the request and turns an error status into *HTTPError.
func (t *statusTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode < http.StatusBadRequest {
		return resp, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	msg := strings.TrimSpace(string(body))
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	return nil, &HTTPError{StatusCode: resp.StatusCode, Message: msg}
}

var (
	errStalled = errors.New("stream stalled")
	errNoDone  = errors.New("stream ended before the final message")
)

// Generate runs every request with Slots() in flight, in order, streaming
// text as it arrives and ending each request with one Done event. The sink
// may be called from several goroutines at once (for different requests).
// It returns ctx's error when ctx ends first; requests cut off that way get
// no Done event.
func (b *Backend) Generate(ctx context.Context, reqs []backends.Request, sink backends.Sink) error {
	numCtx := b.sizeContext(reqs)
	err := fanout.Run(ctx, b.opts.Parallel, reqs, func(r backends.Request) { b.one(ctx, r, numCtx, sink) })
	if err != nil {
		return fmt.Errorf("ollama: generate: %w", err)
	}
	return nil
}

// estimate is the conservative prompt-token estimate for r.
func (b *Backend) estimate(r backends.Request) int {
	return int(math.Ceil(float64(len(r.Prompt)+len(r.PrefixText))/b.opts.BytesPerToken)) + 1
}

// sizeContext returns the num_ctx for this call: the largest need among the
// requests that fit, rounded up to a power of two (at least 2048), at most
// the context length, and never below what earlier calls used.
func (b *Backend) sizeContext(reqs []backends.Request) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.opts.NumCtx > 0 {
		return b.numCtx
	}
	need := 0
	for _, r := range reqs {
		if est := b.estimate(r); est < b.ctxLen {
			need = max(need, min(est+max(r.MaxTokens, 0), b.ctxLen)) // budgets are capped by the context
		}
	}
	n := 2048
	for n < need {
		n *= 2
	}
	b.numCtx = max(b.numCtx, min(n, b.ctxLen))
	return b.numCtx
}

// attempt is what one streamed attempt produced.
type attempt struct {
	resume.Progress
	done       bool
	doneReason string
	metrics    api.Metrics
	numCtx     int
}

// Complete reports whether the final message arrived.
func (a *attempt) Complete(error) bool { return a.done }

// Done is the final event of a completed attempt; earlier counts the
// pieces of broken attempts before it.
func (a *attempt) Done(r backends.Request, earlier, _ int) backends.Event {
	ev := backends.Event{Index: r.Index, Done: true, GenTokens: earlier + a.metrics.EvalCount,
		PromptTokens: max(a.metrics.PromptEvalCount-earlier, 0)}
	switch {
	case a.metrics.PromptEvalCount >= a.numCtx:
		// The runner truncated the prompt to fit num_ctx.
		ev.Finish = backends.FinishContext
		ev.Err = fmt.Errorf("ollama: prompt of %d+ tokens truncated by the server to num_ctx %d: %w",
			a.metrics.PromptEvalCount, a.numCtx, backends.ErrContextOverflow)
	case a.doneReason == "length":
		ev.Finish = backends.FinishLength
	default:
		// "stop": an EOS token or a stop sequence. Ollama v0.6.5 reports
		// both the same way and strips the stop text, so they cannot be
		// told apart here; both end the generation for good.
		ev.Finish = backends.FinishEOS
	}
	return ev
}

// one runs a request to its Done event (unless ctx ends). A prompt that
// (by the estimate) fills the context is not sent; a budget past the
// context's room after the prompt is capped to it, and a generation that
// spends the capped budget ends with Finish "context-full".
func (b *Backend) one(ctx context.Context, r backends.Request, numCtx int, sink backends.Sink) {
	est := b.estimate(r)
	if r.MaxTokens > 0 && est >= b.ctxLen {
		err := fmt.Errorf("ollama: about %d prompt tokens ≥ context %d: %w", est, b.ctxLen, backends.ErrContextOverflow)
		sink(backends.Event{Index: r.Index, Done: true, Finish: backends.FinishContext, Err: err})
		return
	}
	if room := b.ctxLen - est; r.MaxTokens > room {
		r.MaxTokens = room
		full := sink
		sink = func(ev backends.Event) bool {
			if ev.Done && ev.Finish == backends.FinishLength {
				ev.Finish = backends.FinishContextFull
			}
			return full(ev)
		}
	}
	c := resume.Config{
		Name: "ollama", MaxTries: b.opts.MaxTries, Continue: b.opts.Continue, NoDone: errNoDone,
		Delay: func(tries int, _ error) time.Duration {
			return retry.Backoff(b.opts.BaseDelay, b.opts.MaxDelay, tries, rand.Float64())
		},
	}
	resume.Run(ctx, c, r, sink, func(ctx context.Context, prior, skip string, budget int) (resume.Attempt, error) {
		return b.stream(ctx, r, prior, skip, budget, numCtx, sink)
	})
}

// stream runs one attempt with budget new tokens: the request continued
// after prior (text streamed by earlier attempts), or replayed from the
// start with the pieces reproducing skip (already streamed) held back.
func (b *Backend) stream(ctx context.Context, r backends.Request, prior, skip string, budget, numCtx int, sink backends.Sink) (*attempt, error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watchdog := time.AfterFunc(b.opts.StallTimeout, func() { cancel(errStalled) })
	defer watchdog.Stop()

	a := &attempt{Progress: resume.Progress{SkipLeft: skip}, numCtx: numCtx}
	opts := map[string]any{
		"num_ctx": numCtx, "num_predict": budget, "temperature": 0, "seed": b.opts.Seed,
	}
	if len(r.StopHint) > 0 {
		opts["stop"] = r.StopHint
	}
	var keepAlive *api.Duration
	if b.opts.KeepAlive > 0 {
		keepAlive = &api.Duration{Duration: b.opts.KeepAlive}
	}
	onPiece := func(text string, done bool, reason string, m api.Metrics) error {
		watchdog.Reset(b.opts.StallTimeout)
		if err := a.Piece(r.Index, text, sink); err != nil {
			return err
		}
		if done {
			a.done, a.doneReason, a.metrics = true, reason, m
		}
		return nil
	}
	var err error
	if b.opts.Chat {
		system, user := "", r.Prompt
		if b.opts.Split != nil {
			system, user = b.opts.Split(r.Prompt)
		}
		var msgs []api.Message
		if system != "" {
			msgs = append(msgs, api.Message{Role: "system", Content: system})
		}
		msgs = append(msgs, api.Message{Role: "user", Content: user})
		if after := r.PrefixText + prior; after != "" {
			msgs = append(msgs, api.Message{Role: "assistant", Content: after})
		}
		err = b.client.Chat(actx, &api.ChatRequest{Model: b.model, Messages: msgs, Options: opts, KeepAlive: keepAlive},
			func(resp api.ChatResponse) error {
				return onPiece(resp.Message.Content, resp.Done, resp.DoneReason, resp.Metrics)
			})
	} else {
		err = b.client.Generate(actx, &api.GenerateRequest{Model: b.model, Prompt: r.Prompt + r.PrefixText + prior,
			Raw: true, Options: opts, KeepAlive: keepAlive},
			func(resp api.GenerateResponse) error {
				return onPiece(resp.Response, resp.Done, resp.DoneReason, resp.Metrics)
			})
	}
	if err == nil || errors.Is(err, resume.ErrSinkStop) {
		return a, err
	}
	if cause := context.Cause(actx); errors.Is(cause, errStalled) && ctx.Err() == nil {
		return a, fmt.Errorf("no data for %s: %w", b.opts.StallTimeout, errStalled)
	}
	var he *HTTPError
	if errors.As(err, &he) && he.StatusCode >= 400 && he.StatusCode < 500 && he.StatusCode != http.StatusTooManyRequests &&
		he.StatusCode != http.StatusRequestTimeout {
		return a, fmt.Errorf("%w: %w", resume.ErrPermanent, err)
	}
	return a, err
}
