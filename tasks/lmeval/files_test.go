package lmeval

import (
	"encoding/json"
	"testing"
)

// TestGenerationKwargs: generation_kwargs as lm-eval's TaskConfig holds it
// after __post_init__ (what each request carries): as given, temperature
// a float, until added when absent; default_gen_kwargs when absent.
func TestGenerationKwargs(t *testing.T) {
	base := "task: t\noutput_type: generate_until\ntest_split: test\ndoc_to_text: q\ndoc_to_target: a\n"
	for _, tc := range []struct{ name, extra, want string }{
		{"absent", "", `{"temperature":0.0,"do_sample":false,"max_gen_toks":256,"until":["\n\n"]}`},
		{"as given", "generation_kwargs:\n  until: [\"b\", \"a\"]\n  temperature: 0\n  do_sample: false\n",
			`{"until":["b","a"],"temperature":0.0,"do_sample":false}`},
		{"no until", "fewshot_delimiter: \"##\"\ngeneration_kwargs:\n  max_gen_toks: 7\n", `{"max_gen_toks":7,"until":["##"]}`},
		{"empty", "generation_kwargs: {}\n", `{"until":["\n\n"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			task, err := Load(writeTask(t, t.TempDir(), "t.yaml", base+tc.extra), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(task.GenerationKwargs())
			if err != nil || string(got) != tc.want {
				t.Errorf("GenerationKwargs = %s (%v), want %s", got, err, tc.want)
			}
		})
	}
}

// TestExplicitZeroShot: --fewshot (lm-eval's --num_fewshot) never
// overrides a task file's num_fewshot: 0, and overrides any other.
func TestExplicitZeroShot(t *testing.T) {
	base := "task: t\noutput_type: generate_until\ntest_split: test\ndoc_to_text: q\ndoc_to_target: a\n"
	for _, tc := range []struct {
		name, extra string
		shots       int
		kept        bool
	}{
		{"zero in the file", "num_fewshot: 0\n", 0, true},
		{"two in the file", "num_fewshot: 2\n", 3, false},
		{"none in the file", "", 3, false},
	} {
		task, err := Load(writeTask(t, t.TempDir(), "t.yaml", base+tc.extra), map[string]string{"fewshot": "3"})
		if err != nil {
			t.Fatal(err)
		}
		if task.NumFewshot() != tc.shots || task.ExplicitZeroShot() != tc.kept {
			t.Errorf("%s: %d shots, kept %v; want %d, %v", tc.name, task.NumFewshot(), task.ExplicitZeroShot(), tc.shots, tc.kept)
		}
	}
}
