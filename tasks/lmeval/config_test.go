package lmeval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// base is a minimal generate_until task; each refusal case adds to it.
const base = "task: t\ntest_split: test\ndoc_to_text: \"Q: {{q}}\"\ndoc_to_target: \"{{a}}\"\n"

func writeTask(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRefusals checks that what tally cannot run as lm-eval would is
// refused in one line naming the field.
func TestRefusals(t *testing.T) {
	cases := []struct{ body, field string }{
		{base + "output_type: multiple_choice\n", "output_type"},
		{base + "output_type: loglikelihood\n", "output_type"},
		{base + "process_docs: !function utils.process_docs\n", "process_docs"},
		{strings.Replace(base, `"Q: {{q}}"`, "!function utils.doc_to_text", 1), "doc_to_text"},
		{base + "process_results: !function utils.process_results\n", "process_results"},
		{base + "metric_list:\n  - metric: rouge\n", "metric_list[0]"},
		{base + "metric_list:\n  - metric: bleu\n    aggregation: mean\n", "metric_list[0].aggregation"},
		{base + "metric_list:\n  - metric: chrf\n    char_order: 4\n", "metric_list[0].char_order"},
		{base + "metric_list:\n  - metric: exact_match\n    aggregation: median\n", "metric_list[0].aggregation"},
		{base + "metric_list:\n  - metric: exact_match\n    ignore_whitespace: true\n", "metric_list[0].ignore_whitespace"},
		{base + "metric_list:\n  - metric: exact_match\n    regexes_to_ignore: ['(?i)x']\n", "metric_list[0].regexes_to_ignore"},
		{base + "generation_kwargs:\n  until: ['\\n']\n  do_sample: true\n", "generation_kwargs.do_sample"},
		{base + "generation_kwargs:\n  temperature: 0.7\n", "generation_kwargs.temperature"},
		{base + "generation_kwargs:\n  num_beams: 4\n", "generation_kwargs.num_beams"},
		{base + "filter_list:\n  - name: f\n    filter:\n      - function: majority_vote\n", "filter_list[0] (f).filter[0]"},
		{base + "filter_list:\n  - name: f\n    filter:\n      - function: !function utils.Filter\n", "filter_list[0] (f).filter[0].function"},
		{base + "filter_list:\n  - name: f\n    filter:\n      - function: regex\n        regex_pattern: '(a)(?(1)b)'\n", "filter_list[0] (f).filter[0].regex_pattern"},
		{base + "filter_list:\n  - name: f\n    filter:\n      - function: take_first\n      - function: lowercase\n", "filter_list[0] (f).filter[1]"},
		{base + "repeats: 5\n", "repeats"},
		{base + "class: !function x.Task\n", "class"},
		{base + "doc_to_choice: ['a', 'b']\n", "doc_to_choice"},
		{base + "fewshot_config:\n  sampler: balanced\n", "fewshot_config.sampler"},
		{base + "unknown_key: 1\n", "unknown_key"},
		{"task: t\ndoc_to_text: x\ndoc_to_target: y\n", "test_split"},
		{"group: g\ntask: [a, b]\n", "group"},
		{base + "unsafe_code: true\n", "unsafe_code"},
		{strings.Replace(base, `"Q: {{q}}"`, `"{% raw %}x{% endraw %}"`, 1), "doc_to_text"},
	}
	dir := t.TempDir()
	for i, c := range cases {
		p := writeTask(t, dir, "t.yaml", c.body)
		_, err := Load(p, nil)
		if err == nil {
			t.Errorf("case %d: no refusal for\n%s", i, c.body)
			continue
		}
		msg := err.Error()
		if strings.Contains(msg, "\n") || !strings.Contains(msg, ": "+c.field+": ") {
			t.Errorf("case %d: %q does not name field %s on one line", i, msg, c.field)
		}
	}
}

// TestYAMLAsPyYAML checks PyYAML's YAML 1.1 scalars, which lm-eval's
// loader uses.
func TestYAMLAsPyYAML(t *testing.T) {
	v, err := parseYAML([]byte("a: yes\nb: 1e3\nc: 1.0e+3\nd: 010\ne: 0o7\nf: ~\ng: '010'\nh: 0x1F\ni: 1_000\nj: .inf\nk: On\nl: \"yes\"\nm: 1:30\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	m := v.(*Map)
	want := map[string]any{"a": true, "b": "1e3", "c": 1000.0, "d": int64(8), "e": "0o7", "f": nil, "g": "010", "h": int64(31),
		"i": int64(1000), "k": true, "l": "yes", "m": int64(90)}
	for k, w := range want {
		if got := mustGet(m, k); got != w {
			t.Errorf("%s: got %#v, want %#v", k, got, w)
		}
	}
	if f, _ := mustGet(m, "j").(float64); f <= 1e308 {
		t.Errorf(".inf read as %v", mustGet(m, "j"))
	}
}

// TestIncludes checks include inheritance (includes in order, the file's
// own keys last, task_list not inherited) and refuses a cycle.
func TestIncludes(t *testing.T) {
	dir := t.TempDir()
	writeTask(t, dir, "_a_yaml", "test_split: test\ndoc_to_text: A\nnum_fewshot: 1\ntask_list: [x]\n")
	writeTask(t, dir, "_b_yaml", "doc_to_text: B\ndoc_to_target: B\n")
	p := writeTask(t, dir, "t.yaml", "include: [_a_yaml, _b_yaml]\ntask: t\nnum_fewshot: 2\n")
	raw, err := loadTaskFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if mustGet(raw, "doc_to_text") != "B" || mustGet(raw, "num_fewshot") != int64(2) || mustGet(raw, "test_split") != "test" {
		t.Errorf("merged %v", raw.Vals)
	}
	if _, ok := raw.Get("task_list"); ok {
		t.Error("task_list inherited")
	}
	writeTask(t, dir, "c1.yaml", "include: c2.yaml\ntask: c\n")
	writeTask(t, dir, "c2.yaml", "include: c1.yaml\n")
	if _, err := loadTaskFile(filepath.Join(dir, "c1.yaml")); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("include cycle: %v", err)
	}
}

func TestIsTaskFile(t *testing.T) {
	for body, want := range map[string]bool{
		base:                             true,
		"include: x.yaml\ntask: t\n":     true,
		"task: t\nloader: jsonl\n":       false,
		"task: t\nloader: drop\nid: x\n": false,
		"not: [a mapping":                false,
	} {
		if got := IsTaskFile([]byte(body)); got != want {
			t.Errorf("%q: %v, want %v", body, got, want)
		}
	}
}

func FuzzParseYAML(f *testing.F) {
	f.Add([]byte(base))
	f.Add([]byte("a: &x [1, {b: *x}]\n<<: {c: 1}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parseYAML(data, "fuzz")
		if err != nil {
			return
		}
		if m, ok := v.(*Map); ok {
			if _, err := parseConfig("fuzz", m); err != nil && strings.Contains(err.Error(), "\n") {
				t.Errorf("refusal on several lines: %q", err)
			}
		}
	})
}

// TestConfigDict: the task's config as lm-eval files record it, and its
// filter pipelines by name (what a metric key "METRIC,FILTER" names).
func TestConfigDict(t *testing.T) {
	task, err := Load("../../testdata/lmeval/gsm8k/gsm8k.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := task.ConfigDict()
	if cfg["task"] != "gsm8k" || cfg["filter_list"] == nil {
		t.Errorf("config %v", cfg)
	}
	fp := task.FilterPipelines()
	if len(fp) != 2 || len(fp["strict-match"]) == 0 || fp["strict-match"][0]["function"] != "regex" || len(fp["flexible-extract"]) == 0 {
		t.Errorf("filter pipelines %v", fp)
	}
	plain, err := Load(writeTask(t, t.TempDir(), "t.yaml", base), nil)
	if err != nil {
		t.Fatal(err)
	}
	if fp := plain.FilterPipelines(); fp == nil || len(fp) != 0 {
		t.Errorf("no filter_list: pipelines %v, want none", fp)
	}
}

// TestBudgetSpellings: the token budget's spellings lm-eval's models read
// (normalize_gen_kwargs), the first of max_gen_toks, max_new_tokens,
// max_tokens, max_completion_tokens winning.
func TestBudgetSpellings(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		kwargs string
		want   int
	}{
		{"", 256},
		{"  max_new_tokens: 64\n", 64},
		{"  max_tokens: 32\n", 32},
		{"  max_completion_tokens: 16\n", 16},
		{"  max_completion_tokens: 16\n  max_new_tokens: 64\n", 64},
		{"  max_new_tokens: 64\n  max_gen_toks: 8\n", 8},
		{"  max_tokens: 5\n  max_new_tokens: 7\n", 7},
		{"  do_sample: false\n  temperature: 0.6\n  max_new_tokens: 3\n", 3},
	} {
		p := writeTask(t, dir, "t.yaml", base+"generation_kwargs:\n  until: ['\\n']\n"+c.kwargs)
		task, err := Load(p, nil)
		if err != nil {
			t.Errorf("%q: %v", c.kwargs, err)
			continue
		}
		if task.MaxGenToks() != c.want {
			t.Errorf("%q: budget %d, want %d", c.kwargs, task.MaxGenToks(), c.want)
		}
	}
}
