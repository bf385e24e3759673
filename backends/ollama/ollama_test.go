package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"tally/backends"
)

// fastOpts are Options with tiny retry delays, for tests.
func fastOpts(host string) Options {
	return Options{Host: host, BaseDelay: time.Millisecond, MaxDelay: 4 * time.Millisecond, MaxTries: 4}
}

// collector gathers events per request, checking that each request gets
// exactly one Done event and nothing after it.
type collector struct {
	t     *testing.T
	mu    sync.Mutex
	text  map[int]string
	done  map[int]backends.Event
	stopN map[int]int // return false after this many text events
	seen  map[int]int
}

func newCollector(t *testing.T) *collector {
	return &collector{t: t, text: map[int]string{}, done: map[int]backends.Event{}, stopN: map[int]int{}, seen: map[int]int{}}
}

func (c *collector) sink(ev backends.Event) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.done[ev.Index]; ok {
		c.t.Errorf("request %d: event after Done: %+v", ev.Index, ev)
	}
	if ev.Done {
		c.done[ev.Index] = ev
		return false
	}
	if len(ev.IDs) != 0 {
		c.t.Errorf("request %d: IDs set on a server backend event", ev.Index)
	}
	c.text[ev.Index] += ev.Text
	c.seen[ev.Index]++
	if n, ok := c.stopN[ev.Index]; ok && c.seen[ev.Index] >= n {
		return false
	}
	return true
}

