package tasks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// variantKey resolves spec under set, loads it (data: "" for the task's
// own) and returns its variant's key.
func variantKey(t *testing.T, spec string, set map[string]string, data string, chat bool) string {
	t.Helper()
	c, err := ResolveWith(spec, set)
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Load(LoadOptions{Data: data, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	rec := c.Variant(l, VariantOptions{Chat: chat, TaskSpec: spec, Set: set})
	if rec.Key != rec.Spec.Key() || !strings.HasPrefix(rec.Key, c.Task+"#") {
		t.Fatalf("key %q of spec %+v", rec.Key, rec.Spec)
	}
	Keyed(l, rec)
	for _, s := range l.Samples {
		if s.Task != rec.Key {
			t.Fatalf("sample %s under %q, want %q", s.ID, s.Task, rec.Key)
		}
	}
	return rec.Key
}

// TestVariant: what shapes prompts or scoring makes another variant (the
// few-shot count and seed, a template, the data's bytes, chat, any other
// config field); the stop settings, the budget, the metrics and where the
// data file lies do not.
func TestVariant(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "a.jsonl")
	embedded, err := builtinFS.ReadFile("builtin/demo.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data, embedded, 0o644); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(dir, "b.jsonl")
	if err := os.WriteFile(moved, embedded, 0o644); err != nil {
		t.Fatal(err)
	}
	edited := filepath.Join(dir, "c.jsonl")
	if err := os.WriteFile(edited, []byte(strings.Replace(string(embedded), "Bulls", "Bears", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	base := variantKey(t, "drop", nil, data, false)
	for _, tc := range []struct {
		name string
		set  map[string]string
		data string
		chat bool
		same bool
	}{
		{"same", nil, data, false, true},
		{"moved data", nil, moved, false, true},
		{"stop", map[string]string{"stop": "{x: [X]}"}, data, false, true},
		{"compare_stop", map[string]string{"compare_stop": "{}"}, data, false, true},
		{"max_tokens", map[string]string{"max_tokens": "64"}, data, false, true},
		{"metrics", map[string]string{"metrics": "[drop]"}, data, false, true},
		{"fewshot 0", map[string]string{"fewshot": "0"}, data, false, false},
		{"fewshot seed", map[string]string{"fewshot_seed": "7"}, data, false, false},
		{"template", map[string]string{"prompt": `"Q: {{.question}}"`}, data, false, false},
		{"description", map[string]string{"description": "other"}, data, false, false},
		{"edited data", nil, edited, false, false},
		{"chat", nil, data, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := variantKey(t, "drop", tc.set, tc.data, tc.chat); (got == base) != tc.same {
				t.Errorf("key %s against %s: same %v, want %v", got, base, got == base, tc.same)
			}
		})
	}
}

// TestVariantLMEval: an lm-eval task's variant follows its config
// (num_fewshot) but not generation_kwargs' until and max_gen_toks.
func TestVariantLMEval(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "test.jsonl")
	rows := `{"q": "1+1", "a": "2"}` + "\n" + `{"q": "2+2", "a": "4"}` + "\n" + `{"q": "3+3", "a": "6"}` + "\n"
	if err := os.WriteFile(data, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	task := func(extra string) string {
		p := filepath.Join(dir, "t"+strings.ReplaceAll(strings.ReplaceAll(extra, " ", ""), ":", "")+".yaml")
		body := "task: sums\noutput_type: generate_until\ntest_split: test\ndoc_to_text: \"Q: {{q}}\\nA:\"\ndoc_to_target: \"{{a}}\"\n" +
			"metric_list:\n  - metric: exact_match\n" + extra
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := variantKey(t, task(""), nil, data, false)
	if got := variantKey(t, task("generation_kwargs:\n  until: [\"\\n\"]\n  max_gen_toks: 9\n"), nil, data, false); got != base {
		t.Errorf("until and max_gen_toks made another variant: %s, %s", got, base)
	}
	if got := variantKey(t, task(""), map[string]string{"fewshot": "2"}, data, false); got == base {
		t.Errorf("num_fewshot 2 is the same variant as 0")
	}
}
