package tasks

import (
	"strings"
	"testing"
)

// TestSetErrors is item 3 of issue 26: a wrong --set key printed yaml's
// "line 27: field num_fewshot not found in type tasks.Config". It now names
// the task fields (and tally's name for an lm-eval field); a value of the
// wrong type names the type; few-shot examples on a task whose loader
// builds its prompts are refused instead of ignored.
func TestSetErrors(t *testing.T) {
	for _, tc := range []struct {
		task string
		set  map[string]string
		want string
	}{
		{"drop", map[string]string{"num_fewshot": "0"}, "--set num_fewshot: not a task field (lm-eval's num_fewshot is tally's fewshot); the fields are chat, compare_stop, data,"},
		{"drop", map[string]string{"nonsense": "1"}, "--set nonsense: not a task field; the fields are"},
		{"drop", map[string]string{"fewshot": "three"}, "--set fewshot=three: want a whole number"},
		{"drop", map[string]string{"chat": "maybe"}, "--set chat=maybe: want true or false"},
		{"drop", map[string]string{"metrics": "{a: 1}"}, "--set metrics={a: 1}: want a YAML list"},
		{"drop", map[string]string{"fewshot": "-1"}, "field fewshot: -1, want 0 or more"},
		{"leval", map[string]string{"fewshot": "2"}, "the leval loader's prompts take no few-shot examples"},
		{"jsonl", map[string]string{"fewshot": "2"}, "the jsonl loader's prompts take no few-shot examples"},
	} {
		_, err := ResolveWith(tc.task, tc.set)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "yaml:") {
			t.Errorf("%s %v: %v, want %q", tc.task, tc.set, err, tc.want)
		}
	}
	for _, f := range []string{"fewshot", "max_tokens", "stop", "system_prompt"} {
		if !strings.Contains(strings.Join(Fields(), ","), f) {
			t.Errorf("Fields() lacks %s", f)
		}
	}
	if _, err := ResolveWith("drop", map[string]string{"fewshot": "0", "max_tokens": "8"}); err != nil {
		t.Errorf("valid --set: %v", err)
	}
}
