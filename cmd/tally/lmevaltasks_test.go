package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"tally/datasets"
	"tally/internal/lmevalschema"
	"tally/internal/pyref"
	"tally/tasks"
)

// lmevalCases are the repository's lm-eval task files with their data,
// run on the demo model.
var lmevalCases = []struct {
	yaml, data string
	set        []string
	splits     map[string]string
}{
	{"gsm8k/gsm8k.yaml", "gsm8k/data", nil, map[string]string{"test": "gsm8k/data/main/test.jsonl", "train": "gsm8k/data/main/train.jsonl"}},
	{"bbh/boolean_expressions.yaml", "bbh/data", nil, map[string]string{"test": "bbh/data/boolean_expressions/test.jsonl"}},
	{"triviaqa/triviaqa.yaml", "triviaqa/data", []string{"num_fewshot=2"},
		map[string]string{"validation": "triviaqa/data/rc.nocontext/validation.jsonl", "train": "triviaqa/data/rc.nocontext/train.jsonl"}},
}

// TestLMEvalTasksEndToEnd runs each lm-eval task file of testdata/lmeval
// on the demo model with --stop nl beside the file's until, then checks
// that the run stored a score per sample, setting and "METRIC,FILTER",
// wrote lm-eval files for both settings, that plan finds everything
// complete and rerun with another --stop only continues or reuses, and
// (with python3, jinja2, PyYAML and NumPy) that the stored scores are the
// reference's (testdata/lmeval/reference.py) on the stored predictions.
func TestLMEvalTasksEndToEnd(t *testing.T) {
	td := "../../testdata/lmeval"
	for _, c := range lmevalCases {
		t.Run(filepath.Dir(c.yaml), func(t *testing.T) {
			dir := t.TempDir()
			db, out := filepath.Join(dir, "s.db"), filepath.Join(dir, "out")
			args := []string{"--model", "demo", "--tasks", filepath.Join(td, c.yaml), "--data", filepath.Join(td, c.data), "--store", db}
			for _, s := range c.set {
				args = append(args, "--set", s)
			}
			tallyOut(t, append(append([]string{"run"}, args...), "--stop", `nl=\n`, "--output-path", out)...)
			var set map[string]string
			if len(c.set) > 0 {
				k, v, _ := strings.Cut(c.set[0], "=")
				set = map[string]string{k: v}
			}
			cfg, err := tasks.ResolveWith(filepath.Join(td, c.yaml), set)
			if err != nil {
				t.Fatal(err)
			}
			// One samples file for the task: each of its filters under
			// its own until keeps its name, under the added setting nl it
			// is FILTER@nl.
			filters := map[string]bool{}
			for _, l := range sampleLines(t, out, "demo", cfg.Task) {
				filters[fmt.Sprint(l["filter"])] = true
			}
			for _, f := range cfg.LMEval().Filters() {
				for _, want := range []string{f, f + "@nl"} {
					if !filters[want] {
						t.Errorf("lm-eval samples of %s: no lines of filter %s (filters %v)", cfg.Task, want, filters)
					}
				}
			}
			lmevalschema.Check(t, out)
			scores, preds := storedScores(t, db)
			loaded, err := cfg.Load(tasks.LoadOptions{Data: filepath.Join(td, c.data)})
			if err != nil {
				t.Fatal(err)
			}
			keys := cfg.LMEval().ScoreKeys()
			for _, s := range loaded.Samples {
				for _, setting := range []string{"until", "nl"} {
					for _, k := range keys {
						if _, ok := scores[scoreKey{s.ID, setting, k}]; !ok {
							t.Errorf("no score %s for sample %s under %s", k, s.ID, setting)
						}
					}
				}
			}
			plan := tallyOut(t, append([]string{"plan", "--json", "--stop", `nl=\n`}, args...)...)
			if strings.Contains(plan, `"missing":1`) || !strings.Contains(plan, "complete") {
				t.Errorf("plan after the run: %s", plan)
			}
			_, rerun := runTally(t, built, append([]string{"rerun", "--stop", "dot=."}, args...)...)
			if !strings.Contains(rerun, "0 generated") {
				t.Errorf("rerun with a new stop generated from scratch: %s", rerun)
			}
			compareWithReference(t, td, c.yaml, c.splits, set, loaded.Samples, scores, preds)
		})
	}
}

type scoreKey struct{ id, setting, metric string }

// storedScores reads every stored score and the prediction it scored.
func storedScores(t *testing.T, db string) (map[scoreKey]float64, map[[2]string]string) {
	t.Helper()
	sdb, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	rows, err := sdb.Query(`SELECT sample_id, setting, metric, value, prediction FROM scores`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	vals, preds := map[scoreKey]float64{}, map[[2]string]string{}
	for rows.Next() {
		var k scoreKey
		var v float64
		var p []byte
		if err := rows.Scan(&k.id, &k.setting, &k.metric, &v, &p); err != nil {
			t.Fatal(err)
		}
		vals[k], preds[[2]string{k.id, k.setting}] = v, string(p)
	}
	return vals, preds
}

// compareWithReference scores the stored predictions with the Python
// reference and compares with the stored scores, and the prompts too.
func compareWithReference(t *testing.T, td, yaml string, splits, set map[string]string, samples []datasets.Sample, scores map[scoreKey]float64, preds map[[2]string]string) {
	abs := map[string]string{}
	for k, v := range splits {
		abs[k] = filepath.Join(td, v)
	}
	sort.Slice(samples, func(i, j int) bool {
		a, _ := strconv.Atoi(samples[i].ID)
		b, _ := strconv.Atoi(samples[j].ID)
		return a < b
	})
	var predictions [][]string
	for _, s := range samples {
		predictions = append(predictions, []string{preds[[2]string{s.ID, "until"}], preds[[2]string{s.ID, "nl"}]})
	}
	in := map[string]any{"tasks": []map[string]any{{"yaml": filepath.Join(td, yaml), "splits": abs, "predictions": predictions, "set": set}}}
	var ref struct {
		Results []struct {
			Prompts []string                       `json:"prompts"`
			Scores  [][]map[string]json.RawMessage `json:"scores"`
		} `json:"results"`
	}
	pyref.Run(t, filepath.Join(td, "reference.py"), in, &ref, "jinja2", "yaml", "numpy")
	r := ref.Results[0]
	for i, s := range samples {
		if s.Prompt != r.Prompts[i] {
			t.Errorf("sample %s prompt differs from the reference's:\n tally  %q\n Python %q", s.ID, s.Prompt, r.Prompts[i])
		}
		for p, setting := range []string{"until", "nl"} {
			for k, raw := range r.Scores[i][p] {
				var want float64
				if err := json.Unmarshal(raw, &want); err != nil {
					t.Errorf("sample %s %s: the reference raised %s", s.ID, setting, raw)
					continue
				}
				if got := scores[scoreKey{s.ID, setting, k}]; got != want {
					t.Errorf("sample %s %s %s (prediction %q): tally %v, reference %v", s.ID, setting, k, preds[[2]string{s.ID, setting}], got, want)
				}
			}
		}
	}
}
