package openai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"

	"tally/backends"
	"tally/backends/internal/fanout"
	"tally/backends/internal/resume"
	"tally/backends/internal/retry"
)

// maxRetryAfter caps the delay a server may ask for with Retry-After.
const maxRetryAfter = 10 * time.Minute

var (
	errStalled = errors.New("stream stalled")
	errNoDone  = errors.New("stream ended before [DONE]")
)

// Generate runs every request with Slots() in flight, in order, streaming
// text as it arrives and ending each request with one Done event. The sink
// may be called from several goroutines at once (for different requests).
// It returns ctx's error when ctx ends first; requests cut off that way get
// no Done event.
func (b *Backend) Generate(ctx context.Context, reqs []backends.Request, sink backends.Sink) error {
	err := fanout.Run(ctx, b.opts.Parallel, reqs, func(r backends.Request) { b.one(ctx, r, sink) })
	if err != nil {
		return fmt.Errorf("openai: generate: %w", err)
	}
	return nil
}

// usage is the server's token accounting.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// attempt is what one streamed attempt produced.
type attempt struct {
	resume.Progress
	finish string // the choice's finish_reason, once sent
	done   bool   // [DONE] arrived
	usage  *usage
}

// Complete reports whether [DONE] arrived, or the choice finished in a
// stream that ended cleanly without it.
func (a *attempt) Complete(err error) bool { return a.done || (err == nil && a.finish != "") }

// Done is the final event of a completed attempt; earlier counts the
// pieces of broken attempts continued by it, gen every piece streamed.
func (a *attempt) Done(r backends.Request, earlier, gen int) backends.Event {
	ev := backends.Event{Index: r.Index, Done: true, GenTokens: gen}
	if a.usage != nil && a.usage.CompletionTokens > 0 {
		ev.GenTokens = earlier + a.usage.CompletionTokens
		ev.PromptTokens = max(a.usage.PromptTokens-earlier, 0)
	} else if a.usage != nil {
		ev.PromptTokens = max(a.usage.PromptTokens-earlier, 0)
	}
	switch {
	case a.finish == "length" && a.usage != nil && a.usage.CompletionTokens > 0 && ev.GenTokens < r.MaxTokens:
		// The server stopped short of the budget: it ran out of context.
		// llama.cpp's server does so (tools/server/server.cpp,
		// process_token: "if context shifting is disabled, make sure that
		// we don't run out of context", STOP_TYPE_LIMIT, reported as
		// "length") rather than refuse the budget.
		ev.Finish = backends.FinishContextFull
	case a.finish == "length":
		ev.Finish = backends.FinishLength
	default:
		// "stop": an EOS token or a stop sequence (servers strip the stop
		// text and report both alike); both end the generation for good.
		ev.Finish = backends.FinishEOS
	}
	return ev
}

// one runs a request to its Done event (unless ctx ends). A server that
// refuses the budget because the prompt plus max_tokens exceeds the
// context, where the prompt itself fits, is asked once more with the budget
// capped at the room the prompt leaves (see budgetRoom); a generation that
// spends the capped budget ends with Finish "context-full", as in the
// native and ollama backends.
func (b *Backend) one(ctx context.Context, r backends.Request, sink backends.Sink) {
	var room int
	refused := false
	b.run(ctx, r, func(ev backends.Event) bool {
		if ev.Done && ev.Finish == backends.FinishContext && ev.GenTokens == 0 {
			if room, refused = b.budgetRoom(ctx, r, ev.Err); refused {
				return false // asked again below
			}
		}
		return sink(ev)
	})
	if !refused || ctx.Err() != nil {
		return
	}
	r.MaxTokens = room
	b.run(ctx, r, func(ev backends.Event) bool {
		if ev.Done && ev.Finish == backends.FinishLength {
			ev.Finish = backends.FinishContextFull
		}
		return sink(ev)
	})
}

// run drives one request through resume.Run.
func (b *Backend) run(ctx context.Context, r backends.Request, sink backends.Sink) {
	c := resume.Config{
		Name: "openai", MaxTries: b.opts.MaxTries, NoDone: errNoDone,
		// The back-off, or the server's Retry-After when it asked for
		// longer.
		Delay: func(tries int, err error) time.Duration {
			var wait time.Duration
			var he *HTTPError
			if errors.As(err, &he) {
				wait = he.RetryAfter
			}
			return max(retry.Backoff(b.opts.BaseDelay, b.opts.MaxDelay, tries, rand.Float64()), min(wait, maxRetryAfter))
		},
	}
	resume.Run(ctx, c, r, sink, func(ctx context.Context, prior, skip string, budget int) (resume.Attempt, error) {
		return b.stream(ctx, r, prior, skip, budget, sink)
	})
}

