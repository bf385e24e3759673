package drop

import (
	"os"
	"path/filepath"
	"strings"
	"tally/internal/sharedtest"
	"testing"
)

func sharedData(t testing.TB, rel string) string {
	t.Helper()
	return sharedtest.Path(t, "data", rel)
}

func TestLoadOriginal(t *testing.T) {
	qs, err := Load(sharedData(t, "drop/drop_dataset_dev.subset.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 40 {
		t.Fatalf("got %d questions, want 40", len(qs))
	}
	if qs[0].SectionID != "nfl_1184" || qs[0].Passage == "" || len(qs[0].Answer) == 0 {
		t.Errorf("first question %+v", qs[0])
	}
}

func TestLoadBad(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ name, body, errSub string }{
		{"x.json", `{"s1": {"passage": "", "qa_pairs": []}}`, "empty passage"},
		{"y.json", `{"s1": {"passage": "p", "qa_pairs": [{"question": "q"}]}}`, "question 0"},
		{"z.jsonl", "{\"query_id\":\"1\",\"passage\":\"p\",\"question\":\"q\",\"answer\":{}}\n{\"query_id\":\"2\",\"passage\":\"p\"}\n", "line 2"},
		{"w.json", `{"s1": `, "w.json"},
	}
	for _, tc := range tests {
		p := filepath.Join(dir, tc.name)
		os.WriteFile(p, []byte(tc.body), 0o644)
		if _, err := Load(p); err == nil || !strings.Contains(err.Error(), tc.errSub) {
			t.Errorf("%s: error %v, want containing %q", tc.name, err, tc.errSub)
		}
	}
}

// TestLoadRowsEmbedded reads Hugging Face rows from bytes, as the demo
// task's embedded data is read, with errors naming the data and line.
func TestLoadRowsEmbedded(t *testing.T) {
	row := `{"section_id":"s","query_id":"q1","passage":"Tom ran 7.5 miles.","question":"Tom ran how many miles?",` +
		`"answer":{"number":"7.5","date":{"day":"","month":"","year":""},"spans":[]},"validated_answers":{"number":[],"date":[],"spans":[]}}`
	qs, err := LoadRows([]byte(row+"\n"), "embedded:x.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || qs[0].QueryID != "q1" || qs[0].Passage != "Tom ran 7.5 miles." {
		t.Fatalf("questions %+v", qs)
	}
	if _, err := LoadRows([]byte(row+"\n{\"query_id\":\"2\"}\n"), "embedded:x.jsonl"); err == nil || !strings.Contains(err.Error(), "embedded:x.jsonl line 2") {
		t.Errorf("bad second row: error %v", err)
	}
}
