package importer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// logOf is an lm-eval samples log of docs documents, a line per document
// under each filter, in lm-eval's order (filter by filter).
func logOf(docs int, filters ...string) []string {
	var lines []string
	for _, f := range filters {
		for d := range docs {
			lines = append(lines, fmt.Sprintf(`{"doc_id":%d,"doc":{"q":"q%d"},"target":"%d","arguments":[["Q%d:",{"until":["\n"]}]],`+
				`"resps":[["%d"]],"filtered_resps":["%d"],"filter":%q,"metrics":["exact_match"],"exact_match":1}`, d, d, d, d, d, d, f))
		}
	}
	return lines
}

// TestImportChecksCounts (issue 37, item 5): an lm-eval samples log is
// imported only when it holds, under each filter, the samples the
// results file of its run declares (n-samples effective); a log cut at a
// line boundary, or missing a filter's lines, is refused; a log with no
// results file, or whose results file declares nothing for its task, is
// read as before; a results file that is a FIFO is refused, not opened.
func TestImportChecksCounts(t *testing.T) {
	const date = "2024-05-01T10-00-00.123456"
	results := `{"n-samples":{"gsm8k":{"original":100,"effective":4}},"configs":{"gsm8k":{"filter_list":[{"name":"strict-match"},{"name":"flexible-extract"}]}}}`
	full := logOf(4, "strict-match", "flexible-extract")
	// tally writes no line of a sample under a setting it has no score
	// under, and says so per filter.
	tallyResults := `{"n-samples":{"gsm8k":{"effective":4}},"tally":{"tasks":{"gsm8k":{"filters":{"strict-match":{"samples":4},"flexible-extract":{"samples":2}}}}}}`
	tests := []struct {
		name    string
		lines   []string
		results string // "" for none; "fifo" for a FIFO
		want    string // "" for an import
	}{
		{"whole", full, results, ""},
		{"cut at a line boundary", full[:6], results, "holds 2 samples under filter \"flexible-extract\", but"},
		{"a filter's lines missing", full[:4], results, "holds 0 samples under filter \"flexible-extract\""},
		{"one sample short under each", append(full[:3:3], full[4:7]...), results, "holds 3 samples under filter"},
		{"tally's counts per filter", full[:6], tallyResults, ""},
		{"tally's counts per filter, cut", full[:5], tallyResults, "holds 1 samples under filter \"flexible-extract\", but"},
		{"no filter list: each filter the log holds", full[:6], `{"n-samples":{"gsm8k":{"effective":4}}}`, "holds 2 samples under filter \"flexible-extract\""},
		{"no results file", full[:6], "", ""},
		{"nothing declared for the task", full[:6], `{"n-samples":{"other":{"effective":9}}}`, ""},
		{"a FIFO as results file", full, "fifo", "named pipe"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			log := filepath.Join(dir, "samples_gsm8k_"+date+".jsonl")
			if err := os.WriteFile(log, []byte(strings.Join(tc.lines, "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			res := filepath.Join(dir, "results_"+date+".json")
			switch tc.results {
			case "":
			case "fifo":
				if err := syscall.Mkfifo(res, 0o644); err != nil {
					t.Fatal(err)
				}
			default:
				if err := os.WriteFile(res, []byte(tc.results), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			_, _, err := Collect([]string{log}, "", "test")
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("Collect: %v, want %q", err, tc.want)
			}
		})
	}
}

// TestImportSettingNames (issue 37, item 5): a log whose filter would
// name a stop setting that --stop refuses (a path separator, "..", a
// control character, "=") is refused, naming the file and line.
func TestImportSettingNames(t *testing.T) {
	for _, filter := range []string{"../../escape", `a\b`, "..", "tab\there", "k=v"} {
		dir := t.TempDir()
		log := filepath.Join(dir, "samples_t_2024-05-01T10-00-00.123456.jsonl")
		if err := os.WriteFile(log, []byte(strings.Join(logOf(1, filter), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Collect([]string{log}, "", "test"); err == nil || !strings.Contains(err.Error(), log+" line 1: setting name") {
			t.Errorf("filter %q: %v; want it refused", filter, err)
		}
	}
}
