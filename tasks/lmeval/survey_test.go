package lmeval

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestSurveyDir surveys the repository's testdata (three task files that
// load; the BBH template, named _yaml, is not a task file) and a folder
// with one file of each other status.
func TestSurveyDir(t *testing.T) {
	sv, err := SurveyDir(repoTestdata)
	if err != nil {
		t.Fatal(err)
	}
	loads, refused, others := sv.Counts()
	if loads != 3 || len(refused) != 0 || len(others) != 0 {
		t.Errorf("testdata: %d load, refused %v, others %v", loads, refused, others)
	}
	dir := t.TempDir()
	writeTask(t, dir, "ok.yaml", base)
	writeTask(t, dir, "mc.yaml", base+"output_type: multiple_choice\n")
	writeTask(t, dir, "fn.yaml", base+"process_docs: !function utils.p\n")
	writeTask(t, dir, "bleu.yaml", base+"metric_list:\n  - metric: bleu\n    aggregation: mean\n")
	writeTask(t, dir, "group.yaml", "group: g\ntask: [t]\n")
	writeTask(t, dir, "py.yaml", "task: p\nclass: !function x.T\n")
	writeTask(t, dir, "bad.yaml", "task: [unclosed\n")
	writeTask(t, dir, "other.yaml", "foo: bar\n")
	sv, err = SurveyDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	loads, refused, others = sv.Counts()
	if loads != 1 || refused["!function in process_docs"] != 1 || refused["aggregation mean"] != 1 ||
		others["output_type: multiple_choice"] != 1 || others["group"] != 1 || others["python task"] != 1 ||
		others["unreadable"] != 1 || others["not a task file"] != 1 {
		t.Errorf("%d load, refused %v, others %v", loads, refused, others)
	}
	var b bytes.Buffer
	if err := sv.Write(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"8 YAML files", "3 generate_until task files: 1 load, 2 refused", "refused: process_docs: !function utils.p", filepath.Base("ok.yaml")} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("survey output lacks %q:\n%s", want, b.String())
		}
	}
}
