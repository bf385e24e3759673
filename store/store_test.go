package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"tally/internal/pgtest"
)

func openTemp(t testing.TB) *Store {
	t.Helper()
	return openAt(t, filepath.Join(t.TempDir(), "t.db"))
}

func openAt(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// engines runs a test against each engine: SQLite, and PostgreSQL when a
// test server is named (pgtest skips that part, saying so, otherwise).
// newPath returns the location of a new, empty store.
func engines(t *testing.T, test func(t *testing.T, newPath func() string)) {
	t.Run("sqlite", func(t *testing.T) {
		test(t, func() string { return filepath.Join(t.TempDir(), "t.db") })
	})
	t.Run("postgres", func(t *testing.T) {
		test(t, func() string { return pgtest.NewDatabase(t) })
	})
}

func gen(i int) Generation {
	return Generation{
		Key: fmt.Sprintf("k%06d", i), Fingerprint: "fp", Task: "t", SampleID: fmt.Sprint(i), PromptTokens: 10,
		Text: "12.5\nmore", IDs: []int{1, 2, 3, 4}, Offsets: []int{0, 2, 4, 5}, NTokens: 4, Budget: 8,
		Finish: "stop", Stops: json.RawMessage(`{"dot":{"seq":".","offset":2}}`),
	}
}

func TestRoundTripAndReopen(t *testing.T) { engines(t, testRoundTripAndReopen) }

func testRoundTripAndReopen(t *testing.T, newPath func() string) {
	ctx := context.Background()
	path := newPath()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	g := gen(1)
	sc := Score{GenKey: g.Key, Task: "t", SampleID: "1", Setting: "dot", SettingKey: ".", Budget: 8, Metric: "em", Value: 1, Prediction: "12"}
	if err := s.PutGenerations(ctx, []Generation{g}, []Score{sc}); err != nil {
		t.Fatal(err)
	}
	// Replacing by key does not duplicate.
	g.Text, g.Continued = "12.5\nmore and more", 1
	if err := s.PutGenerations(ctx, []Generation{g}, []Score{sc}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Generations(ctx, "", []string{g.Key, "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("got %d generations", len(got))
	}
	h := got[g.Key]
	h.GenSeconds, h.RunID = g.GenSeconds, g.RunID
	if !reflect.DeepEqual(h, g) {
		t.Errorf("round trip:\n got %+v\nwant %+v", h, g)
	}
	n, _ := s.Counts(ctx)
	if n["generations"] != 1 || n["scores"] != 1 {
		t.Errorf("counts %v", n)
	}
	sm, err := s.ScoreDigests(ctx, "", []string{g.Key})
	if _, ok := sm.Get(ScoreKey{g.Key, "t", "1", ".", 8}); err != nil || !ok {
		t.Errorf("scored metrics %v %v", sm, err)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(ctx, path); err == nil {
		t.Fatal("opened a store with a newer schema")
	}
}

func TestThroughput(t *testing.T) {
	engines(t, func(t *testing.T, newPath func() string) {
		testThroughput(t, openAt(t, newPath()))
	})
}

func testThroughput(t *testing.T, s *Store) {
	ctx := context.Background()
	if _, ok, _ := s.Throughput(ctx, "fp"); ok {
		t.Fatal("throughput before any run")
	}
	id, err := s.StartRun(ctx, Run{Command: "run", Fingerprint: "fp", Config: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.FinishRun(ctx, id, "done", 100, 50, 4, nil); err != nil {
		t.Fatal(err)
	}
	tps, ok, err := s.Throughput(ctx, "fp")
	if err != nil || !ok || tps != 25 {
		t.Fatalf("throughput %v %v %v", tps, ok, err)
	}
}

// BenchmarkPutGenerations measures committed generation records per second
// in batches of 256 (the scheduler's batching).
func BenchmarkPutGenerations(b *testing.B) {
	ctx := context.Background()
	s := openTemp(b)
	const batch = 256
	gens := make([]Generation, batch)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := range gens {
			gens[j] = gen(i*batch + j)
		}
		if err := s.PutGenerations(ctx, gens, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkReadGenerations100k measures reading 100,000 stored records by key,
// which is what planning does.
func BenchmarkReadGenerations100k(b *testing.B) {
	ctx := context.Background()
	s := openTemp(b)
	const n = 100000
	keys := make([]string, n)
	gens := make([]Generation, 0, 1000)
	for i := 0; i < n; i++ {
		keys[i] = gen(i).Key
		gens = append(gens, gen(i))
		if len(gens) == cap(gens) {
			if err := s.PutGenerations(ctx, gens, nil); err != nil {
				b.Fatal(err)
			}
			gens = gens[:0]
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		got, err := s.Generations(ctx, "fp", keys)
		if err != nil || len(got) != n {
			b.Fatal(len(got), err)
		}
	}
}

// TestScoringSamples: a task's samples read for scoring checks are its
// samples without their prompts, metadata that begins with the cut read
// as the cut alone (as Samples reads it with a cut), and one sample read by its id is the sample stored
// (none for an id or task not stored).
func TestScoringSamples(t *testing.T) { engines(t, testScoringSamples) }

func testScoringSamples(t *testing.T, newPath func() string) {
	ctx := context.Background()
	s, err := Open(ctx, newPath())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const cut = `{"metadata":null,`
	put := []Sample{
		{Task: "t", ID: "1", Prompt: "Q: one\x00two", Refs: json.RawMessage(`["1"]`), Metadata: json.RawMessage(`{"metadata":null,"share_key":""}`)},
		{Task: "t", ID: "2", Prompt: "Q: two", Refs: json.RawMessage(`["2"]`), Metadata: json.RawMessage(`{"metadata":{"a":1},"share_key":"k"}`)},
		{Task: "t", ID: "3", Prompt: "Q: é", Refs: json.RawMessage(`["é"]`), Metadata: json.RawMessage(`{"metadata":nul`)},
		{Task: "t", ID: "4", Prompt: "", Refs: json.RawMessage(`[]`), Metadata: json.RawMessage(`{"métadata":null,"x":1}`)},
		{Task: "u", ID: "1", Prompt: "other task", Refs: json.RawMessage(`[]`), Metadata: json.RawMessage(`{}`)},
	}
	if err := s.PutSamples(ctx, put); err != nil {
		t.Fatal(err)
	}
	all, err := s.Samples(ctx, "t", "")
	if err != nil {
		t.Fatal(err)
	}
	allCut, err := s.Samples(ctx, "t", cut)
	if err != nil {
		t.Fatal(err)
	}
	light := map[string]Sample{}
	if err := s.EachScoringSample(ctx, "t", cut, func(id string, refs, meta []byte) error {
		light[id] = Sample{Task: "t", ID: id, Refs: bytes.Clone(refs), Metadata: bytes.Clone(meta)}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(light) != 4 || len(all) != 4 {
		t.Fatalf("%d samples for scoring, %d in all, want 4", len(light), len(all))
	}
	for id, x := range all {
		want := x
		want.Prompt = ""
		if bytes.HasPrefix(x.Metadata, []byte(cut)) {
			want.Metadata = json.RawMessage(cut)
		}
		if !reflect.DeepEqual(light[id], want) {
			t.Errorf("sample %s for scoring: %+v, want %+v", id, light[id], want)
		}
		if want.Prompt = x.Prompt; !reflect.DeepEqual(allCut[id], want) || len(allCut) != len(all) {
			t.Errorf("sample %s read with its metadata cut: %+v, want %+v", id, allCut[id], want)
		}
		one, ok, err := s.Sample(ctx, "t", id)
		if err != nil || !ok || !reflect.DeepEqual(one, x) {
			t.Errorf("Sample(t, %s) = %+v %v %v, want %+v", id, one, ok, err, x)
		}
	}
	for _, k := range [][2]string{{"t", "9"}, {"v", "1"}} {
		if x, ok, err := s.Sample(ctx, k[0], k[1]); ok || err != nil {
			t.Errorf("Sample(%s, %s) = %+v %v %v, want none", k[0], k[1], x, ok, err)
		}
	}
}

// BenchmarkPutScores measures committed score rows per second as a run
// writes them: batches of 256 generations with the scores of 3 settings
// and 4 metrics each, first written (write), then replaced as a rescore
// replaces stale ones (rewrite).
func BenchmarkPutScores(b *testing.B) {
	ctx := context.Background()
	batch := func(i int) ([]Generation, []Score) {
		const n = 256
		var gens []Generation
		var scores []Score
		for j := range n {
			g := gen(i*n + j)
			gens = append(gens, g)
			for _, set := range []string{".", "\n", ""} {
				for _, m := range []string{"drop.em", "drop.f1", "drop-fixed.em", "drop-fixed.f1"} {
					scores = append(scores, Score{GenKey: g.Key, Task: g.Task, SampleID: g.SampleID, Setting: "s", SettingKey: set, Budget: 8,
						Metric: m, Value: 1, Prediction: "12.5", Digest: fmt.Sprintf("%064d", i)})
				}
			}
		}
		return gens, scores
	}
	for _, mode := range []string{"write", "rewrite"} {
		b.Run(mode, func(b *testing.B) {
			s := openTemp(b)
			if mode == "rewrite" {
				for i := range b.N {
					gens, scores := batch(i)
					if err := s.PutGenerations(ctx, gens, scores); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ResetTimer()
			rows := 0
			for i := range b.N {
				gens, scores := batch(i)
				var err error
				if mode == "write" {
					err = s.PutGenerations(ctx, gens, scores)
				} else {
					err = s.PutScores(ctx, scores)
				}
				if err != nil {
					b.Fatal(err)
				}
				rows += len(scores)
			}
			b.ReportMetric(float64(rows)/b.Elapsed().Seconds(), "scores/s")
		})
	}
}
