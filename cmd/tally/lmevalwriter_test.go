package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"tally/internal/pyref"
)

// TestLMEvalWriterFields (issue 35, item 1): the samples and results files
// of a task read from an lm-eval task file hold what lm-eval's writer
// holds: arguments' generation kwargs as the task gives them (until in
// its order, no field added), resps what the model returned cut at until,
// filtered_resps the task's filter pipeline's output, doc_hash over the
// document in its column order, a list target as Python's str() writes
// it; configs' target_delimiter lm-eval's default, versions "Yaml"; and a
// --fewshot on a task whose file sets num_fewshot: 0 is ignored, saying
// so as lm-eval does.
func TestLMEvalWriterFields(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	dir := t.TempDir()
	rows := []string{
		`{"zeta": "Who wrote Hamlet?", "answers": ["William Shakespeare", "Shakespeare"], "score": 1.0}`,
		`{"zeta": "Qui a écrit « Le Cid » ?", "answers": ["Corneille"], "score": 2.5}`,
	}
	data := filepath.Join(dir, "test.jsonl")
	if err := os.WriteFile(data, []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	task := filepath.Join(dir, "who.yaml")
	if err := os.WriteFile(task, []byte(`task: who_wrote
output_type: generate_until
test_split: test
num_fewshot: 0
doc_to_text: "Q: {{zeta}}\nA:"
doc_to_target: answers
generation_kwargs:
  until: ["\n", "Q:", "."]
  do_sample: false
  temperature: 0
metric_list:
  - metric: exact_match
filter_list:
  - name: strict-match
    filter:
      - function: regex
        regex_pattern: "NEVER([0-9]+)"
      - function: take_first
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	_, stderr, _ := runStatus(t, "run", "--model", "demo", "--tasks", task, "--data", data, "--store", filepath.Join(dir, "s.db"),
		"--fewshot", "3", "--output-path", out)
	if !strings.Contains(stderr, "num_fewshot has been set to 0 for who_wrote in its config. Manual configuration will be ignored.") {
		t.Errorf("no lm-eval line about num_fewshot 0: %s", stderr)
	}
	_, res := lmevalResults(t, out, "demo")
	cfg := res["configs"].(map[string]any)["who_wrote"].(map[string]any)
	if cfg["target_delimiter"] != " " || res["versions"].(map[string]any)["who_wrote"] != "Yaml" || res["n-shot"].(map[string]any)["who_wrote"] != 0.0 {
		t.Errorf("results: target_delimiter %q, version %v, n-shot %v", cfg["target_delimiter"], res["versions"], res["n-shot"])
	}
	var hashes []string
	pyref.Run(t, "testdata/pydoc_hash.py", rows, &hashes)
	lines := sampleLines(t, out, "demo", "who_wrote")
	files, _ := filepath.Glob(filepath.Join(out, "demo", "samples_who_wrote_*.jsonl"))
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	texts := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	for i, l := range lines {
		args := l["arguments"].(map[string]any)["gen_args_0"].(map[string]any)
		if want := map[string]any{"until": []any{"\n", "Q:", "."}, "do_sample": false, "temperature": 0.0}; !reflect.DeepEqual(args["arg_1"], want) {
			t.Errorf("line %d: arg_1 %v, want the task's generation_kwargs %v", i, args["arg_1"], want)
		}
		if !strings.Contains(texts[i], `"arg_1": {"until": ["\n", "Q:", "."], "do_sample": false, "temperature": 0.0}`) {
			t.Errorf("line %d: %s\nwant arg_1 as the task gives it, until first and in its order, temperature a float", i, texts[i])
		}
		tally := l["tally"].(map[string]any)
		resp := l["resps"].([]any)[0].([]any)[0].(string)
		if strings.ContainsAny(resp, "\n.") || !strings.HasPrefix(tally["raw"].(string), resp) {
			t.Errorf("line %d: resps %q, want the continuation %q cut at until", i, resp, tally["raw"])
		}
		if f := l["filtered_resps"].([]any)[0]; f != "[invalid]" {
			t.Errorf("line %d: filtered_resps %v, want the regex filter's fallback [invalid]", i, f)
		}
		if l["doc_hash"] != hashes[i] {
			t.Errorf("line %d: doc_hash %v, want lm-eval's %v", i, l["doc_hash"], hashes[i])
		}
	}
	if lines[0]["target"] != "['William Shakespeare', 'Shakespeare']" {
		t.Errorf("list target %q, want Python's str() of it", lines[0]["target"])
	}
}
