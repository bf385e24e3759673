package openai

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"tally/backends"
)

// fastOpts are options with millisecond back-off for tests.
func fastOpts(f *fakeServer) Options {
	return Options{BaseURL: f.url(), BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond}
}

// collect runs reqs and returns the streamed texts and Done events.
func collect(t *testing.T, b *Backend, reqs []backends.Request, stopAt map[int]int) ([]string, []backends.Event) {
	t.Helper()
	var mu sync.Mutex
	texts := make([]string, len(reqs))
	done := make([]backends.Event, len(reqs))
	pieces := make([]int, len(reqs))
	err := b.Generate(context.Background(), reqs, func(ev backends.Event) bool {
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
		if n, ok := stopAt[ev.Index]; ok && pieces[ev.Index] >= n {
			return false
		}
		return true
	})
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	for i, ev := range done {
		if !ev.Done {
			t.Errorf("request %d: no Done event", i)
		}
	}
	return texts, done
}

func want(prompt string, n int, stops []string) string {
	p, _ := fakeGenerate(prompt, n, stops)
	return strings.Join(p, "")
}

func TestGenerateFaults(t *testing.T) {
	const budget = 20
	prompts := []string{"alpha", "bravo charlie", "delta"}
	tests := []struct {
		name      string
		opts      func(*Options)
		setup     func(*fakeServer)
		stops     []string
		stopAt    map[int]int
		check     func(t *testing.T, f *fakeServer, texts []string, done []backends.Event)
		wantFinal string // expected finish of every request
	}{
		{name: "streaming with usage", wantFinal: backends.FinishLength,
			check: func(t *testing.T, f *fakeServer, texts []string, done []backends.Event) {
				for i, r := range f.requests() {
					if r.Path != "/v1/completions" || !r.Stream || !r.StreamOptions.IncludeUsage || r.Temperature == nil || *r.Temperature != 0 ||
						r.Seed == nil || *r.Seed != 42 || r.MaxTokens != budget || r.Model != "tiny" {
						t.Errorf("request %d: %+v", i, r)
					}
				}
				for i, ev := range done {
					if ev.GenTokens != budget || ev.PromptTokens != len(prompts[i]) {
						t.Errorf("request %d: tokens %d+%d", i, ev.PromptTokens, ev.GenTokens)
					}
				}
			}},
		{name: "no usage: pieces counted", wantFinal: backends.FinishLength,
			setup: func(f *fakeServer) { f.noUsage = true },
			check: func(t *testing.T, _ *fakeServer, _ []string, done []backends.Event) {
				for i, ev := range done {
					if ev.GenTokens != budget || ev.PromptTokens != 0 {
						t.Errorf("request %d: tokens %d+%d", i, ev.PromptTokens, ev.GenTokens)
					}
				}
			}},
		{name: "429 with Retry-After", wantFinal: backends.FinishLength,
			setup: func(f *fakeServer) {
				f.fault = func(n int, w http.ResponseWriter) (bool, int) {
					if n < 2 {
						w.Header().Set("Retry-After", "0.01")
						http.Error(w, `{"error":{"message":"rate limited","type":"rate_limit_error"}}`, http.StatusTooManyRequests)
						return true, 0
					}
					return false, 0
				}
			},
			check: func(t *testing.T, f *fakeServer, _ []string, _ []backends.Event) {
				if n := len(f.requests()); n != len(prompts)+2 {
					t.Errorf("%d requests, want %d", n, len(prompts)+2)
				}
			}},
		{name: "500 injection", wantFinal: backends.FinishLength,
			setup: func(f *fakeServer) {
				f.fault = func(n int, w http.ResponseWriter) (bool, int) {
					if n < 3 || n%2 == 0 {
						http.Error(w, `{"error":"injected"}`, http.StatusInternalServerError)
						return true, 0
					}
					return false, 0
				}
			}},
		{name: "broken streams are replayed", wantFinal: backends.FinishLength,
			setup: func(f *fakeServer) {
				f.fault = func(n int, _ http.ResponseWriter) (bool, int) {
					if n < 4 {
						return false, 3 + n
					}
					return false, 0
				}
			},
			check: func(t *testing.T, f *fakeServer, _ []string, _ []backends.Event) {
				for _, r := range f.requests() {
					for _, p := range prompts {
						if strings.HasPrefix(r.Prompt, p) && r.Prompt != p {
							t.Errorf("replay sent a continuation %q", r.Prompt)
						}
					}
				}
			}},
		{name: "a permanent 400 is an error", wantFinal: backends.FinishError,
			setup: func(f *fakeServer) {
				f.fault = func(_ int, w http.ResponseWriter) (bool, int) {
					http.Error(w, `{"error":{"message":"bad field","type":"invalid_request_error"}}`, http.StatusBadRequest)
					return true, 0
				}
			},
			check: func(t *testing.T, f *fakeServer, _ []string, done []backends.Event) {
				if n := len(f.requests()); n != len(prompts) {
					t.Errorf("%d requests for a 400, want %d (no retries)", n, len(prompts))
				}
				if !strings.Contains(done[0].Err.Error(), "bad field") {
					t.Errorf("error %v", done[0].Err)
				}
			}},
		{name: "5xx forever gives up", wantFinal: backends.FinishError,
			opts: func(o *Options) { o.MaxTries = 3 },
			setup: func(f *fakeServer) {
				f.fault = func(_ int, w http.ResponseWriter) (bool, int) {
					http.Error(w, "overloaded", http.StatusServiceUnavailable)
					return true, 0
				}
			}},
		{name: "context overflow", wantFinal: backends.FinishContext,
			setup: func(f *fakeServer) { f.ctxLen = 4 }, // every prompt is longer
			check: func(t *testing.T, _ *fakeServer, _ []string, done []backends.Event) {
				if !errors.Is(done[0].Err, backends.ErrContextOverflow) {
					t.Errorf("error %v", done[0].Err)
				}
			}},
		{name: "stop hint capped at 4", stops: []string{"zz", "yy", "ww", "vv", "uu", "tt"}, wantFinal: backends.FinishLength,
			check: func(t *testing.T, f *fakeServer, _ []string, _ []backends.Event) {
				for _, r := range f.requests() {
					if strings.Join(r.Stop, ",") != "zz,yy,ww,vv" {
						t.Errorf("stop sent %q", r.Stop)
					}
				}
			}},
		{name: "stop hint ends early", stops: []string{"."}, wantFinal: backends.FinishEOS},
		{name: "sink stop", stopAt: map[int]int{0: 2, 1: 2, 2: 2}, wantFinal: backends.FinishStop,
			check: func(t *testing.T, _ *fakeServer, texts []string, done []backends.Event) {
				for i := range texts {
					if len([]rune(texts[i])) != 2 || done[i].GenTokens != 2 {
						t.Errorf("request %d: %q, %d tokens", i, texts[i], done[i].GenTokens)
					}
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t)
			o := fastOpts(f)
			if tc.opts != nil {
				tc.opts(&o)
			}
			b, err := Open(context.Background(), "tiny", o)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if tc.setup != nil {
				tc.setup(f)
			}
			reqs := make([]backends.Request, len(prompts))
			for i, p := range prompts {
				reqs[i] = backends.Request{Index: i, Prompt: p, MaxTokens: budget, StopHint: tc.stops}
			}
			texts, done := collect(t, b, reqs, tc.stopAt)
			for i, ev := range done {
				if ev.Finish != tc.wantFinal {
					t.Errorf("request %d: finish %q (%v), want %q", i, ev.Finish, ev.Err, tc.wantFinal)
				}
				if tc.wantFinal == backends.FinishLength || tc.wantFinal == backends.FinishEOS {
					if w := want(prompts[i], budget, tc.stops); texts[i] != w {
						t.Errorf("request %d: %q, want %q", i, texts[i], w)
					}
				}
			}
			if tc.check != nil {
				tc.check(t, f, texts, done)
			}
		})
	}
}

