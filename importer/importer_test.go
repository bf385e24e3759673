package importer

import (
	"os"
	"path/filepath"
	"testing"

	"tally/tasks/variant"
)

// TestCollect: an lm-eval log whose documents each have a line per filter
// becomes one batch holding each sample and generation once, a score per
// filter (a setting each), and one finished run of the imported model.
func TestCollect(t *testing.T) {
	dir := t.TempDir()
	var lines string
	for _, filter := range []string{"strict-match", "flexible-extract"} {
		for _, doc := range []string{"0", "1"} {
			lines += `{"doc_id":` + doc + `,"doc":{"q":"question"},"target":"12","arguments":[["Q` + doc + `:",{"until":["Question:"]}]],` +
				`"resps":[["The answer is 12"]],"filtered_resps":["12"],"filter":"` + filter + `","metrics":["exact_match"],"exact_match":1}` + "\n"
		}
	}
	log := filepath.Join(dir, "run", "samples_gsm8k_2024-05-01T10-00-00.123456.jsonl")
	if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(log, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := Files([]string{dir}, false)
	if err != nil || len(files) != 1 || files[0] != log {
		t.Fatalf("Files: %v %v", files, err)
	}
	b, counts, err := Collect(files, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	if counts[log] != 4 || len(b.Samples) != 2 || len(b.Generations) != 2 || len(b.Scores) != 4 || len(b.Runs) != 1 {
		t.Fatalf("counts %v; %d samples, %d generations, %d scores, %d runs", counts, len(b.Samples), len(b.Generations), len(b.Scores), len(b.Runs))
	}
	if r := b.Runs[0]; r.Model != "imported:run" || r.Version != "test" {
		t.Errorf("run %+v", r)
	}
	settings := map[string]bool{}
	for _, s := range b.Scores {
		settings[s.Setting] = true
		if len(b.Variants) != 1 || s.Task != b.Variants[0].Key || variant.Name(s.Task) != "gsm8k" || s.Metric != "exact_match" || s.Value != 1 || s.Prediction != "12" {
			t.Errorf("score %+v", s)
		}
	}
	if !settings["strict-match"] || !settings["flexible-extract"] {
		t.Errorf("settings %v, want one per filter", settings)
	}
}
