// Package ollama is tally's backend for a running Ollama server, through the
// official github.com/ollama/ollama/api client.
//
// Requests run in raw completion mode by default (the exact prompt, no
// template: tally's tasks build their prompts themselves); Options.Chat
// sends the prompt as one user message through the model's chat template
// instead. Decoding is greedy (temperature 0, fixed seed). The shared stop
// sequences go to the server as "stop"; package generate stays the
// authority on truncation.
//
// Throughput: Generate keeps Slots() requests in flight, which should match
// the server's OLLAMA_NUM_PARALLEL. num_ctx is chosen per Backend, not per
// request: Ollama reloads the model whenever num_ctx changes, so the
// backend sizes it to the largest need seen so far (a power of two, at
// least 2048, at most the model's context length) and never shrinks it.
//
// Faults: connection errors, timeouts, stalled streams and 5xx/429 answers
// are retried with exponential back-off and jitter. When a stream breaks
// after some text was streamed, that text is never sent to the sink again.
// By default the request is replayed from the start and the pieces that
// reproduce the streamed text are held back (greedy decoding makes the
// replay identical, so the result equals an unbroken run). Should a replay
// diverge, or with Options.Continue, the request goes on as a raw
// continuation whose prompt is the original prompt plus everything streamed
// so far, with the remaining budget; re-tokenising the streamed text can
// change token boundaries and so the greedy path.
package ollama

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/envconfig"

	"tally/backends"
)

// Options configure a Backend. The zero value is ready to use.
type Options struct {
	// Host is the server address ("127.0.0.1:11434" or a URL); empty means
	// OLLAMA_HOST, defaulting to 127.0.0.1:11434 as Ollama's own CLI does.
	Host string
	// Chat sends each prompt as a user message through the model's chat
	// template (for instruct models) instead of raw completion.
	Chat bool
	// Split, when set, splits a prompt into a system message and the
	// user's message in chat mode (a benchmark's own system prompt, see
	// chattemplate.Systems).
	Split func(prompt string) (system, user string)
	// Parallel is the number of requests in flight (Slots). Default:
	// OLLAMA_NUM_PARALLEL when set, else 4.
	Parallel int
	// NumCtx fixes num_ctx for every request; 0 sizes it from the requests.
	NumCtx int
	// MaxContext caps ContextLength below the model's own window; 0: none.
	MaxContext int
	// BytesPerToken is the prompt-length estimate used to size num_ctx and
	// to reject prompts that cannot fit (default 2: conservative for real
	// tokenizers, which average 3–4 bytes per token on English).
	BytesPerToken float64
	// Seed is the sampling seed (default 42); decoding is greedy anyway.
	Seed int
	// MaxTries bounds the attempts for one request without progress
	// (default 6).
	MaxTries int
	// BaseDelay is the first retry delay (default 1s); each retry doubles
	// it up to MaxDelay (default 16s), with jitter of up to half the delay.
	BaseDelay, MaxDelay time.Duration
	// Continue resumes a broken stream as a continuation (prompt + text
	// streamed so far, remaining budget) instead of the default replay
	// (the same request again, holding back the pieces that reproduce the
	// streamed text). Replay costs the streamed tokens again but gives
	// exactly the uninterrupted text; a continuation re-tokenises the
	// streamed text, which can change the greedy path.
	Continue bool
	// StallTimeout fails an attempt when the stream is silent this long
	// (default 5m: a long prompt's prefill sends nothing until it is done).
	StallTimeout time.Duration
	// KeepAlive asks the server to keep the model loaded this long after a
	// request (default: the server's setting).
	KeepAlive time.Duration
	// Transport is the HTTP transport (default http.DefaultTransport); tests
	// use it to inject faults.
	Transport http.RoundTripper
}

// Backend is a model served by Ollama; it implements backends.Backend.
type Backend struct {
	client  *api.Client
	host    string
	model   string
	opts    Options
	ctxLen  int
	details api.ModelDetails

	mu     sync.Mutex
	numCtx int // num_ctx sent with requests; grows, never shrinks
}

var _ backends.Backend = (*Backend)(nil)

