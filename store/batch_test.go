package store

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestApply: a batch lands whole (its runs recorded done, never running),
// and a batch that fails part-way stores nothing, no run record either.
func TestApply(t *testing.T) { engines(t, testApply) }

func testApply(t *testing.T, newPath func() string) {
	ctx := context.Background()
	s := openAt(t, newPath())
	sample := Sample{Task: "t", ID: "1", Prompt: "p", Refs: json.RawMessage(`["a"]`)}
	g := gen(1)
	g.Error = "Incorrect API key provided: Bearer abcdef0123456789"
	ids, err := s.Apply(ctx, Batch{Runs: []Run{{Command: "import", Model: "imported:m", Fingerprint: "fp"}},
		Samples: []Sample{sample}, Generations: []Generation{g},
		Scores: []Score{{GenKey: g.Key, Task: "t", SampleID: "1", Setting: "s", Metric: "em", Value: 1, Prediction: "a"}}})
	if err != nil || len(ids) != 1 {
		t.Fatalf("Apply: %v %v", ids, err)
	}
	n, err := s.Counts(ctx)
	if err != nil || n["runs"] != 1 || n["samples"] != 1 || n["generations"] != 1 || n["scores"] != 1 {
		t.Fatalf("counts %v %v", n, err)
	}
	runs, err := s.Runs(ctx)
	if err != nil || len(runs) != 1 || runs[0].Status != "done" {
		t.Errorf("runs %+v %v", runs, err)
	}
	got, err := s.Generations(ctx, "", []string{g.Key})
	if err != nil || strings.Contains(got[g.Key].Error, "abcdef0123456789") {
		t.Errorf("stored error %q %v", got[g.Key].Error, err)
	}
	// A batch whose last write fails (a trigger refuses the score
	// metric "boom") leaves nothing of it: no sample, generation or run.
	trigger := `CREATE TRIGGER boom BEFORE INSERT ON scores WHEN NEW.metric = 'boom' BEGIN SELECT RAISE(ABORT, 'boom'); END`
	if s.Postgres() {
		trigger = `CREATE FUNCTION boom() RETURNS trigger AS $$ BEGIN IF NEW.metric = 'boom' THEN RAISE EXCEPTION 'boom'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql;
			CREATE TRIGGER boom BEFORE INSERT ON scores FOR EACH ROW EXECUTE FUNCTION boom()`
	}
	if _, err := s.db.ExecContext(ctx, trigger); err != nil {
		t.Fatal(err)
	}
	bad := gen(2)
	_, err = s.Apply(ctx, Batch{Runs: []Run{{Command: "import", Model: "imported:m", Fingerprint: "fp"}},
		Samples: []Sample{{Task: "t", ID: "2", Prompt: "p"}}, Generations: []Generation{bad},
		Scores: []Score{{GenKey: bad.Key, Task: "t", SampleID: "2", Metric: "boom", Value: 1}}})
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("Apply of a failing batch: %v", err)
	}
	if m, _ := s.Counts(ctx); m["runs"] != 1 || m["samples"] != 1 || m["generations"] != 1 || m["scores"] != 1 {
		t.Errorf("a failed batch left rows: %v", m)
	}
}