func TestChatAndContinuation(t *testing.T) {
	f := newFakeServer(t)
	o := fastOpts(f)
	o.Chat, o.System = true, "You are terse."
	b, err := Open(context.Background(), "tiny", o)
	if err != nil {
		t.Fatal(err)
	}
	texts, done := collect(t, b, []backends.Request{
		{Index: 0, Prompt: "hello", MaxTokens: 8},
		{Index: 1, Prompt: "hello", PrefixText: "ab", MaxTokens: 8},
	}, nil)
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	for _, r := range reqs {
		if r.Path != "/v1/chat/completions" || len(r.Messages) < 2 || r.Messages[0] != (message{"system", "You are terse."}) ||
			r.Messages[1] != (message{"user", "hello"}) {
			t.Errorf("request %+v", r)
		}
	}
	cont := reqs[1]
	if reqs[0].ContinueFinalMessage {
		cont = reqs[0]
	}
	if !cont.ContinueFinalMessage || cont.Messages[2] != (message{"assistant", "ab"}) {
		t.Errorf("continuation request %+v", cont)
	}
	if done[0].Finish != backends.FinishLength || texts[0] != want("<system>You are terse.<user>hello<assistant>", 8, nil) {
		t.Errorf("chat: %q %+v", texts[0], done[0])
	}
	if texts[1] != want("<system>You are terse.<user>hello<assistant>ab", 8, nil) {
		t.Errorf("continued chat: %q", texts[1])
	}

	// A benchmark's own system prompt, split off the flattened prompt,
	// replaces the default one.
	o.Split = func(p string) (string, string) {
		if s, u, ok := strings.Cut(p, "|"); ok {
			return s, u
		}
		return "", p
	}
	sb, err := Open(context.Background(), "tiny", o)
	if err != nil {
		t.Fatal(err)
	}
	texts, _ = collect(t, sb, []backends.Request{{Index: 0, Prompt: "Grade it.|hello", MaxTokens: 8}, {Index: 1, Prompt: "plain", MaxTokens: 8}}, nil)
	if texts[0] != want("<system>Grade it.<user>hello<assistant>", 8, nil) || texts[1] != want("<system>You are terse.<user>plain<assistant>", 8, nil) {
		t.Errorf("split system prompts: %q", texts)
	}
}

