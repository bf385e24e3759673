package main

import (
	"path/filepath"
	"strings"
	"testing"

	"tally/internal/lmevalcli"
)

// TestLMEvalHabits is item 3 of issue 34: lm-eval's spellings mean what
// they mean there. --limit 0.1 keeps ceil(40 × 0.1) = 4 of the demo's 40
// samples and says so (it was strconv.ParseInt's error); --batch_size auto
// is tally's own choice, said once (it was "invalid argument for
// --concurrency"); --task gets "did you mean --tasks"; --model vllm
// --model_args pretrained=demo is refused naming the forms tally has (it
// ran the demo model).
func TestLMEvalHabits(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	for _, tc := range []struct {
		args    []string
		wantErr string // in the one-line error ("" for success)
		stderr  string // once on stderr, on success
		stored  int    // generations in the store after it
	}{
		{[]string{"run", "--model", "demo", "--tasks", "demo", "--limit", "0.1"}, "",
			"tally: task demo: --limit 0.1: 4 of the 40 samples (lm-eval's rule for a limit below 1: ceil(40 × 0.1))", 4},
		{[]string{"run", "--model", "demo", "--tasks", "demo", "--limit", "6", "--batch_size", "auto"}, "", lmevalcli.AutoNote, 6},
		{[]string{"run", "--model", "demo", "--task", "demo"}, "unknown flag --task for `tally run`: did you mean --tasks?", "", 6},
		{[]string{"plan", "--model", "demo", "--tasks", "demo", "--max_token", "3"}, "did you mean --max-tokens?", "", 6},
		{[]string{"run", "--model", "vllm", "--model_args", "pretrained=demo", "--tasks", "demo"},
			"--model vllm is lm-eval's model type for a backend tally does not have", "", 6},
		{[]string{"run", "--model", "sglang", "--model_args", "pretrained=demo", "--tasks", "demo"}, lmevalcli.ModelForms, "", 6},
	} {
		_, stderr, err := execute2(t, append(tc.args, "--store", db)...)
		name := strings.Join(tc.args, " ")
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("tally %s: %v", name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n")):
			t.Errorf("tally %s: error %v, want one line with %q", name, err, tc.wantErr)
		case tc.stderr != "" && strings.Count(stderr, tc.stderr) != 1:
			t.Errorf("tally %s: stderr says %q %d times, want once:\n%s", name, tc.stderr, strings.Count(stderr, tc.stderr), stderr)
		}
		if n := storeCounts(t, db)["generations"]; n != tc.stored {
			t.Errorf("tally %s: %d generations stored, want %d", name, n, tc.stored)
		}
	}
}
