package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tally/backends/gomlx"
)

// TestHostileChatTemplate (issue 37): a native model whose chat template
// recurses for ever made `tally run --chat` die of a stack overflow (exit
// 2, nothing stored, nothing said but the runtime's trace). The template
// now renders in a worker process: the run fails with one line naming the
// bound, this process goes on, and the same model with an ordinary
// template runs after it.
func TestHostileChatTemplate(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "q.jsonl")
	if err := os.WriteFile(data, []byte(`{"id":"q1","prompt":"2 plus 3?","answers":["5"]}`+"\n"+`{"id":"q2","prompt":"4 plus 1?","answers":["5"]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	model := func(name, template string) string {
		m := filepath.Join(dir, name)
		if err := os.CopyFS(m, gomlx.DemoFiles()); err != nil {
			t.Fatal(err)
		}
		cfg, _ := json.Marshal(map[string]string{"chat_template": template})
		if err := os.WriteFile(filepath.Join(m, "tokenizer_config.json"), cfg, 0o644); err != nil {
			t.Fatal(err)
		}
		return m
	}
	run := func(m string) (string, error) {
		return execute(t, "run", "--chat", "--model", m, "--tasks", "jsonl", "--data", data, "--max-tokens", "2", "--store", filepath.Join(dir, "c.db"))
	}
	hostile := model("hostile", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}")
	_, err := run(hostile)
	if err == nil || !strings.Contains(err.Error(), "render chat template: past the chat template's bounds: recursed past its stack") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("a recursive chat template: %v, want one line naming the stack's bound", err)
	}
	plain := model("plain", "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}<assistant>")
	if out, err := run(plain); err != nil {
		t.Fatalf("an ordinary chat template after it: %v\n%s", err, out)
	}
}