func openFake(t *testing.T, f *fakeServer, opts Options) *Backend {
	t.Helper()
	b, err := Open(context.Background(), "tiny", opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func reference(prompt string, n int, stops []string) (string, string) {
	pieces, reason := fakeGenerate(prompt, n, stops)
	return strings.Join(pieces, ""), reason
}

func TestOpen(t *testing.T) {
	f := newFakeServer(t)
	tests := []struct {
		name, model string
		opts        Options
		env         string
		wantErr     string
		wantSlots   int
		wantCtx     int
	}{
		{name: "found", model: "tiny", wantSlots: 4, wantCtx: 4096},
		{name: "tagged", model: "tiny:latest", wantSlots: 4, wantCtx: 4096},
		{name: "parallel option", model: "tiny", opts: Options{Parallel: 7}, wantSlots: 7, wantCtx: 4096},
		{name: "parallel from env", model: "tiny", env: "3", wantSlots: 3, wantCtx: 4096},
		{name: "bad env", model: "tiny", env: "lots", wantErr: "OLLAMA_NUM_PARALLEL"},
		{name: "max context", model: "tiny", opts: Options{MaxContext: 1000}, wantSlots: 4, wantCtx: 1000},
		{name: "not found", model: "nope", wantErr: `model "nope" is not on the server`},
		{name: "empty", model: "", wantErr: "empty model name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OLLAMA_NUM_PARALLEL", tc.env)
			o := tc.opts
			o.Host = f.srv.URL
			b, err := Open(context.Background(), tc.model, o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err = %v, want one line containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Slots() != tc.wantSlots || b.ContextLength() != tc.wantCtx || b.Tokenizer() != nil || b.Name() != "ollama" {
				t.Errorf("slots %d ctx %d tok %v name %s; want %d %d nil ollama", b.Slots(), b.ContextLength(), b.Tokenizer(), b.Name(), tc.wantSlots, tc.wantCtx)
			}
		})
	}
}

func TestOpenUnreachable(t *testing.T) {
	f := newFakeServer(t)
	url := f.srv.URL
	f.srv.Close()
	_, err := Open(context.Background(), "tiny", Options{Host: url})
	if err == nil || !strings.Contains(err.Error(), "show model") {
		t.Fatalf("err = %v, want a show error", err)
	}
}

func TestFingerprint(t *testing.T) {
	f := newFakeServer(t)
	b := openFake(t, f, fastOpts(f.srv.URL))
	ctx := context.Background()
	tests := []struct{ digest, want string }{
		{"sha256:aaaa", "ollama:sha256:aaaa:F16:llama"},
		{"sha256:cccc", "ollama:sha256:cccc:F16:llama"}, // the model was re-created
	}
	for _, tc := range tests {
		f.mu.Lock()
		f.digest = tc.digest
		f.mu.Unlock()
		got, err := b.Fingerprint(ctx)
		if err != nil || got != tc.want {
			t.Errorf("Fingerprint = %q, %v; want %q", got, err, tc.want)
		}
	}
	o := fastOpts(f.srv.URL)
	o.Chat = true
	if got, err := openFake(t, f, o).Fingerprint(ctx); err != nil || got != "ollama:sha256:cccc:F16:llama:chat" {
		t.Errorf("chat Fingerprint = %q, %v", got, err)
	}
}

// fail500 answers 500 for the first n requests.
func fail500(n int) func(int, api.GenerateRequest, http.ResponseWriter) (bool, int) {
	return func(i int, _ api.GenerateRequest, w http.ResponseWriter) (bool, int) {
		if i < n {
			http.Error(w, `{"error":"runner crashed"}`, http.StatusInternalServerError)
			return true, 0
		}
		return false, 0
	}
}

// breakAt cuts the stream of the i-th request after at[i] pieces.
func breakAt(at ...int) func(int, api.GenerateRequest, http.ResponseWriter) (bool, int) {
	return func(i int, _ api.GenerateRequest, _ http.ResponseWriter) (bool, int) {
		if i < len(at) {
			return false, at[i]
		}
		return false, 0
	}
}

func TestGenerate(t *testing.T) {
	const prompt = "Question: what?\nAnswer:"
	full, _ := reference(prompt, 40, nil)
	tests := []struct {
		name       string
		req        backends.Request
		opts       func(*Options)
		fault      func(int, api.GenerateRequest, http.ResponseWriter) (bool, int)
		stopAfter  int
		wantText   string
		wantFinish string
		wantErr    error  // errors.Is on the Done event's Err
		wantErrMsg string // substring of the Done event's Err
		wantCalls  int    // /api/generate requests; -1: don't check
		// wantPrompts are the prompts the server saw, in order (nil: skip).
		wantPrompts []string
	}{
		{name: "plain", req: backends.Request{Prompt: prompt, MaxTokens: 40},
			wantText: full, wantFinish: backends.FinishLength, wantCalls: 1, wantPrompts: []string{prompt}},
		{name: "stop hint", req: backends.Request{Prompt: prompt, MaxTokens: 40, StopHint: []string{full[10:12]}},
			wantText: full[:strings.Index(full, full[10:12])], wantFinish: backends.FinishEOS, wantCalls: 1},
		{name: "prefix continues", req: backends.Request{Prompt: prompt, PrefixText: full[:15], MaxTokens: 25},
			wantText: full[15:], wantFinish: backends.FinishLength, wantCalls: 1, wantPrompts: []string{prompt + full[:15]}},
		{name: "500 then recovers", req: backends.Request{Prompt: prompt, MaxTokens: 40}, fault: fail500(2),
			wantText: full, wantFinish: backends.FinishLength, wantCalls: 3},
		{name: "500 forever", req: backends.Request{Prompt: prompt, MaxTokens: 40}, fault: fail500(100),
			wantFinish: backends.FinishError, wantErrMsg: "HTTP 500: runner crashed", wantCalls: 4},
		{name: "broken stream replays without duplicates", req: backends.Request{Prompt: prompt, MaxTokens: 40},
			fault:    breakAt(7, 12),
			wantText: full, wantFinish: backends.FinishLength, wantCalls: 3,
			wantPrompts: []string{prompt, prompt, prompt}},
		{name: "broken stream continues without duplicates", req: backends.Request{Prompt: prompt, MaxTokens: 40},
			opts: func(o *Options) { o.Continue = true }, fault: breakAt(7, 12),
			wantText: full, wantFinish: backends.FinishLength, wantCalls: 3,
			wantPrompts: []string{prompt, prompt + full[:7], prompt + full[:19]}},
		{name: "diverging replay falls back to a continuation", req: backends.Request{Prompt: prompt, MaxTokens: 40},
			fault: func(i int, _ api.GenerateRequest, w http.ResponseWriter) (bool, int) {
				switch i {
				case 0:
					return false, 5
				case 1: // a replay that does not reproduce the text
					json.NewEncoder(w).Encode(api.GenerateResponse{Response: "Q"})
					json.NewEncoder(w).Encode(api.GenerateResponse{Done: true, DoneReason: "length"})
					return true, 0
				}
				return false, 0
			},
			wantText: full, wantFinish: backends.FinishLength, wantCalls: 3,
			wantPrompts: []string{prompt, prompt, prompt + full[:5]}},
		{name: "stream ends without done", req: backends.Request{Prompt: prompt, MaxTokens: 40},
			fault: func(i int, _ api.GenerateRequest, w http.ResponseWriter) (bool, int) {
				if i == 0 {
					for _, p := range splitPieces(full[:3]) {
						json.NewEncoder(w).Encode(api.GenerateResponse{Response: p})
					}
					return true, 0
				}
				return false, 0
			},
			wantText: full, wantFinish: backends.FinishLength, wantCalls: 2,
			wantPrompts: []string{prompt, prompt}},
		{name: "context overflow is not sent", req: backends.Request{Prompt: strings.Repeat("x", 9000), MaxTokens: 10},
			wantFinish: backends.FinishContext, wantErr: backends.ErrContextOverflow, wantCalls: 0},
		// About 1501 prompt tokens (2 bytes a token) leave 2595 of the
		// 4096: the budget is capped to them, and spending it fills the
		// context, which is not a failure.
		{name: "budget past the context is capped", req: backends.Request{Prompt: strings.Repeat("x", 3000), MaxTokens: 5000},
			wantText: strings.Join(first(fakeGenerate(strings.Repeat("x", 3000), 2595, nil)), ""), wantFinish: backends.FinishContextFull, wantCalls: 1},
		{name: "sink stop cancels", req: backends.Request{Prompt: prompt, MaxTokens: 40}, stopAfter: 5,
			wantText: full[:5], wantFinish: backends.FinishStop, wantCalls: 1},
		{name: "zero budget", req: backends.Request{Prompt: prompt, MaxTokens: 0},
			wantFinish: backends.FinishLength, wantCalls: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeServer(t)
			f.fault = tc.fault
			o := fastOpts(f.srv.URL)
			if tc.opts != nil {
				tc.opts(&o)
			}
			b := openFake(t, f, o)
			c := newCollector(t)
			if tc.stopAfter > 0 {
				c.stopN[0] = tc.stopAfter
			}
			if err := b.Generate(context.Background(), []backends.Request{tc.req}, c.sink); err != nil {
				t.Fatalf("Generate: %v", err)
			}
			ev, ok := c.done[0]
			if !ok {
				t.Fatal("no Done event")
			}
			if c.text[0] != tc.wantText || ev.Finish != tc.wantFinish {
				t.Errorf("text %q finish %q; want %q %q", c.text[0], ev.Finish, tc.wantText, tc.wantFinish)
			}
			if tc.wantErr != nil && !errors.Is(ev.Err, tc.wantErr) {
				t.Errorf("Err = %v, want %v", ev.Err, tc.wantErr)
			}
			if tc.wantErrMsg != "" && (ev.Err == nil || !strings.Contains(ev.Err.Error(), tc.wantErrMsg)) {
				t.Errorf("Err = %v, want it to contain %q", ev.Err, tc.wantErrMsg)
			}
			if tc.wantErr == nil && tc.wantErrMsg == "" && ev.Err != nil {
				t.Errorf("unexpected Err %v", ev.Err)
			}
			reqs := f.generateRequests()
			if tc.wantCalls >= 0 && len(reqs) != tc.wantCalls {
				t.Errorf("%d generate calls, want %d", len(reqs), tc.wantCalls)
			}
			if tc.wantPrompts != nil {
				for i, r := range reqs {
					if i < len(tc.wantPrompts) && r.Prompt != tc.wantPrompts[i] {
						t.Errorf("call %d prompt %q, want %q", i, r.Prompt, tc.wantPrompts[i])
					}
				}
			}
			for _, r := range reqs {
				if !r.Raw || r.Options["temperature"].(float64) != 0 || r.Options["num_ctx"] == nil {
					t.Errorf("request not raw/greedy/sized: %+v", r)
				}
			}
			if ev.Finish == backends.FinishLength && ev.GenTokens != len(tc.wantText) {
				t.Errorf("GenTokens %d, want %d", ev.GenTokens, len(tc.wantText))
			}
		})
	}
}

