// Package openai is tally's backend for any server that speaks the OpenAI
// HTTP API: vLLM, SGLang, llama.cpp's server, TGI, Ollama's /v1 endpoints,
// or a hosted judge.
//
// It uses plain net/http rather than the official github.com/openai/openai-go
// client. The client can send these requests, but tally needs, per attempt,
// what it hides or owns: the raw status code and the Retry-After header
// (the client retries on its own schedule, which would double tally's
// back-off and replay bookkeeping), the exact point where a stream broke,
// the server-specific fields of /v1/models that identify the weights
// (vLLM's "root" and "max_model_len", llama.cpp's "meta"), and the
// servers' differing context-overflow errors. Three JSON shapes and an
// SSE line reader are less code than working around the client.
//
// Base models go through /v1/completions with the raw prompt (continuing
// a stored generation sends the prompt followed by the stored text; note
// that Ollama's /v1/completions, unlike vLLM's, applies the model's
// template, and truncates an overlong prompt silently: use ollama:NAME
// for raw prompts and num_ctx control on Ollama);
// Options.Chat sends the prompt as one user message (after Options.System,
// if set) through /v1/chat/completions, continuing after the stored text
// as an assistant message. Decoding is greedy: temperature 0 and a fixed
// seed. At most Options.MaxStops of the shared stop sequences go to the
// server as "stop" (servers cap the list, OpenAI at 4); package generate
// stays the authority on truncation. Token counts come from the server's
// usage (requested with stream_options.include_usage).
//
// Faults: connection errors, stalled streams, 429 and 5xx answers are
// retried with exponential back-off and jitter (or after the server's
// Retry-After, when longer). A stream that breaks after some text was
// streamed is replayed from the start with the pieces that reproduce the
// streamed text held back, as the ollama backend does; should the replay
// diverge, the request continues after the streamed text. A server that
// refuses a budget past the context's room after a prompt that fits is
// asked once more with the budget capped to that room, and a generation
// that spends it ends with finish "context-full" (refusal.go); a prompt
// that does not fit the context ends the request with finish "context";
// other 4xx answers end it with "error". No failure ends the run.
//
// The API key is read from OPENAI_API_KEY (or Options.APIKey) and only ever
// sent in the Authorization header: it is not stored, logged or part of any
// error message.
package openai

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"tally/backends"
	"tally/internal/redact"
)

// DefaultBaseURL is the base URL used when neither Options.BaseURL nor
// OPENAI_BASE_URL is set: vLLM's and SGLang's default local address.
const DefaultBaseURL = "http://127.0.0.1:8000/v1"

// Options configure a Backend. The zero value is ready to use.
type Options struct {
	// BaseURL is the API root including its /v1 ("http://host:8000/v1");
	// empty means OPENAI_BASE_URL, else DefaultBaseURL.
	BaseURL string
	// APIKey is the bearer token; empty means OPENAI_API_KEY (none sent
	// when both are empty).
	APIKey string
	// Chat sends prompts as chat messages through the server's chat
	// template (/v1/chat/completions) instead of raw completions.
	Chat bool
	// System is the system message sent before the prompt in chat mode.
	System string
	// Split, when set, splits a prompt into a system message and the
	// user's message in chat mode (a benchmark's own system prompt, see
	// chattemplate.Systems); an empty system falls back to System.
	Split func(prompt string) (system, user string)
	// Revision is a label pinned into the fingerprint, so that a server
	// restarted with other weights under the same name does not answer
	// from old records.
	Revision string
	// Parallel is the number of requests in flight (Slots); default 4.
	Parallel int
	// ContextLength is the model's context window when the server does not
	// report one (vLLM's max_model_len, llama.cpp's n_ctx_train); 0:
	// unknown, left to the server to refuse.
	ContextLength int
	// Seed is the sampling seed (default 42); decoding is greedy anyway.
	Seed int
	// MaxStops is the number of stop sequences sent to the server
	// (default 4, OpenAI's cap); the rest are left to tally.
	MaxStops int
	// MaxTries bounds the attempts for one request without progress
	// (default 6).
	MaxTries int
	// BaseDelay is the first retry delay (default 1s); each retry doubles
	// it up to MaxDelay (default 16s), with jitter of up to half the
	// delay. A longer Retry-After from the server wins.
	BaseDelay, MaxDelay time.Duration
	// StallTimeout fails an attempt when the stream is silent this long
	// (default 5m: a long prompt's prefill sends nothing until it is done).
	StallTimeout time.Duration
	// Transport is the HTTP transport (default http.DefaultTransport).
	Transport http.RoundTripper
}

