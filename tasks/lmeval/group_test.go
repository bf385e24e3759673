package lmeval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadGroup builds a group as lm-eval does: members by task name, by
// tag (in name order), a nested group, a member with overrides and an
// inline task; the group's own task-level keys apply to every member and
// --set last; a task reached twice is loaded once.
func TestLoadGroup(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"_cot_fewshot_template_yaml", "boolean_expressions.yaml"} {
		b, err := os.ReadFile(filepath.Join(repoTestdata, "bbh", f))
		if err != nil {
			t.Fatal(err)
		}
		writeTask(t, dir, f, string(b))
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTask(t, dir, "sub/extra.yaml", "include: ../_cot_fewshot_template_yaml\ntask: bbh_extra\ntag: [bbh_tagged]\ndataset_name: extra\ndoc_to_text: \"Q: {{input}}\"\n")
	writeTask(t, dir, "sub/extra2.yaml", "include: ../_cot_fewshot_template_yaml\ntask: bbh_a_extra\ntag: bbh_tagged\ndataset_name: extra2\ndoc_to_text: \"Q: {{input}}\"\n")
	writeTask(t, dir, "_inner.yaml", "group: inner\ntask: [bbh_cot_fewshot_boolean_expressions]\n")
	p := writeTask(t, dir, "_group.yaml", `group: mine
task:
  - inner
  - bbh_tagged
  - task: bbh_cot_fewshot_boolean_expressions
    num_fewshot: 1
  - task: inline_one
    test_split: test
    doc_to_text: "{{q}}"
    doc_to_target: "{{a}}"
num_fewshot: 2
aggregate_metric_list:
  - metric: exact_match
metadata:
  version: 1.0
`)
	ts, err := LoadGroup(p, map[string]string{"generation_kwargs": "{until: ['\\n'], max_gen_toks: 8}"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range ts {
		names = append(names, x.Name())
		if x.MaxGenToks() != 8 {
			t.Errorf("%s: --set not applied (max_gen_toks %d)", x.Name(), x.MaxGenToks())
		}
	}
	if got := strings.Join(names, " "); got != "bbh_cot_fewshot_boolean_expressions bbh_a_extra bbh_extra mine::inline_one" {
		t.Errorf("members %q", got)
	}
	if ts[0].NumFewshot() != 2 || ts[1].NumFewshot() != 2 {
		t.Errorf("group override num_fewshot: %d, %d", ts[0].NumFewshot(), ts[1].NumFewshot())
	}
	writeTask(t, dir, "_bad.yaml", "group: bad\ntask: [nowhere]\n")
	if _, err := LoadGroup(filepath.Join(dir, "_bad.yaml"), nil); err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("unknown member: %v", err)
	}
}
