package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeOpenAI is a minimal OpenAI-compatible server: /v1/models lists
// "tiny"; both generation endpoints stream "answer 7." then [DONE]. It
// records the endpoint and Authorization header of each request.
type fakeOpenAI struct {
	srv     *httptest.Server
	mu      sync.Mutex
	paths   map[string]int
	auth    map[string]bool
	systems map[string]int // system messages seen
}

func newFakeOpenAI(t *testing.T) *fakeOpenAI {
	f := &fakeOpenAI{paths: map[string]int{}, auth: map[string]bool{}, systems: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"tiny","object":"model","created":1,"owned_by":"test"}]}`)
	})
	gen := func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		f.mu.Lock()
		for _, m := range req.Messages {
			if m.Role == "system" {
				f.systems[m.Content]++
			}
		}
		f.paths[r.URL.Path]++
		f.auth[r.Header.Get("Authorization")] = true
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		chat := r.URL.Path == "/v1/chat/completions"
		for _, p := range []string{"answer", " 7", "."} {
			if chat {
				fmt.Fprintf(w, "data: {\"choices\":[{\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", p)
			} else {
				fmt.Fprintf(w, "data: {\"choices\":[{\"text\":%q,\"finish_reason\":null}]}\n\n", p)
			}
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n")
	}
	mux.HandleFunc("POST /v1/completions", gen)
	mux.HandleFunc("POST /v1/chat/completions", gen)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// TestRunOpenAIFake runs the demo task on an OpenAI-compatible server, raw
// then chat: the chat run must not answer from the raw run's generations,
// a second chat run must reuse them, and the API key must reach the server
// but never the output or the store.
func TestRunOpenAIFake(t *testing.T) {
	const key = "sk-tally-test-secret"
	t.Setenv("OPENAI_API_KEY", key)
	f := newFakeOpenAI(t)
	bin := buildTally(t)
	db := filepath.Join(t.TempDir(), "o.db")
	base := []string{"run", "--model", "openai:tiny", "--base-url", f.srv.URL + "/v1", "--tasks", "demo", "--store", db, "--json"}
	var outs bytes.Buffer

	raw, out := runTally(t, bin, base...)
	outs.WriteString(out)
	if raw.GenerationsNew != raw.Samples || raw.Errors != 0 || f.paths["/v1/completions"] != raw.Samples {
		t.Fatalf("raw run %+v, requests %v", raw, f.paths)
	}
	chat, out := runTally(t, bin, append(base, "--chat")...)
	outs.WriteString(out)
	if chat.GenerationsNew != chat.Samples || chat.GenerationsReused != 0 || f.paths["/v1/chat/completions"] != chat.Samples {
		t.Errorf("chat run answered from raw generations: %+v, requests %v", chat, f.paths)
	}
	again, out := runTally(t, bin, append(base, "--chat")...)
	outs.WriteString(out)
	if again.GenerationsNew != 0 || again.GenerationsReused != again.Samples {
		t.Errorf("second chat run %+v", again)
	}
	// A task's own `chat: true` is the same as --chat.
	task, _ := runTally(t, bin, append(base, "--set", "chat=true")...)
	if task.GenerationsNew != 0 || task.GenerationsReused != task.Samples {
		t.Errorf("chat: true run %+v", task)
	}
	if c := storeCounts(t, db); c["generations"] != 2*raw.Samples {
		t.Errorf("generations %d, want %d", c["generations"], 2*raw.Samples)
	}
	if !f.auth["Bearer "+key] || len(f.auth) != 1 {
		t.Errorf("Authorization headers %v", f.auth)
	}
	stored, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(outs.String(), key) || bytes.Contains(stored, []byte(key)) {
		t.Error("the API key leaked into the output or the store")
	}
	// A pinned revision is another model: nothing is reused.
	pinned, _ := runTally(t, bin, append(base, "--model-revision", "v2")...)
	if pinned.GenerationsNew != pinned.Samples {
		t.Errorf("pinned revision reused old generations: %+v", pinned)
	}
	o, err := runTallyErr(bin, "run", "--model", "openai:nope", "--base-url", f.srv.URL+"/v1", "--tasks", "demo", "--store", db)
	if err == nil || !strings.Contains(o, `"nope" is not served`) {
		t.Errorf("missing model: %v %q", err, o)
	}
}

// TestRunOpenAIJudgeSystem runs the AlpacaEval judge task in chat mode:
// the judge's system turn goes to the server as the system message.
func TestRunOpenAIJudgeSystem(t *testing.T) {
	f := newFakeOpenAI(t)
	bin := buildTally(t)
	db := filepath.Join(t.TempDir(), "j.db")
	s, _ := runTally(t, bin, "run", "--model", "openai:tiny", "--base-url", f.srv.URL+"/v1", "--tasks", "alpaca-judge", "--chat",
		"--data", sharedPath(t, "data/alpaca_eval/results/gpt-3.5-turbo-1106/alpaca_eval_gpt4/annotations.json.gz"),
		"--limit", "4", "--store", db, "--json")
	const sys = "You are a helpful assistant, that ranks models by the quality of their answers."
	if s.Errors != 0 || f.systems[sys] != s.Samples || len(f.systems) != 1 {
		t.Errorf("run %+v; system messages %v", s, f.systems)
	}
}

// TestRunOpenAIOllama runs the demo task through the CI Ollama server's
// OpenAI-compatible endpoints (scripts/ollama-server.sh, which .ci/run
// starts), raw and chat.
func TestRunOpenAIOllama(t *testing.T) {
	model, host := os.Getenv("TALLY_OLLAMA_MODEL"), os.Getenv("OLLAMA_HOST")
	if model == "" || host == "" {
		t.Skip("no Ollama server: run scripts/ollama-server.sh and eval its output (.ci/run does)")
	}
	bin := buildTally(t)
	db := filepath.Join(t.TempDir(), "o.db")
	base := []string{"run", "--model", "openai:" + model, "--base-url", "http://" + host + "/v1", "--tasks", "demo", "--store", db, "--json"}
	first, _ := runTally(t, bin, base...)
	if first.GenerationsNew != first.Samples || first.Errors != 0 || first.Scores["demo"]["dot"] == nil {
		t.Fatalf("first run %+v", first)
	}
	second, _ := runTally(t, bin, append(base, "--stop", "dot=.", "--stop", `nl=\n`, "--stop", "sp= ")...)
	if second.GenerationsNew != 0 || second.GenerationsReused+second.GenerationsContinued != second.Samples || second.Scores["demo"]["sp"] == nil {
		t.Errorf("second run %+v", second)
	}
	chat, _ := runTally(t, bin, append(base, "--chat")...)
	if chat.GenerationsNew != chat.Samples || chat.Errors != 0 {
		t.Errorf("chat run %+v", chat)
	}
	ochat, _ := runTally(t, bin, "run", "--model", "ollama:"+model, "--tasks", "demo", "--store", db, "--json", "--chat")
	if ochat.GenerationsNew != ochat.Samples || ochat.Errors != 0 {
		t.Errorf("ollama chat run %+v", ochat)
	}
}

func TestUseChat(t *testing.T) {
	tests := []struct {
		force bool
		tasks []bool
		want  bool
		err   bool
	}{
		{false, nil, false, false},
		{true, nil, true, false},
		{false, []bool{true, true}, true, false},
		{false, []bool{false}, false, false},
		{false, []bool{true, false}, false, true},
		{true, []bool{true, false}, true, false},
	}
	for _, tc := range tests {
		got, err := modelOptions{chat: tc.force, taskChat: tc.tasks}.useChat()
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("useChat(%v, %v) = %v, %v", tc.force, tc.tasks, got, err)
		}
	}
}

// TestBaseURLSecretNotKept (issue 37, item 5): a key written into
// --base-url's query reaches the server but never the model's fingerprint,
// the store, ls --json, a report or the lm-eval files; the run's
// generations are those of the base URL without it (the same fingerprint,
// so nothing is generated again).
func TestBaseURLSecretNotKept(t *testing.T) {
	const secret = "S3CRET-in-the-url"
	t.Setenv("OPENAI_API_KEY", "")
	f := newFakeOpenAI(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "o.db")
	var outs bytes.Buffer
	first, out := runTally(t, built, "run", "--model", "openai:tiny", "--base-url", f.srv.URL+"/v1?api_key="+secret, "--tasks", "demo",
		"--limit", "3", "--store", db, "--json", "--output-path", filepath.Join(dir, "lm"))
	outs.WriteString(out)
	if first.GenerationsNew != 3 {
		t.Fatalf("run %+v", first)
	}
	again, out := runTally(t, built, "run", "--model", "openai:tiny", "--base-url", f.srv.URL+"/v1", "--tasks", "demo", "--limit", "3", "--store", db, "--json")
	outs.WriteString(out)
	if again.GenerationsNew != 0 || again.GenerationsReused != 3 {
		t.Errorf("the same server without the key in its URL: %+v; want its generations reused", again)
	}
	for _, args := range [][]string{{"ls", "--store", db, "--json"}, {"report", "--store", db, "--format", "json"}} {
		stdout, stderr, _ := runStatus(t, args...)
		outs.WriteString(stdout + stderr)
	}
	stored, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(filepath.Join(dir, "lm"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := os.ReadFile(p)
			outs.Write(b)
		}
		return nil
	})
	if strings.Contains(outs.String(), secret) || bytes.Contains(stored, []byte(secret)) {
		t.Error("the key in --base-url leaked into an output, a file or the store")
	}
}