// Backend is a model on an OpenAI-compatible server; it implements
// backends.Backend.
type Backend struct {
	http *http.Client
	base string // API root without a trailing slash, nor its query
	// query is the base URL's query (a server may take its key there),
	// sent with every request.
	query string
	// ident is the base URL as the fingerprint and messages name it: its
	// credentials dropped (redact.DropURLSecrets), the rest as it was.
	ident  string
	key    string
	model  string
	opts   Options
	ctxLen int
}

var _ backends.Backend = (*Backend)(nil)

// Open checks that the server at the base URL serves model (the name after
// "openai:") and reads its context length where /v1/models reports one. It
// does no generation work.
func Open(ctx context.Context, model string, opts Options) (*Backend, error) {
	if model == "" {
		return nil, errors.New("openai: empty model name")
	}
	opts = withDefaults(opts)
	base, query, ident, err := baseURL(opts.BaseURL)
	if err != nil {
		return nil, err
	}
	key := opts.APIKey
	if key == "" {
		key = os.Getenv("OPENAI_API_KEY")
	}
	b := &Backend{http: &http.Client{Transport: opts.Transport}, base: base, query: query, ident: ident, key: key, model: model, opts: opts}
	m, err := b.find(ctx)
	if err != nil {
		return nil, err
	}
	b.ctxLen = m.contextLength()
	if b.ctxLen <= 0 {
		b.ctxLen = opts.ContextLength
	}
	return b, nil
}

func withDefaults(o Options) Options {
	if o.Parallel <= 0 {
		o.Parallel = 4
	}
	if o.Seed == 0 {
		o.Seed = 42
	}
	if o.MaxStops <= 0 {
		o.MaxStops = 4
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
	o.MaxDelay = max(o.MaxDelay, o.BaseDelay)
	if o.StallTimeout <= 0 {
		o.StallTimeout = 5 * time.Minute
	}
	if o.Transport == nil {
		o.Transport = http.DefaultTransport
	}
	return o
}

// baseURL resolves the API root: s, else OPENAI_BASE_URL, else
// DefaultBaseURL, without its trailing slash, its query (returned apart,
// sent with every request) or its user info (which tally does not send);
// ident is the URL as a fingerprint and messages name it: as before
// (query included), with any credential in its query dropped.
func baseURL(s string) (base, query, ident string, err error) {
	if s == "" {
		s = os.Getenv("OPENAI_BASE_URL")
	}
	if s == "" {
		s = DefaultBaseURL
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", "", "", fmt.Errorf("openai: bad base URL %q (want http[s]://host[:port]/v1)", redact.DropURLSecrets(s))
	}
	u.User = nil // credentials in a URL would end up in the fingerprint
	ident = redact.DropURLSecrets(strings.TrimRight(u.String(), "/"))
	query = u.RawQuery
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	return strings.TrimRight(u.String(), "/"), query, ident, nil
}

// cleanURLError drops from the URL an HTTP client's error names (a
// url.Error) the credentials its query may carry (the base URL's key).
func cleanURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = redact.DropURLSecrets(ue.URL)
	}
	return err
}

// url is the URL of an endpoint (a path under the API root), with the
// base URL's query.
func (b *Backend) url(path string) string {
	if b.query == "" {
		return b.base + path
	}
	return b.base + path + "?" + b.query
}

// modelInfo is one entry of /v1/models; Extra keeps the server-specific
// fields (vLLM's root and max_model_len, llama.cpp's meta).
type modelInfo struct {
	ID    string
	Extra map[string]json.RawMessage
}