// message is one chat message.
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// body is the JSON of one request.
func (b *Backend) body(r backends.Request, prior string, budget int) ([]byte, string) {
	m := map[string]any{
		"model": b.model, "max_tokens": budget, "temperature": 0, "seed": b.opts.Seed,
		"stream": true, "stream_options": map[string]any{"include_usage": true},
	}
	if len(r.StopHint) > 0 {
		m["stop"] = r.StopHint[:min(len(r.StopHint), b.opts.MaxStops)]
	}
	if !b.opts.Chat {
		m["prompt"] = r.Prompt + r.PrefixText + prior
		data, _ := json.Marshal(m)
		return data, "/completions"
	}
	system, user := "", r.Prompt
	if b.opts.Split != nil {
		system, user = b.opts.Split(r.Prompt)
	}
	if system == "" {
		system = b.opts.System
	}
	var msgs []message
	if system != "" {
		msgs = append(msgs, message{"system", system})
	}
	msgs = append(msgs, message{"user", user})
	if after := r.PrefixText + prior; after != "" {
		// Continue the assistant's answer rather than start a new turn:
		// vLLM's and SGLang's flags; Ollama continues a final assistant
		// message on its own.
		msgs = append(msgs, message{"assistant", after})
		m["continue_final_message"] = true
		m["add_generation_prompt"] = false
	}
	m["messages"] = msgs
	data, _ := json.Marshal(m)
	return data, "/chat/completions"
}

// chunk is one streamed SSE event of either endpoint.
type chunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage          `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// stream runs one attempt with budget new tokens: the request continued
// after prior (text streamed by earlier attempts), or replayed from the
// start with the pieces reproducing skip (already streamed) held back.
func (b *Backend) stream(ctx context.Context, r backends.Request, prior, skip string, budget int, sink backends.Sink) (*attempt, error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watchdog := time.AfterFunc(b.opts.StallTimeout, func() { cancel(errStalled) })
	defer watchdog.Stop()

	a := &attempt{Progress: resume.Progress{SkipLeft: skip}}
	data, path := b.body(r, prior, budget)
	req, err := http.NewRequestWithContext(actx, http.MethodPost, b.url(path), bytes.NewReader(data))
	if err != nil {
		return a, fmt.Errorf("%w: %w", resume.ErrPermanent, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	b.authorize(req)
	resp, err := b.http.Do(req)
	if err != nil {
		return a, b.transportErr(ctx, actx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		he := b.readError(resp)
		if d, ok := retry.RetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
			he.RetryAfter = d
		}
		return a, classify(he)
	}
	onPiece := func(text string) error { return a.Piece(r.Index, text, sink) }
	rd := bufio.NewReaderSize(resp.Body, 64<<10)
	for {
		line, err := rd.ReadBytes('\n')
		watchdog.Reset(b.opts.StallTimeout)
		if len(line) > 0 && (err == nil || err == io.EOF) {
			if perr := b.line(bytes.TrimRight(line, "\r\n"), a, onPiece); perr != nil {
				return a, perr
			}
			if a.done {
				return a, nil
			}
		}
		if err == io.EOF {
			if a.finish != "" {
				return a, nil // no [DONE], but the choice was finished
			}
			return a, errNoDone
		}
		if err != nil {
			return a, b.transportErr(ctx, actx, err)
		}
	}
}

// line handles one SSE line.
func (b *Backend) line(line []byte, a *attempt, onPiece func(string) error) error {
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return nil // blank separators, comments, event: and id: lines
	}
	data = bytes.TrimSpace(data)
	if string(data) == "[DONE]" {
		a.done = true
		return nil
	}
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("bad stream event %.200q: %w", b.redact(string(data)), err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		he := parseError(http.StatusOK, append(append([]byte(`{"error":`), c.Error...), '}'), string(c.Error))
		he.Message = b.redact(he.Message)
		return classify(he)
	}
	if c.Usage != nil {
		a.usage = c.Usage
	}
	for _, ch := range c.Choices {
		if err := onPiece(ch.Text + ch.Delta.Content); err != nil {
			return err
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			a.finish = *ch.FinishReason
		}
	}
	return nil
}

// classify marks an error answer as a context overflow, retryable (429,
// 408, 5xx and errors inside a 200 stream) or permanent (other 4xx).
func classify(he *HTTPError) error {
	switch {
	case isContextOverflow(he.Code, he.Message):
		return fmt.Errorf("%w: %w", backends.ErrContextOverflow, he)
	case he.StatusCode == http.StatusTooManyRequests || he.StatusCode == http.StatusRequestTimeout ||
		he.StatusCode >= 500 || he.StatusCode < 400:
		return he
	default:
		return fmt.Errorf("%w: %w", resume.ErrPermanent, he)
	}
}

// transportErr names a stalled stream as such.
func (b *Backend) transportErr(ctx, actx context.Context, err error) error {
	if cause := context.Cause(actx); errors.Is(cause, errStalled) && ctx.Err() == nil {
		return fmt.Errorf("no data for %s: %w", b.opts.StallTimeout, errStalled)
	}
	return cleanURLError(err)
}