func TestCompletionContinuation(t *testing.T) {
	f := newFakeServer(t)
	b, err := Open(context.Background(), "tiny", fastOpts(f))
	if err != nil {
		t.Fatal(err)
	}
	texts, _ := collect(t, b, []backends.Request{{Index: 0, Prompt: "q: ", PrefixText: "ab", MaxTokens: 5}}, nil)
	if r := f.requests()[0]; r.Prompt != "q: ab" {
		t.Errorf("prompt %q, want prompt + stored text", r.Prompt)
	}
	if texts[0] != want("q: ab", 5, nil) {
		t.Errorf("text %q", texts[0])
	}
}

func TestOpenAndFingerprint(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-secret-test-key")
	f := newFakeServer(t)
	ctx := context.Background()
	b, err := Open(ctx, "tiny", fastOpts(f))
	if err != nil {
		t.Fatal(err)
	}
	if b.ContextLength() != 4096 || b.Slots() != 4 || b.Tokenizer() != nil || b.Name() != "openai" {
		t.Errorf("context %d, slots %d", b.ContextLength(), b.Slots())
	}
	fp, err := b.Fingerprint(ctx)
	if err != nil || !strings.HasPrefix(fp, "openai:"+f.url()+"|tiny|") {
		t.Fatalf("fingerprint %q, %v", fp, err)
	}
	collect(t, b, []backends.Request{{Index: 0, Prompt: "x", MaxTokens: 2}}, nil)
	if got := f.auth[0]; got != "Bearer sk-secret-test-key" {
		t.Errorf("Authorization %q", got)
	}
	if strings.Contains(fp, "secret") {
		t.Errorf("key in the fingerprint %q", fp)
	}

	// "created" changes on every /v1/models call with vLLM: not part of
	// the fingerprint; the weights' root is.
	f.mu.Lock()
	f.models[0]["created"] = 99
	f.mu.Unlock()
	if fp2, _ := b.Fingerprint(ctx); fp2 != fp {
		t.Errorf("fingerprint changed with created: %q → %q", fp, fp2)
	}
	f.mu.Lock()
	f.models[0]["root"] = "/models/tiny-v2"
	f.mu.Unlock()
	if fp3, _ := b.Fingerprint(ctx); fp3 == fp {
		t.Errorf("fingerprint unchanged with other weights: %q", fp3)
	}

	others := map[string]Options{"revision": {Revision: "r1"}, "chat": {Chat: true}, "chat+system": {Chat: true, System: "s"}}
	seen := map[string]string{fp: "plain"}
	for name, o := range others {
		o.BaseURL = f.url()
		ob, err := Open(ctx, "tiny", o)
		if err != nil {
			t.Fatal(err)
		}
		ofp, err := ob.Fingerprint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if prev, ok := seen[ofp]; ok {
			t.Errorf("%s and %s share fingerprint %q", name, prev, ofp)
		}
		seen[ofp] = name
	}

	// Models without server-reported weights or context.
	ob, err := Open(ctx, "other", Options{BaseURL: f.url(), ContextLength: 2048})
	if err != nil || ob.ContextLength() != 2048 {
		t.Errorf("other: %v, context %d", err, ob.ContextLength())
	}
	// Ollama lists NAME:latest and serves NAME.
	f.mu.Lock()
	f.models = append(f.models, map[string]any{"id": "llama:latest", "object": "model"})
	f.mu.Unlock()
	if lb, err := Open(ctx, "llama", Options{BaseURL: f.url()}); err != nil || lb.model != "llama" {
		t.Errorf("llama → llama:latest: %v", err)
	}
	_, err = Open(ctx, "missing", Options{BaseURL: f.url()})
	if err == nil || !strings.Contains(err.Error(), `"missing" is not served`) || !strings.Contains(err.Error(), "tiny") {
		t.Errorf("missing model: %v", err)
	}
	if _, err := Open(ctx, "tiny", Options{BaseURL: "ftp://x"}); err == nil {
		t.Error("bad base URL accepted")
	}
}