// Open connects to the server and checks that model (the name after
// "ollama:") is there, reading its context length from /api/show. It does
// no generation work.
func Open(ctx context.Context, model string, opts Options) (*Backend, error) {
	if model == "" {
		return nil, errors.New("ollama: empty model name")
	}
	opts, err := withDefaults(opts)
	if err != nil {
		return nil, err
	}
	base, err := hostURL(opts.Host)
	if err != nil {
		return nil, err
	}
	b := &Backend{
		client: api.NewClient(base, &http.Client{Transport: &statusTransport{base: opts.Transport}}),
		host:   base.String(),
		model:  model,
		opts:   opts,
	}
	show, err := b.client.Show(ctx, &api.ShowRequest{Model: model})
	if err != nil {
		var he *HTTPError
		if errors.As(err, &he) && he.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("ollama: model %q is not on the server at %s (ollama pull or create it first)", model, b.host)
		}
		return nil, fmt.Errorf("ollama: show model %q at %s: %w", model, b.host, err)
	}
	b.details = show.Details
	b.ctxLen = contextLength(show.ModelInfo)
	if b.ctxLen <= 0 {
		b.ctxLen = 2048 // Ollama's own default num_ctx
	}
	if opts.MaxContext > 0 && opts.MaxContext < b.ctxLen {
		b.ctxLen = opts.MaxContext
	}
	if opts.NumCtx > 0 {
		b.numCtx = min(opts.NumCtx, b.ctxLen)
	}
	return b, nil
}

func withDefaults(o Options) (Options, error) {
	if o.Parallel <= 0 {
		o.Parallel = 4
		if s := os.Getenv("OLLAMA_NUM_PARALLEL"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				return o, fmt.Errorf("ollama: OLLAMA_NUM_PARALLEL=%q is not a positive number", s)
			}
			o.Parallel = n
		}
	}
	if o.BytesPerToken <= 0 {
		o.BytesPerToken = 2
	}
	if o.Seed == 0 {
		o.Seed = 42
	}
	if o.MaxTries <= 0 {
		o.MaxTries = 6
	}
	if o.BaseDelay <= 0 {
		o.BaseDelay = time.Second
	}
	if o.MaxDelay <= 0 {
		o.MaxDelay = 16 * time.Second
	}
	if o.MaxDelay < o.BaseDelay {
		o.MaxDelay = o.BaseDelay
	}
	if o.StallTimeout <= 0 {
		o.StallTimeout = 5 * time.Minute
	}
	if o.Transport == nil {
		o.Transport = http.DefaultTransport
	}
	return o, nil
}

// hostURL resolves the server address: s, else OLLAMA_HOST, with Ollama's
// own defaults.
func hostURL(s string) (*url.URL, error) {
	if s == "" {
		return envconfig.Host(), nil
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("ollama: bad host %q", s)
	}
	return u, nil
}

// contextLength finds "<arch>.context_length" in /api/show's model_info.
func contextLength(info map[string]any) int {
	for k, v := range info {
		if !strings.HasSuffix(k, ".context_length") {
			continue
		}
		switch n := v.(type) {
		case float64:
			return int(n)
		case int:
			return n
		}
	}
	return 0
}

// Name returns "ollama".
func (b *Backend) Name() string { return "ollama" }

// Fingerprint is "ollama:" + the server's digest of the model (from
// /api/tags) + quantisation level + family, asked of the server on each
// call, so a re-created or re-pulled model never reuses stale generations;
// chat mode appends ":chat", so that chat and raw generations of one model
// (same prompt text, different model input) never answer for each other.
func (b *Backend) Fingerprint(ctx context.Context) (string, error) {
	list, err := b.client.List(ctx)
	if err != nil {
		return "", fmt.Errorf("ollama: list models for the fingerprint of %q: %w", b.model, err)
	}
	for _, m := range list.Models {
		if sameModel(m.Name, b.model) || sameModel(m.Model, b.model) {
			fp := fmt.Sprintf("ollama:%s:%s:%s", m.Digest, m.Details.QuantizationLevel, m.Details.Family)
			if b.opts.Chat {
				fp += ":chat"
			}
			return fp, nil
		}
	}
	return "", fmt.Errorf("ollama: model %q is no longer on the server at %s", b.model, b.host)
}

// sameModel compares model names, an omitted tag meaning ":latest".
func sameModel(a, b string) bool {
	norm := func(s string) string {
		if i := strings.LastIndex(s, ":"); i < 0 || strings.Contains(s[i:], "/") {
			return s + ":latest"
		}
		return s
	}
	return a != "" && norm(a) == norm(b)
}

// Tokenizer returns nil: Ollama tokenises server-side.
func (b *Backend) Tokenizer() backends.Tokenizer { return nil }

// ContextLength is the model's context window (capped by
// Options.MaxContext).
func (b *Backend) ContextLength() int { return b.ctxLen }

// Slots is the number of requests kept in flight (Options.Parallel).
func (b *Backend) Slots() int { return b.opts.Parallel }

// Close releases idle connections; the server keeps running.
func (b *Backend) Close() error {
	if t, ok := b.opts.Transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
	return nil
}

// Details returns what /api/show reported about the model (family,
// parameter size, quantisation).
func (b *Backend) Details() api.ModelDetails { return b.details }
