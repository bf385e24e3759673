package ollama

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/ollama/ollama/api"
)

// fakeServer is an httptest Ollama: /api/show, /api/tags, /api/generate and
// /api/chat. Its "model" is deterministic: each piece is one character
// chosen by hashing everything before it, so continuing from a prefix gives
// exactly what an unbroken run gives.
type fakeServer struct {
	t      *testing.T
	srv    *httptest.Server
	digest string

	mu       sync.Mutex
	reqs     []api.GenerateRequest // every /api/generate request, in arrival order
	chats    []api.ChatRequest
	inflight int
	maxIn    int
	// fault, when set, is asked before each generate request; it may
	// answer (return true) instead of the model, or set breakAfter > 0 to
	// cut the stream after that many pieces.
	fault func(n int, req api.GenerateRequest, w http.ResponseWriter) (handled bool, breakAfter int)
	// gate, when set, is called while the request is in flight.
	gate func()
	// promptEval overrides prompt_eval_count when > 0.
	promptEval int
}

const fakeAlphabet = "abcdefgh ij12.\n;5 xyz.,"

// fakeNext is the fake model's next piece after text.
func fakeNext(text string) string {
	h := fnv.New64a()
	h.Write([]byte(text))
	return string(fakeAlphabet[h.Sum64()%uint64(len(fakeAlphabet))])
}

// fakeGenerate is what the fake model produces for prompt: the text, the
// done reason and the number of tokens.
func fakeGenerate(prompt string, numPredict int, stops []string) (pieces []string, reason string) {
	text := prompt
	var out strings.Builder
	for range numPredict {
		p := fakeNext(text)
		text += p
		out.WriteString(p)
		for _, s := range stops {
			if i := strings.Index(out.String(), s); i >= 0 {
				// Like Ollama: drop the stop text and what follows.
				kept := out.String()[:i]
				return splitPieces(kept), "stop"
			}
		}
	}
	return splitPieces(out.String()), "length"
}

func splitPieces(s string) []string {
	var out []string
	for _, r := range s {
		out = append(out, string(r))
	}
	return out
}

func newFakeServer(t *testing.T) *fakeServer {
	f := &fakeServer{t: t, digest: "sha256:aaaa"}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/show", func(w http.ResponseWriter, r *http.Request) {
		var req api.ShowRequest
		json.NewDecoder(r.Body).Decode(&req)
		if !sameModel(req.Model, "tiny") {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":"model '` + req.Model + `' not found"}`))
			return
		}
		json.NewEncoder(w).Encode(api.ShowResponse{
			Details:   api.ModelDetails{Family: "llama", QuantizationLevel: "F16"},
			ModelInfo: map[string]any{"general.architecture": "llama", "llama.context_length": 4096},
		})
	})
	mux.HandleFunc("GET /api/tags", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		d := f.digest
		f.mu.Unlock()
		json.NewEncoder(w).Encode(api.ListResponse{Models: []api.ListModelResponse{
			{Name: "other:latest", Model: "other:latest", Digest: "sha256:bbbb"},
			{Name: "tiny:latest", Model: "tiny:latest", Digest: d, Details: api.ModelDetails{Family: "llama", QuantizationLevel: "F16"}},
		}})
	})
	mux.HandleFunc("POST /api/generate", func(w http.ResponseWriter, r *http.Request) {
		var req api.GenerateRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		n := len(f.reqs)
		f.reqs = append(f.reqs, req)
		f.inflight++
		f.maxIn = max(f.maxIn, f.inflight)
		fault, gate := f.fault, f.gate
		f.mu.Unlock()
		defer func() {
			f.mu.Lock()
			f.inflight--
			f.mu.Unlock()
		}()
		if gate != nil {
			gate()
		}
		breakAfter := 0
		if fault != nil {
			var handled bool
			if handled, breakAfter = fault(n, req, w); handled {
				return
			}
		}
		f.answer(w, r, req.Prompt, req.Options, breakAfter, func(piece string, done bool, reason string, m api.Metrics) any {
			return api.GenerateResponse{Model: req.Model, Response: piece, Done: done, DoneReason: reason, Metrics: m}
		})
	})
	mux.HandleFunc("POST /api/chat", func(w http.ResponseWriter, r *http.Request) {
		var req api.ChatRequest
		json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		f.chats = append(f.chats, req)
		f.mu.Unlock()
		var prompt strings.Builder
		for _, m := range req.Messages {
			prompt.WriteString("<" + m.Role + ">" + m.Content)
		}
		f.answer(w, r, prompt.String(), req.Options, 0, func(piece string, done bool, reason string, m api.Metrics) any {
			return api.ChatResponse{Model: req.Model, Message: api.Message{Role: "assistant", Content: piece}, Done: done, DoneReason: reason, Metrics: m}
		})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeServer) answer(w http.ResponseWriter, r *http.Request, prompt string, opts map[string]any, breakAfter int,
	msg func(piece string, done bool, reason string, m api.Metrics) any) {
	numPredict := int(opts["num_predict"].(float64))
	var stops []string
	if s, ok := opts["stop"].([]any); ok {
		for _, x := range s {
			stops = append(stops, x.(string))
		}
	}
	pieces, reason := fakeGenerate(prompt, numPredict, stops)
	enc := json.NewEncoder(w)
	fl := w.(http.Flusher)
	for i, p := range pieces {
		if breakAfter > 0 && i == breakAfter {
			panic(http.ErrAbortHandler) // cut the connection mid-stream
		}
		if r.Context().Err() != nil {
			return
		}
		enc.Encode(msg(p, false, "", api.Metrics{}))
		fl.Flush()
	}
	f.mu.Lock()
	pe := f.promptEval
	f.mu.Unlock()
	if pe == 0 {
		pe = len(prompt)
	}
	enc.Encode(msg("", true, reason, api.Metrics{PromptEvalCount: pe, EvalCount: len(pieces)}))
}

func (f *fakeServer) generateRequests() []api.GenerateRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]api.GenerateRequest(nil), f.reqs...)
}