func TestPermanentHTTPErrors(t *testing.T) {
	tests := []struct {
		code  int
		calls int
	}{
		{http.StatusBadRequest, 1},
		{http.StatusNotFound, 1},
		{http.StatusTooManyRequests, 4},
		{http.StatusBadGateway, 4},
		{http.StatusServiceUnavailable, 4},
	}
	for _, tc := range tests {
		t.Run(http.StatusText(tc.code), func(t *testing.T) {
			f := newFakeServer(t)
			f.fault = func(_ int, _ api.GenerateRequest, w http.ResponseWriter) (bool, int) {
				http.Error(w, `{"error":"nope"}`, tc.code)
				return true, 0
			}
			b := openFake(t, f, fastOpts(f.srv.URL))
			c := newCollector(t)
			if err := b.Generate(context.Background(), []backends.Request{{Prompt: "p", MaxTokens: 5}}, c.sink); err != nil {
				t.Fatal(err)
			}
			if ev := c.done[0]; ev.Finish != backends.FinishError || ev.Err == nil {
				t.Errorf("Done = %+v, want an error", ev)
			}
			if n := len(f.generateRequests()); n != tc.calls {
				t.Errorf("%d calls, want %d", n, tc.calls)
			}
		})
	}
}

func TestStalledStreamIsRetried(t *testing.T) {
	f := newFakeServer(t)
	release := make(chan struct{})
	defer close(release)
	f.fault = func(i int, _ api.GenerateRequest, w http.ResponseWriter) (bool, int) {
		if i == 0 {
			w.(http.Flusher).Flush()
			<-release // never answers until the test ends
			return true, 0
		}
		return false, 0
	}
	o := fastOpts(f.srv.URL)
	o.StallTimeout = 50 * time.Millisecond
	b := openFake(t, f, o)
	c := newCollector(t)
	if err := b.Generate(context.Background(), []backends.Request{{Prompt: "p", MaxTokens: 5}}, c.sink); err != nil {
		t.Fatal(err)
	}
	want, _ := reference("p", 5, nil)
	if c.text[0] != want || c.done[0].Finish != backends.FinishLength {
		t.Errorf("text %q done %+v, want %q", c.text[0], c.done[0], want)
	}
}

