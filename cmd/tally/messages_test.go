package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tally/generate"
	"tally/store"
)

// refusedAddr returns host:port where nothing listens (connection refused).
func refusedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestNewcomerMessages is item 4 of issue 26: each error a newcomer meets
// first is one line saying what to do, and a run that fails before any
// work leaves no store behind. Before: `stat tally.db: no such file or
// directory`; "no such directory" for a file that exists; a bare
// "connection refused"; an empty store that report showed as an empty
// table with exit status 0.
func TestNewcomerMessages(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("TALLY_STORE", "")
	if err := os.WriteFile("README.md", []byte("# not a model\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.db")
	st, err := store.Open(context.Background(), empty)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	addr := refusedAddr(t)
	t.Setenv("OLLAMA_HOST", addr)
	defaultStore := "the default store is ./tally.db in the current directory, written by `tally run` or `tally demo`; pass --store PATH"
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"report"}, []string{"no store at tally.db", defaultStore}},
		{[]string{"ls"}, []string{"no store at tally.db", defaultStore}},
		{[]string{"plan", "--model", "demo", "--tasks", "demo"}, []string{defaultStore}},
		{[]string{"run", "--model", "./README.md", "--tasks", "demo", "--store", "new.db"},
			[]string{"./README.md: a file, but not a model", "--model takes a Hugging Face model directory (config.json, *.safetensors, tokenizer.json)", "imported:NAME (outputs stored by tally import) or demo"}},
		{[]string{"run", "--model", "./nowhere", "--tasks", "demo", "--store", "new.db"}, []string{"no such directory", "--model takes"}},
		{[]string{"run", "--model", "ollama:llama3", "--tasks", "demo", "--store", "new.db"},
			[]string{"no Ollama server answers at http://" + addr + " (connection refused)", "set OLLAMA_HOST"}},
		{[]string{"run", "--model", "openai:llama3", "--base-url", "http://" + addr + "/v1", "--tasks", "demo", "--store", "new.db"},
			[]string{"no server answers at http://" + addr + " (connection refused)", "pass --base-url"}},
		{[]string{"report", "--store", empty}, []string{"holds no runs", "tally run --model M --tasks T --store " + empty}},
	} {
		_, _, err := execute2(t, tc.args...)
		var msg bytes.Buffer
		code := exitStatus(err, &msg)
		line := strings.TrimSpace(msg.String())
		if code != ExitError || strings.Contains(line, "\n") {
			t.Errorf("tally %s: status %d, %q; want status 1 and one line", strings.Join(tc.args, " "), code, line)
		}
		for _, w := range tc.want {
			if !strings.Contains(line, w) {
				t.Errorf("tally %s: %q lacks %q", strings.Join(tc.args, " "), line, w)
			}
		}
	}
	for _, f := range []string{"tally.db", "new.db"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("a command that failed left the store %s behind", f)
		}
	}
}

// TestOverflowPrintedOnce is item 4 of issue 26: each prompt beyond the
// context was printed twice (as it failed, and again after the run); it
// is printed once, and one line sums them up.
func TestOverflowPrintedOnce(t *testing.T) {
	db := filepath.Join(t.TempDir(), "o.db")
	_, stderr, err := execute2(t, "demo", "--store", db, "--fewshot", "39", "--limit", "2")
	if exitStatus(err, new(bytes.Buffer)) != ExitFailed {
		t.Fatalf("status: %v\n%s", err, stderr)
	}
	for _, id := range []string{"demo-2026-0000", "demo-2026-0001"} {
		if n := strings.Count(stderr, id); n != 1 {
			t.Errorf("sample %s named %d times on stderr, want once:\n%s", id, n, stderr)
		}
	}
	if !strings.Contains(stderr, "tally: 2 prompts exceed the model's context of 1024 tokens") {
		t.Errorf("no summing-up line:\n%s", stderr)
	}
}

// TestPlanServerPrefill is item 4 of issue 26: for a server backend (which
// tokenises the prompts itself) plan said "0 prompt tokens to prefill".
func TestPlanServerPrefill(t *testing.T) {
	for _, tc := range []struct {
		p    generate.Plan
		want string
	}{
		{generate.Plan{Counts: map[generate.Status]int{}, Requests: 40, TokensToGenerate: 480, Untokenised: 40}, "an unknown number of prompt tokens (the server tokenises the 40 prompts) to prefill"},
		{generate.Plan{Counts: map[generate.Status]int{}, Requests: 40, PromptTokens: 120, Untokenised: 40}, "120 prompt tokens and the 40 prompts the server tokenises to prefill"},
		{generate.Plan{Counts: map[generate.Status]int{}, Requests: 40, PromptTokens: 4066}, "4066 prompt tokens to prefill"},
	} {
		var b bytes.Buffer
		printPlan(&b, &tc.p, nil)
		if !strings.Contains(b.String(), tc.want) {
			t.Errorf("plan says %q, want %q", b.String(), tc.want)
		}
	}
}
