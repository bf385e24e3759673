package lmeval

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tally/datasets/jsonl"
)

// TestDataLineBound (issue 23, finding 5): a JSON Lines data file with a
// line past jsonl.MaxLine is refused naming the file and line, even with
// skipBad (the line reader had no bound).
func TestDataLineBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.jsonl")
	long := `{"question":"` + strings.Repeat("q", jsonl.MaxLine) + `"}`
	if err := os.WriteFile(path, []byte(`{"question":"ok"}`+"\n"+long+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, skipBad := range []bool{false, true} {
		_, _, err := readRows(path, skipBad)
		if !errors.Is(err, jsonl.ErrLineTooLong) || !strings.Contains(err.Error(), "test.jsonl line 2: longer than 16 MiB") {
			t.Errorf("readRows(skipBad %v): %v", skipBad, err)
		}
	}
}
