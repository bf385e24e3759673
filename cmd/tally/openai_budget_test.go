package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeVLLM is an OpenAI-compatible server with a context of ctxLen tokens
// (one token a byte of the prompt) that refuses, as vLLM v0.11 does, a
// request whose prompt plus max_tokens exceeds it; otherwise it streams
// " 7" and then "x" up to max_tokens tokens, finishing "length". It records
// the max_tokens of each request.
type fakeVLLM struct {
	srv    *httptest.Server
	ctxLen int
	mu     sync.Mutex
	asked  []int // max_tokens of each generation request
	rooms  int   // the sum of the budgets that fit
}

func newFakeVLLM(t *testing.T, ctxLen int) *fakeVLLM {
	f := &fakeVLLM{ctxLen: ctxLen}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"object":"list","data":[{"id":"tiny","object":"model","created":1,"owned_by":"vllm","root":"/m/tiny","max_model_len":%d}]}`, ctxLen)
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Prompt    string `json:"prompt"`
			MaxTokens int    `json:"max_tokens"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		n := len(req.Prompt)
		f.mu.Lock()
		f.asked = append(f.asked, req.MaxTokens)
		fits := n+req.MaxTokens <= ctxLen
		if fits {
			f.rooms += req.MaxTokens
		}
		f.mu.Unlock()
		if !fits {
			// vllm/entrypoints/openai/serving_engine.py, v0.11.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			msg := fmt.Sprintf("'max_tokens' or 'max_completion_tokens' is too large: %d. This model's maximum context length is %d tokens and your request has %d input tokens (%d > %d - %d). (parameter=max_tokens, value=%d)",
				req.MaxTokens, ctxLen, n, req.MaxTokens, ctxLen, n, req.MaxTokens)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "BadRequestError", "param": "max_tokens", "code": 400}})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		text := " 7" + strings.Repeat("x", max(req.MaxTokens-1, 0)*1)
		for len(text) > 0 {
			p := text[:min(len(text), 64)]
			text = text[len(p):]
			fmt.Fprintf(w, "data: {\"choices\":[{\"text\":%q,\"finish_reason\":null}]}\n\n", p)
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}]}\n\n")
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", n, req.MaxTokens)
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// TestRunOpenAIBudgetPastContext is issue 23's finding 1 on a vLLM
// server: a run whose --max-tokens exceeds what the context leaves after
// every prompt (which fits) stores context-full generations and scores
// them, instead of failing every sample on the server's refusal; the plan
// then shows them complete, and a second run generates nothing.
func TestRunOpenAIBudgetPastContext(t *testing.T) {
	const ctxLen = 1024
	f := newFakeVLLM(t, ctxLen)
	bin := buildTally(t)
	db := filepath.Join(t.TempDir(), "b.db")
	args := []string{"--model", "openai:tiny", "--base-url", f.srv.URL + "/v1", "--tasks", "demo", "--limit", "3",
		"--max-tokens", "4096", "--store", db, "--json"}
	first, out := runTally(t, bin, append([]string{"run"}, args...)...)
	if first.Samples != 3 || first.GenerationsNew != 3 || first.Errors != 0 || first.Scores["demo"] == nil {
		t.Fatalf("first run %+v\n%s", first, out)
	}
	f.mu.Lock()
	asked, rooms := append([]int(nil), f.asked...), f.rooms
	f.mu.Unlock()
	if len(asked) != 6 || first.GeneratedTokens != rooms {
		t.Errorf("budgets asked %v; %d tokens generated, the rooms sum to %d", asked, first.GeneratedTokens, rooms)
	}
	full := 0
	for _, n := range asked {
		if n == 4096 {
			full++
		}
	}
	if full != 3 {
		t.Errorf("budgets asked %v: want each sample asked once with 4096, then once with its room", asked)
	}
	var plan struct {
		Counts   map[string]int `json:"counts"`
		Requests int            `json:"requests"`
	}
	if err := json.Unmarshal([]byte(tallyOut(t, append([]string{"plan"}, args...)...)), &plan); err != nil {
		t.Fatal(err)
	}
	if plan.Counts["complete"] != 3*3 || plan.Requests != 0 {
		t.Errorf("plan after the run: %+v, want 9 complete (3 samples × 3 stop settings), no requests", plan)
	}
	second, _ := runTally(t, bin, append([]string{"run"}, args...)...)
	if second.GenerationsNew != 0 || second.GenerationsContinued != 0 || second.GenerationsReused != 3 || second.Errors != 0 {
		t.Errorf("second run %+v", second)
	}
	if f.mu.Lock(); len(f.asked) != 6 {
		t.Errorf("the second run asked the server %d times", len(f.asked)-6)
	}
	f.mu.Unlock()
}