func TestTruncatedPromptReportsContext(t *testing.T) {
	f := newFakeServer(t)
	f.promptEval = 2048 // the runner truncated to num_ctx
	b := openFake(t, f, fastOpts(f.srv.URL))
	c := newCollector(t)
	if err := b.Generate(context.Background(), []backends.Request{{Prompt: "p", MaxTokens: 5}}, c.sink); err != nil {
		t.Fatal(err)
	}
	if ev := c.done[0]; ev.Finish != backends.FinishContext || !errors.Is(ev.Err, backends.ErrContextOverflow) {
		t.Errorf("Done = %+v, want a context overflow", ev)
	}
}

func TestParallelAndOrder(t *testing.T) {
	f := newFakeServer(t)
	const slots, n = 3, 9
	var (
		mu      sync.Mutex
		arrived int
		full    = make(chan struct{})
	)
	f.gate = func() {
		mu.Lock()
		arrived++
		if arrived == slots {
			close(full)
		}
		mu.Unlock()
		select { // the first requests wait until all slots are busy
		case <-full:
		case <-time.After(10 * time.Second):
		}
	}
	o := fastOpts(f.srv.URL)
	o.Parallel = slots
	b := openFake(t, f, o)
	reqs := make([]backends.Request, n)
	for i := range reqs {
		reqs[i] = backends.Request{Index: i, Prompt: strings.Repeat("q", i+1), MaxTokens: 8}
	}
	c := newCollector(t)
	if err := b.Generate(context.Background(), reqs, c.sink); err != nil {
		t.Fatal(err)
	}
	select {
	case <-full:
	default:
		t.Fatalf("never had %d requests in flight", slots)
	}
	if f.maxIn != slots {
		t.Errorf("max in flight %d, want %d", f.maxIn, slots)
	}
	for i, r := range reqs {
		want, _ := reference(r.Prompt, 8, nil)
		if c.text[i] != want || c.done[i].Finish != backends.FinishLength {
			t.Errorf("request %d: %q %+v, want %q", i, c.text[i], c.done[i], want)
		}
	}
	// Requests start in order: the first `slots` sent are the first ones.
	first := map[string]bool{}
	for _, r := range f.generateRequests()[:slots] {
		first[r.Prompt] = true
	}
	for i := range slots {
		if !first[reqs[i].Prompt] {
			t.Errorf("request %d was not among the first %d sent", i, slots)
		}
	}
}

