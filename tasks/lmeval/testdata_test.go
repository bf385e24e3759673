package lmeval

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"tally/internal/pyref"
)

// repoTestdata is the repository's testdata/lmeval: task files in
// lm-eval's format stating GSM8K's, a BBH cot_fewshot subtask's and
// TriviaQA's configuration, with small data files.
const repoTestdata = "../../testdata/lmeval"

type refTask struct {
	YAML        string            `json:"yaml"`
	Splits      map[string]string `json:"splits"`
	Predictions [][]string        `json:"predictions"`
	Set         map[string]string `json:"set,omitempty"`
	Seed        int64             `json:"seed,omitempty"`
}

// predictions are model outputs (already cut at until) that exercise
// each task's filters: numbers with commas, dollars and periods, several
// numbers, none; the BBH lookbehind with and without a final period;
// TriviaQA aliases with case, punctuation and white space.
var predictions = map[string][]string{
	"gsm8k": {"He has 12 left.\n#### 12", "#### 1,350", "So she has $25.", "It was -5 degrees.", "#### 29.50\n\n",
		"no number here", "12.", " 6 ", "#### 7 then 8 and 9", "$1,350.00"},
	"bbh":      {"So the answer is True.", "the answer is False", "So the answer is True", "So the answer is (A).", "", "the answer is the answer is True."},
	"triviaqa": {"Paris", " paris ", "O'Hare", "City of Light", "au", "Bizet!", "six", "London", "Georges  Bizet", "O\"Hare"},
}

// refTasks are the testdata tasks as the reference and the Go code both
// run them, with variants (TriviaQA with 2 shots, whose sampler draws 3
// and drops the document itself; GSM8K with another seed and 0 shots).
func refTasks() []refTask {
	td := func(p ...string) string { return filepath.Join(append([]string{repoTestdata}, p...)...) }
	gsm := map[string]string{"test": td("gsm8k/data/main/test.jsonl"), "train": td("gsm8k/data/main/train.jsonl")}
	bbh := map[string]string{"test": td("bbh/data/boolean_expressions/test.jsonl")}
	tq := map[string]string{"validation": td("triviaqa/data/rc.nocontext/validation.jsonl"), "train": td("triviaqa/data/rc.nocontext/train.jsonl")}
	out := []refTask{
		{YAML: td("gsm8k/gsm8k.yaml"), Splits: gsm},
		{YAML: td("gsm8k/gsm8k.yaml"), Splits: gsm, Seed: 42},
		{YAML: td("gsm8k/gsm8k.yaml"), Splits: gsm, Set: map[string]string{"num_fewshot": "0"}},
		{YAML: td("bbh/boolean_expressions.yaml"), Splits: bbh},
		{YAML: td("triviaqa/triviaqa.yaml"), Splits: tq},
		{YAML: td("triviaqa/triviaqa.yaml"), Splits: tq, Set: map[string]string{"num_fewshot": "2"}},
	}
	for i := range out {
		name := map[string]string{"gsm8k.yaml": "gsm8k", "boolean_expressions.yaml": "bbh", "triviaqa.yaml": "triviaqa"}[filepath.Base(out[i].YAML)]
		n := map[string]int{"gsm8k": 6, "bbh": 5, "triviaqa": 5}[name]
		for d := 0; d < n; d++ {
			out[i].Predictions = append(out[i].Predictions, predictions[name])
		}
	}
	return out
}

type refTaskOut struct {
	Prompts []string                       `json:"prompts"`
	Targets []json.RawMessage              `json:"targets"`
	Scores  [][]map[string]json.RawMessage `json:"scores"`
}

type refOut struct {
	Python  string       `json:"python"`
	Results []refTaskOut `json:"results"`
}

func checkTestdata(t *testing.T, ref refOut, source string) {
	tasks := refTasks()
	if len(ref.Results) != len(tasks) {
		t.Fatalf("%s: %d results for %d tasks (regenerate: go test ./tasks/lmeval -run TestTestdataAgainstPython -update)", source, len(ref.Results), len(tasks))
	}
	for i, rt := range tasks {
		set := map[string]string{}
		for k, v := range rt.Set {
			set[k] = v
		}
		if rt.Seed != 0 {
			set["fewshot_seed"] = json.Number(itoa(rt.Seed)).String()
		}
		task, err := Load(rt.YAML, set)
		if err != nil {
			t.Fatalf("%s: %v", rt.YAML, err)
		}
		spec := ""
		for split, f := range rt.Splits {
			if spec != "" {
				spec += ","
			}
			spec += split + "=" + f
		}
		loaded, err := task.Load(spec, false)
		if err != nil {
			t.Fatalf("%s: %v", rt.YAML, err)
		}
		want := ref.Results[i]
		if len(loaded.Samples) != len(want.Prompts) {
			t.Fatalf("%s: %d samples, Python %d", rt.YAML, len(loaded.Samples), len(want.Prompts))
		}
		score := task.Scorer()
		for d, s := range loaded.Samples {
			if s.Prompt != want.Prompts[d] {
				t.Errorf("%s %v doc %d prompt:\n Go     %q\n Python %q", rt.YAML, rt.Set, d, s.Prompt, want.Prompts[d])
			}
			var g, w any
			json.Unmarshal(s.References, &g)
			json.Unmarshal(want.Targets[d], &w)
			if gb, wb := mustJSON(g), mustJSON(w); gb != wb {
				t.Errorf("%s doc %d target: Go %s, Python %s", rt.YAML, d, gb, wb)
			}
			for p, pred := range rt.Predictions[d] {
				got, err := score(pred, s)
				wantScores := want.Scores[d][p]
				if _, pyErr := wantScores["error"]; pyErr {
					if err == nil {
						t.Errorf("%s doc %d %q: Python raises %s, Go scored %v", rt.YAML, d, pred, wantScores["error"], got)
					}
					continue
				}
				if err != nil {
					t.Errorf("%s doc %d %q: %v", rt.YAML, d, pred, err)
					continue
				}
				for k, raw := range wantScores {
					var wv float64
					json.Unmarshal(raw, &wv)
					if gv, ok := got[k]; !ok || gv != wv {
						t.Errorf("%s doc %d %q %s: Go %v, Python %v", rt.YAML, d, pred, k, got[k], wv)
					}
				}
				if len(got) != len(wantScores) {
					t.Errorf("%s doc %d %q: Go keys %v, Python %v", rt.YAML, d, pred, got, wantScores)
				}
			}
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestTestdataAgainstGolden compares the testdata tasks' prompts, targets
// and scores with the reference's, recorded in testdata/expected.json.
func TestTestdataAgainstGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref refOut
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	checkTestdata(t, ref, "expected.json (Python "+ref.Python+")")
}

// TestTestdataAgainstPython runs testdata/lmeval/reference.py (lm-eval's
// prompt building and scoring, transcribed, with jinja2, PyYAML, NumPy
// and CPython's random) on this machine and compares prompts byte for
// byte, targets and every score.
func TestTestdataAgainstPython(t *testing.T) {
	var ref refOut
	pyref.Run(t, filepath.Join(repoTestdata, "reference.py"), map[string]any{"tasks": refTasks()}, &ref, "jinja2", "yaml", "numpy")
	checkTestdata(t, ref, "python3 "+ref.Python)
	if *update {
		b, _ := json.MarshalIndent(ref, "", " ")
		if err := os.WriteFile("testdata/expected.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
