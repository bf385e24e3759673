package openai

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeServer is an httptest OpenAI-compatible server: /v1/models,
// /v1/completions and /v1/chat/completions, streaming SSE. Its "model" is
// deterministic: each piece is one character chosen by hashing everything
// before it, so a replay or a continuation gives what an unbroken run gives.
type fakeServer struct {
	t   *testing.T
	srv *httptest.Server
	// models is the /v1/models data.
	models []map[string]any
	// ctxLen makes prompts longer than this many bytes a 400 overflow.
	ctxLen int

	mu       sync.Mutex
	reqs     []fakeRequest // every generation request, in arrival order
	auth     []string      // Authorization headers seen
	inflight int
	maxIn    int
	// fault, when set, is asked before each generation request; it may
	// answer instead of the model (return true), or set breakAfter > 0 to
	// cut the stream after that many pieces.
	fault func(n int, w http.ResponseWriter) (handled bool, breakAfter int)
	// noUsage leaves the usage chunk out.
	noUsage bool
}

// fakeRequest is a decoded generation request and its endpoint.
type fakeRequest struct {
	Path                 string
	Model                string    `json:"model"`
	Prompt               string    `json:"prompt"`
	Messages             []message `json:"messages"`
	MaxTokens            int       `json:"max_tokens"`
	Temperature          *float64  `json:"temperature"`
	Seed                 *int      `json:"seed"`
	Stop                 []string  `json:"stop"`
	Stream               bool      `json:"stream"`
	ContinueFinalMessage bool      `json:"continue_final_message"`
	StreamOptions        struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

const fakeAlphabet = "abcdefgh ij12.\n;5 xyz.,"

// fakeNext is the fake model's next piece after text.
func fakeNext(text string) string {
	h := fnv.New64a()
	h.Write([]byte(text))
	return string(fakeAlphabet[h.Sum64()%uint64(len(fakeAlphabet))])
}

// fakeGenerate is what the fake model produces after prompt: the pieces and
// the finish reason (stop texts are stripped, as servers do).
func fakeGenerate(prompt string, maxTokens int, stops []string) ([]string, string) {
	text := prompt
	var out []string
	joined := ""
	for range maxTokens {
		p := fakeNext(text)
		text += p
		joined += p
		out = append(out, p)
		for _, s := range stops {
			if i := strings.Index(joined, s); i >= 0 {
				var kept []string
				for _, r := range joined[:i] {
					kept = append(kept, string(r))
				}
				return kept, "stop"
			}
		}
	}
	return out, "length"
}

// fakeContext is the text the fake model continues for a request.
func fakeContext(r fakeRequest) string {
	if r.Path == "/v1/completions" {
		return r.Prompt
	}
	var b strings.Builder
	for _, m := range r.Messages {
		fmt.Fprintf(&b, "<%s>%s", m.Role, m.Content)
	}
	if n := len(r.Messages); n == 0 || r.Messages[n-1].Role != "assistant" {
		b.WriteString("<assistant>")
	}
	return b.String()
}

func newFakeServer(t *testing.T) *fakeServer {
	f := &fakeServer{t: t, models: []map[string]any{
		{"id": "tiny", "object": "model", "created": 1, "owned_by": "vllm", "root": "/models/tiny", "max_model_len": 4096},
		{"id": "other", "object": "model", "created": 2},
	}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": f.models})
	})
	mux.HandleFunc("POST /v1/completions", f.generate)
	mux.HandleFunc("POST /v1/chat/completions", f.generate)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) url() string { return f.srv.URL + "/v1" }

func (f *fakeServer) generate(w http.ResponseWriter, r *http.Request) {
	var req fakeRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.Path = r.URL.Path
	f.mu.Lock()
	n := len(f.reqs)
	f.reqs = append(f.reqs, req)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.inflight++
	f.maxIn = max(f.maxIn, f.inflight)
	fault, noUsage := f.fault, f.noUsage
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inflight--
		f.mu.Unlock()
	}()
	breakAfter := 0
	if fault != nil {
		var handled bool
		if handled, breakAfter = fault(n, w); handled {
			return
		}
	}
	text := fakeContext(req)
	if f.ctxLen > 0 && len(text)+req.MaxTokens > f.ctxLen {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"object":"error","message":"This model's maximum context length is %d tokens. However, you requested %d tokens.","type":"BadRequestError","code":400}`,
			f.ctxLen, len(text)+req.MaxTokens)
		return
	}
	pieces, reason := fakeGenerate(text, req.MaxTokens, req.Stop)
	w.Header().Set("Content-Type", "text/event-stream")
	flusher := w.(http.Flusher)
	send := func(v any) {
		data, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", data)
		flusher.Flush()
	}
	chat := req.Path == "/v1/chat/completions"
	choice := func(p string, finish any) map[string]any {
		if chat {
			return map[string]any{"index": 0, "delta": map[string]any{"content": p}, "finish_reason": finish}
		}
		return map[string]any{"index": 0, "text": p, "finish_reason": finish}
	}
	for i, p := range pieces {
		if breakAfter > 0 && i == breakAfter {
			// Cut the connection mid-stream.
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		send(map[string]any{"choices": []any{choice(p, nil)}})
	}
	send(map[string]any{"choices": []any{choice("", reason)}})
	if req.StreamOptions.IncludeUsage && !noUsage {
		send(map[string]any{"choices": []any{}, "usage": map[string]any{"prompt_tokens": len(text), "completion_tokens": len(pieces)}})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// requests returns a copy of the requests received.
func (f *fakeServer) requests() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.reqs...)
}
