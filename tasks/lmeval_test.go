package tasks

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"tally/generate"
)

// TestLMEvalTaskFile resolves the repository's GSM8K task file in
// lm-eval's format: its until becomes the "until" setting, its filters
// and metric the score keys, and --data a SPLIT=FILE list.
func TestLMEvalTaskFile(t *testing.T) {
	c, err := ResolveWith("../testdata/lmeval/gsm8k/gsm8k.yaml", map[string]string{"num_fewshot": "2"})
	if err != nil {
		t.Fatal(err)
	}
	if c.LMEval() == nil || c.Task != "gsm8k" || c.Loader != "lm-eval" || c.MaxTokens != 256 {
		t.Fatalf("config %+v", c)
	}
	if got := strings.Join(c.Metrics, " "); got != "exact_match,strict-match exact_match,flexible-extract" {
		t.Errorf("metrics %q", got)
	}
	sets := c.Settings()
	if len(sets) != 1 || sets[0].Name != "until" || strings.Join(sets[0].Seqs, "|") != "Question:|</s>|<|im_end|>" {
		t.Errorf("settings %v", sets)
	}
	loaded, err := c.Load(LoadOptions{Data: "../testdata/lmeval/gsm8k/data", Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(loaded.Samples) != 2 || loaded.Samples[0].ID != "0" || strings.Count(loaded.Samples[0].Prompt, "Question:") != 3 {
		t.Errorf("samples %+v", loaded.Samples)
	}
	vals, err := c.Scorer()("So 12.\n#### 12", loaded.Samples[0])
	if err != nil || vals["exact_match,strict-match"] != 1 || vals["exact_match,flexible-extract"] != 1 {
		t.Errorf("scores %v %v", vals, err)
	}
	if !strings.Contains(c.ScoringSpec(), "flexible-extract") {
		t.Errorf("spec %s", c.ScoringSpec())
	}
}

// TestSettingsWith: --stop replaces a tally task's settings and adds to
// an lm-eval task's until (unless it names "until" itself).
func TestSettingsWith(t *testing.T) {
	nl := generate.StopSetting{Name: "nl", Seqs: []string{"\n"}}
	lm, err := Resolve("../testdata/lmeval/triviaqa/triviaqa.yaml")
	if err != nil {
		t.Fatal(err)
	}
	names := func(ss []generate.StopSetting) string {
		var out []string
		for _, s := range ss {
			out = append(out, s.Name)
		}
		return strings.Join(out, ",")
	}
	if got := names(lm.SettingsWith([]generate.StopSetting{nl})); got != "until,nl" {
		t.Errorf("lm-eval task with --stop nl: %s", got)
	}
	if got := names(lm.SettingsWith([]generate.StopSetting{{Name: "until", Seqs: []string{"."}}, nl})); got != "until,nl" {
		t.Errorf("lm-eval task with --stop until: %s", got)
	}
	drop, err := Resolve("drop")
	if err != nil {
		t.Fatal(err)
	}
	if got := names(drop.SettingsWith([]generate.StopSetting{nl})); got != "nl" {
		t.Errorf("tally task with --stop nl: %s", got)
	}
	if got := names(drop.SettingsWith(nil)); got != "dot,nl" {
		t.Errorf("tally task without --stop: %s", got)
	}
}

// TestLMEvalSampleRow: an lm-eval task's sample carries its document,
// target and doc_id as every sample does (Doc, Target, Index), and only
// once: its metadata (stored, digested into every score, and written
// again in lm-eval files) holds what scoring needs, not the document.
// NoDocs leaves the document out, as for any task.
func TestLMEvalSampleRow(t *testing.T) {
	c, err := ResolveWith("../testdata/lmeval/gsm8k/gsm8k.yaml", map[string]string{"num_fewshot": "2"})
	if err != nil {
		t.Fatal(err)
	}
	opt := LoadOptions{Data: "../testdata/lmeval/gsm8k/data", Limit: 3}
	full, err := c.Load(opt)
	if err != nil {
		t.Fatal(err)
	}
	opt.NoDocs = true
	bare, err := c.Load(opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Samples) != 3 || len(bare.Samples) != 3 {
		t.Fatalf("%d samples, %d without docs", len(full.Samples), len(bare.Samples))
	}
	for i, s := range full.Samples {
		var doc map[string]any
		if err := json.Unmarshal(s.Doc, &doc); err != nil || doc["question"] == nil || doc["answer"] == nil {
			t.Errorf("sample %d: doc %s (%v)", i, s.Doc, err)
		}
		if s.Index == nil || *s.Index != i || s.Target == nil || !strings.HasPrefix(*s.Target, "He makes 24") && i == 0 {
			t.Errorf("sample %d: index %v, target %v", i, s.Index, s.Target)
		}
		for _, k := range []string{"doc", "doc_id", "target"} {
			if _, ok := s.Metadata[k]; ok {
				t.Errorf("sample %d: metadata holds %q beside the sample's own field", i, k)
			}
		}
		if bare.Samples[i].Doc != nil {
			t.Errorf("sample %d: NoDocs kept the doc %s", i, bare.Samples[i].Doc)
		}
		s.Doc = nil
		if !reflect.DeepEqual(s, bare.Samples[i]) {
			t.Errorf("sample %d: loaded without docs, it differs in more than its Doc", i)
		}
	}
}