// contextLength reads the context window a server reports, or 0.
func (m modelInfo) contextLength() int {
	var n int
	if raw, ok := m.Extra["max_model_len"]; ok && json.Unmarshal(raw, &n) == nil && n > 0 {
		return n // vLLM, SGLang
	}
	var meta struct {
		NCtxTrain int `json:"n_ctx_train"`
	}
	if raw, ok := m.Extra["meta"]; ok && json.Unmarshal(raw, &meta) == nil {
		return meta.NCtxTrain // llama.cpp server
	}
	return 0
}

// revision digests the fields of a /v1/models entry that identify the
// weights: everything but id, object and created (vLLM sets "created" to
// the time of the request, so it would change on every call).
func (m modelInfo) revision() string {
	keys := make([]string, 0, len(m.Extra))
	for k := range m.Extra {
		switch k {
		case "id", "object", "created":
		default:
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		var v any
		raw := m.Extra[k]
		if json.Unmarshal(raw, &v) == nil {
			raw, _ = json.Marshal(v) // canonical: sorted keys, no spaces
		}
		fmt.Fprintf(h, "%s=%s\n", k, raw)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// find lists /v1/models and returns the entry for b.model.
func (b *Backend) find(ctx context.Context) (modelInfo, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.url("/models"), nil)
	if err != nil {
		return modelInfo{}, fmt.Errorf("openai: list models at %s: %w", b.ident, err)
	}
	b.authorize(req)
	resp, err := b.http.Do(req)
	if err != nil {
		return modelInfo{}, fmt.Errorf("openai: list models at %s: %w", b.ident, cleanURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return modelInfo{}, fmt.Errorf("openai: list models at %s: %w", b.ident, b.readError(resp))
	}
	var list struct {
		Data []map[string]json.RawMessage `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return modelInfo{}, fmt.Errorf("openai: list models at %s: %w", b.ident, err)
	}
	var ids []string
	var tagged *modelInfo
	for _, d := range list.Data {
		var id string
		json.Unmarshal(d["id"], &id)
		if id == b.model {
			return modelInfo{ID: id, Extra: d}, nil
		}
		if id == b.model+":latest" {
			// Ollama lists NAME:latest and serves it as NAME too.
			tagged = &modelInfo{ID: id, Extra: d}
		}
		ids = append(ids, id)
	}
	if tagged != nil {
		return *tagged, nil
	}
	return modelInfo{}, fmt.Errorf("openai: model %q is not served at %s (served: %s)", b.model, b.ident, strings.Join(ids, ", "))
}

// authorize adds the bearer token, when there is one.
func (b *Backend) authorize(req *http.Request) {
	if b.key != "" {
		req.Header.Set("Authorization", "Bearer "+b.key)
	}
}

// Name returns "openai".
func (b *Backend) Name() string { return "openai" }

// Fingerprint is "openai:" + base URL (without a credential its query
// may carry: a key there is no part of the model) + served model id + the revision the
// server reports in /v1/models (a digest of its identifying fields) + the
// pinned Options.Revision label, then "chat" in chat mode: chat and raw
// completions of one model never answer for each other. It is asked of the
// server on each call.
func (b *Backend) Fingerprint(ctx context.Context) (string, error) {
	m, err := b.find(ctx)
	if err != nil {
		return "", fmt.Errorf("openai: fingerprint: %w", err)
	}
	fp := fmt.Sprintf("openai:%s|%s|%s|%s", b.ident, m.ID, m.revision(), b.opts.Revision)
	if b.opts.Chat {
		fp += "|chat"
		if b.opts.System != "" {
			sum := sha256.Sum256([]byte(b.opts.System))
			fp += ":" + hex.EncodeToString(sum[:8])
		}
	}
	return fp, nil
}

// Tokenizer returns nil: the server tokenises.
func (b *Backend) Tokenizer() backends.Tokenizer { return nil }

// ContextLength is the context window the server reports, else
// Options.ContextLength (0: unknown).
func (b *Backend) ContextLength() int { return b.ctxLen }

// Slots is the number of requests kept in flight (Options.Parallel).
func (b *Backend) Slots() int { return b.opts.Parallel }

// Close releases idle connections; the server keeps running.
func (b *Backend) Close() error {
	b.http.CloseIdleConnections()
	return nil
}

// HTTPError is a non-2xx answer from the server.
type HTTPError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Code is the error's "code" (or "type") field, when the server sends one.
	Code string
	// Message is the error's message, or the body.
	Message string
	// RetryAfter is the delay the server asked for (429, 503), or 0.
	RetryAfter time.Duration
	// NPromptTokens and NCtx are the prompt's tokens and the context
	// length that llama.cpp's server sends beside the message of a context
	// refusal (0 otherwise).
	NPromptTokens, NCtx int
}

// Error formats the status code and the server's message.
func (e *HTTPError) Error() string {
	return fmt.Sprintf("HTTP %d: %s", e.StatusCode, e.Message)
}

// readError turns an error answer into *HTTPError. OpenAI, vLLM and
// llama.cpp send {"error": {"message", "type", "code"}}; Ollama and TGI
// send {"error": "message"}. A server may echo the credentials it was
// sent: the message is redacted (the backend's key, Authorization values).
func (b *Backend) readError(resp *http.Response) *HTTPError {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := parseError(resp.StatusCode, body, strings.TrimSpace(string(body)))
	e.Message = b.redact(e.Message)
	return e
}

// redact removes the backend's API key, and any credential redact
// recognises, from text the server sent.
func (b *Backend) redact(s string) string { return redact.String(s, b.key) }

// parseError reads an error answer's body in either shape (see
// readError): its code and message (fallback when it names none), and the
// prompt's tokens and the context length that llama.cpp's server puts
// beside the message of an exceed_context_size_error
// (tools/server/server-task.cpp, server_task_result_error::to_json). The
// message is as the server sent it: not redacted.
func parseError(status int, body []byte, fallback string) *HTTPError {
	e := &HTTPError{StatusCode: status, Message: fallback}
	var env struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &env) != nil {
		return e
	}
	var s string
	if json.Unmarshal(env.Error, &s) == nil && s != "" {
		e.Message = s
		return e
	}
	var obj struct {
		Message       string `json:"message"`
		Type          string `json:"type"`
		Code          any    `json:"code"`
		NPromptTokens any    `json:"n_prompt_tokens"`
		NCtx          any    `json:"n_ctx"`
	}
	if json.Unmarshal(env.Error, &obj) == nil {
		e.NPromptTokens, e.NCtx = count(obj.NPromptTokens), count(obj.NCtx)
		if obj.Message != "" {
			e.Code, e.Message = obj.Type, obj.Message
			if c, ok := obj.Code.(string); ok && c != "" {
				e.Code = c
			}
			return e
		}
	}
	if env.Message != "" {
		e.Message = env.Message
	}
	return e
}

// count is a JSON count decoded into an any: a whole number, else 0.
func count(v any) int {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || f < 0 || f > 1<<40 {
		return 0
	}
	return int(f)
}

// isContextOverflow tells whether an error from the server says the prompt
// (plus max_tokens) does not fit the context: OpenAI's and vLLM's
// "context_length_exceeded" / "maximum context length" / "maximum model
// length" / "context length is only", SGLang's "longer than the model's
// context length", llama.cpp's "exceed_context_size_error" / "exceeds the
// available context size", TGI's "must have less than N tokens".
func isContextOverflow(code, msg string) bool {
	if code == "context_length_exceeded" || code == "exceed_context_size_error" {
		return true
	}
	m := strings.ToLower(msg)
	for _, s := range []string{"maximum context length", "context length exceeded", "exceeds the available context size",
		"context window", "input validation error: `inputs` tokens + `max_new_tokens`", "prompt is too long",
		"than the maximum model length", "than the model's context length", "context length is only"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}
