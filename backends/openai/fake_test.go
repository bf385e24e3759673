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
	// refusal, when set, answers a request whose prompt (one token a byte)
	// plus max_tokens does not fit ctxLen as that server does (see
	// fakeRefusals) instead of the generic 400.
	refusal string
	// tokenizes counts the POST /tokenize requests.
	tokenizes int

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
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		// vLLM's: {"count", "max_model_len", "tokens"}, at the root.
		var req fakeRequest
		json.NewDecoder(r.Body).Decode(&req)
		req.Path = "/v1/completions"
		if req.Messages != nil {
			req.Path = "/v1/chat/completions"
		}
		f.mu.Lock()
		f.tokenizes++
		f.mu.Unlock()
		n := len(fakeContext(req))
		json.NewEncoder(w).Encode(map[string]any{"count": n, "max_model_len": f.ctxLen, "tokens": make([]int, n)})
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
	if f.refusal != "" {
		if fakeRefusals[f.refusal](w, len(text), req.MaxTokens, f.ctxLen) {
			return
		}
	} else if f.ctxLen > 0 && len(text)+req.MaxTokens > f.ctxLen {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"object":"error","message":"This model's maximum context length is %d tokens. However, you requested %d tokens.","type":"BadRequestError","code":400}`,
			f.ctxLen, len(text)+req.MaxTokens)
		return
	}
	maxTokens := req.MaxTokens
	if f.refusal == "llamacpp" {
		// llama.cpp's server stops where its context ends.
		maxTokens = min(maxTokens, f.ctxLen-len(text))
	}
	pieces, reason := fakeGenerate(text, maxTokens, req.Stop)
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

// fakeRefusals answer, as each server does, a request of prompt tokens
// and max_tokens budget that does not fit a context of ctx tokens: status,
// JSON shape and message as the server's source writes them (see
// refusal.go for the files and versions). They report whether they
// answered; a request that fits is left to the model.
var fakeRefusals = map[string]func(w http.ResponseWriter, prompt, budget, ctx int) bool{
	// vLLM v0.9: refused before streaming, the error at the top level.
	"vllm-0.9": func(w http.ResponseWriter, prompt, budget, ctx int) bool {
		if prompt+budget <= ctx {
			return false
		}
		msg := fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			ctx, prompt+budget, prompt, budget)
		fakeJSON(w, 400, map[string]any{"object": "error", "message": msg, "type": "BadRequestError", "param": nil, "code": 400})
		return true
	},
	// vLLM v0.11: {"error": {...}}, the prompt checked alone first.
	"vllm-0.11": func(w http.ResponseWriter, prompt, budget, ctx int) bool {
		var msg, param string
		switch {
		case prompt >= ctx:
			msg = fmt.Sprintf("This model's maximum context length is %d tokens. However, your request has %d input tokens. Please reduce the length of the input messages. (parameter=input_tokens, value=%d)", ctx, prompt, prompt)
			param = "input_tokens"
		case prompt+budget > ctx:
			msg = fmt.Sprintf("'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d). (parameter=max_tokens, value=%d)",
				budget, ctx, prompt, budget, ctx, prompt, budget)
			param = "max_tokens"
		default:
			return false
		}
		fakeJSON(w, 400, map[string]any{"error": map[string]any{"message": msg, "type": "BadRequestError", "param": param, "code": 400}})
		return true
	},
	// vLLM v0.12+ (renderer): the prompt is cut at the room plus one token
	// before it is counted, so the message gives a bound, not its length;
	// the prompt's length comes from /tokenize.
	"vllm-renderer": func(w http.ResponseWriter, prompt, budget, ctx int) bool {
		if prompt+budget <= ctx {
			return false
		}
		counted := min(prompt, ctx-budget+1)
		msg := fmt.Sprintf("This model's maximum context length is %d tokens. However, you requested %d output tokens and your prompt contains at least %d input tokens, for a total of at least %d tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=%d)",
			ctx, budget, counted, counted+budget, counted)
		fakeJSON(w, 400, map[string]any{"error": map[string]any{"message": msg, "type": "BadRequestError", "param": "input_tokens", "code": 400}})
		return true
	},
	// SGLang (HTTP 400 before the stream, as its current serving code
	// does): input + max_new_tokens must stay below the context.
	"sglang": func(w http.ResponseWriter, prompt, budget, ctx int) bool {
		msg, ok := sglangRefusal(prompt, budget, ctx)
		if ok {
			fakeJSON(w, 400, map[string]any{"object": "error", "message": msg, "type": "BadRequestError", "param": nil, "code": 400})
		}
		return ok
	},
	// SGLang before v0.4.7: the refusal arrives inside a 200 stream.
	"sglang-stream": func(w http.ResponseWriter, prompt, budget, ctx int) bool {
		msg, ok := sglangRefusal(prompt, budget, ctx)
		if ok {
			w.Header().Set("Content-Type", "text/event-stream")
			data, _ := json.Marshal(map[string]any{"error": map[string]any{"object": "error", "message": msg, "type": "BadRequestError", "param": nil, "code": 400}})
			fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", data)
		}
		return ok
	},
	// llama.cpp's server refuses only a prompt that fills its context, with
	// the counts beside the message.
	"llamacpp": func(w http.ResponseWriter, prompt, budget, ctx int) bool {
		if prompt < ctx {
			return false
		}
		msg := fmt.Sprintf("request (%d tokens) exceeds the available context size (%d tokens), try increasing it", prompt, ctx)
		fakeJSON(w, 400, map[string]any{"error": map[string]any{"code": 400, "message": msg, "type": "exceed_context_size_error", "n_prompt_tokens": prompt, "n_ctx": ctx}})
		return true
	},
}

func sglangRefusal(prompt, budget, ctx int) (string, bool) {
	switch {
	case prompt >= ctx:
		return fmt.Sprintf("The input (%d tokens) is longer than the model's context length (%d tokens).", prompt, ctx), true
	case prompt+budget >= ctx:
		return fmt.Sprintf("Requested token count exceeds the model's maximum context length of %d tokens. You requested a total of %d tokens: %d tokens from the input messages and %d tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.",
			ctx, prompt+budget, prompt, budget), true
	}
	return "", false
}

func fakeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