func TestChatMode(t *testing.T) {
	f := newFakeServer(t)
	o := fastOpts(f.srv.URL)
	o.Chat = true
	b := openFake(t, f, o)
	c := newCollector(t)
	req := backends.Request{Prompt: "hi", PrefixText: "ab", MaxTokens: 6}
	if err := b.Generate(context.Background(), []backends.Request{req}, c.sink); err != nil {
		t.Fatal(err)
	}
	want, _ := reference("<user>hi<assistant>ab", 6, nil)
	if c.text[0] != want || len(f.chats) != 1 || len(f.generateRequests()) != 0 {
		t.Errorf("text %q chats %d, want %q via /api/chat", c.text[0], len(f.chats), want)
	}

	// A benchmark's system prompt becomes the system message.
	o.Split = func(p string) (string, string) { return "Judge.", strings.TrimPrefix(p, "Judge. ") }
	b = openFake(t, f, o)
	c = newCollector(t)
	if err := b.Generate(context.Background(), []backends.Request{{Prompt: "Judge. hi", MaxTokens: 6}}, c.sink); err != nil {
		t.Fatal(err)
	}
	want, _ = reference("<system>Judge.<user>hi", 6, nil)
	if c.text[0] != want {
		t.Errorf("with a system prompt: %q, want %q", c.text[0], want)
	}
}

func TestGenerateContextCancel(t *testing.T) {
	f := newFakeServer(t)
	f.fault = fail500(1000)
	o := fastOpts(f.srv.URL)
	o.BaseDelay, o.MaxDelay, o.MaxTries = time.Hour, time.Hour, 10
	b := openFake(t, f, o)
	ctx, cancel := context.WithCancel(context.Background())
	f.gate = cancel // cancel as soon as the first request arrives
	c := newCollector(t)
	err := b.Generate(ctx, []backends.Request{{Prompt: "p", MaxTokens: 5}, {Index: 1, Prompt: "q", MaxTokens: 5}}, c.sink)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// first returns its first argument.
func first[T, U any](t T, _ U) T { return t }
