package lmeval

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tally/datasets/jsonl"
	"tally/internal/hostiletest"
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

// TestDataRowBound (issue 37, item 3): an element of a .json data file
// (one JSON array) longer than jsonl.MaxLine is refused as a line of JSON
// Lines is, with no more of it read (a 100 MB element took 6 GB, the file
// read and decoded whole); a row nested millions deep is an error, where
// it overflowed the goroutine's stack (a crash).
func TestDataRowBound(t *testing.T) {
	dir := t.TempDir()
	long := filepath.Join(dir, "test.json")
	row := `{"question":"` + strings.Repeat("q", jsonl.MaxLine+1<<20) + `"}`
	if err := os.WriteFile(long, []byte(`[{"question":"ok"}, `+row+`]`), 0o644); err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(dir, "deep.jsonl")
	if err := os.WriteFile(deep, []byte(`{"question": `+strings.Repeat("[", 6<<20)+strings.Repeat("]", 6<<20)+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := filepath.Join(dir, "ok.json")
	if err := os.WriteFile(ok, []byte("\ufeff[{\"question\": \"a\"}, {\"question\": [1, {\"b\": \"]\"}]}]"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, err string }{
		{long, "test.json element 2: longer than 16 MiB, the most tally reads in one row"},
		{deep, "nested more than 10000 deep"},
		{ok, ""},
	} {
		var rows []*Map
		var err error
		hostiletest.Bounded(t, hostiletest.Bytes, func() { rows, _, err = readRows(tc.path, false) })
		if tc.err == "" {
			if err != nil || len(rows) != 2 {
				t.Errorf("%s: %d rows, %v", filepath.Base(tc.path), len(rows), err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", filepath.Base(tc.path), err, tc.err)
		}
	}
}