func TestBaseURLFromEnv(t *testing.T) {
	f := newFakeServer(t)
	t.Setenv("OPENAI_BASE_URL", f.url()+"/")
	b, err := Open(context.Background(), "tiny", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.base != f.url() {
		t.Errorf("base %q", b.base)
	}
}

func TestConcurrency(t *testing.T) {
	f := newFakeServer(t)
	gate := make(chan struct{})
	var once sync.Once
	f.fault = func(n int, _ http.ResponseWriter) (bool, int) {
		if n == 2 {
			once.Do(func() { close(gate) })
		}
		<-gate
		return false, 0
	}
	o := fastOpts(f)
	o.Parallel = 3
	b, err := Open(context.Background(), "tiny", o)
	if err != nil {
		t.Fatal(err)
	}
	reqs := make([]backends.Request, 9)
	for i := range reqs {
		reqs[i] = backends.Request{Index: i, Prompt: strings.Repeat("p", i+1), MaxTokens: 4}
	}
	collect(t, b, reqs, nil)
	if f.maxIn != 3 {
		t.Errorf("at most %d in flight, want 3", f.maxIn)
	}
}

func TestIsContextOverflow(t *testing.T) {
	tests := []struct {
		code, msg string
		want      bool
	}{
		{"context_length_exceeded", "", true},
		{"exceed_context_size_error", "", true},
		{"", "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens", true},
		{"", "the request exceeds the available context size, try increasing it", true},
		{"invalid_request_error", "bad field", false},
		{"", "rate limited", false},
	}
	for _, tc := range tests {
		if got := isContextOverflow(tc.code, tc.msg); got != tc.want {
			t.Errorf("isContextOverflow(%q, %q) = %v", tc.code, tc.msg, got)
		}
	}
}

func FuzzParseError(f *testing.F) {
	for _, s := range []string{`{"error":"x"}`, `{"error":{"message":"m","type":"t","code":"c"}}`, `{"message":"m"}`, `nope`, `{"error":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		parseError(400, body, "fallback")
	})
}

// FuzzLine feeds arbitrary SSE lines to the stream parser: it must never
// panic, and text it accepts must come from a choice (field names match
// case-insensitively, as encoding/json does).
func FuzzLine(f *testing.F) {
	for _, s := range []string{
		`data: {"choices":[{"text":"a","finish_reason":null}]}`,
		`data: {"choices":[{"delta":{"content":"b"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`,
		`data: [DONE]`, `: keep-alive`, `event: error`, `data: {"error":{"message":"maximum context length is 8"}}`,
		`data: {"error":"boom"}`, `data: nope`, `data:`,
	} {
		f.Add([]byte(s))
	}
	b := &Backend{}
	f.Fuzz(func(t *testing.T, line []byte) {
		a := &attempt{}
		var got strings.Builder
		b.line(line, a, func(s string) error { got.WriteString(s); return nil })
		if got.Len() > 0 && !bytes.Contains(bytes.ToLower(line), []byte("choices")) {
			t.Errorf("text %q from a line without choices: %q", got.String(), line)
		}
	})
}
