package store

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// TestDigests: a generation's digests are found by its key, sample,
// setting and budget; scores of one key under two digests read as
// MixedDigest, whether they are added one by one or come from two parts
// of a read merged.
func TestDigests(t *testing.T) {
	k := func(gen, setting string, budget int) ScoreKey {
		return ScoreKey{GenKey: gen, Task: "t", SampleID: "s-" + gen, SettingKey: setting, Budget: budget}
	}
	a, b := newDigests(), newDigests()
	a.add(k("g1", "dot", 8), "d1")
	a.add(k("g1", "dot", 8), "d1")
	a.add(k("g1", "nl", 8), "d2")
	a.add(k("g1", "nl", 8), "d3")
	a.add(k("g2", "dot", 16), "d4")
	b.add(k("g2", "dot", 16), "d5")
	b.add(k("g2", "dot", 8), "d6")
	b.add(k("g3", "dot", 8), "d7")
	a.merge(b)
	want := map[ScoreKey]string{
		k("g1", "dot", 8): "d1", k("g1", "nl", 8): MixedDigest,
		k("g2", "dot", 16): MixedDigest, k("g2", "dot", 8): "d6", k("g3", "dot", 8): "d7",
	}
	if got := a.All(); !maps.Equal(got, want) || a.Len() != len(want) {
		t.Errorf("digests %v (%d), want %v", got, a.Len(), want)
	}
	for key, d := range want {
		if got, ok := a.Get(key); !ok || got != d {
			t.Errorf("Get(%v) = %q %v, want %q", key, got, ok, d)
		}
	}
	for _, key := range []ScoreKey{k("g4", "dot", 8), k("g1", "dot", 16), k("g1", "semi", 8), {GenKey: "g1", Task: "u", SampleID: "s-g1", SettingKey: "dot", Budget: 8}} {
		if d, ok := a.Get(key); ok {
			t.Errorf("Get(%v) = %q, want none", key, d)
		}
	}
}

// TestScoreDigestsScan: the scan of every score (in ranges of rows, one a
// core), the scan of a model's scores through its generations and the
// key-by-key reads give the same digests, with a generation's scores
// written at several times (not next to each other), metrics whose
// digests disagree, and another model's generations in the store.
func TestScoreDigestsScan(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 2 * scanThreshold
	want := map[ScoreKey]string{}
	var keys []string
	for round, setting := range []string{"dot", "nl"} {
		for _, fp := range []string{"fp-a", "fp-b"} {
			var gens []Generation
			var scores []Score
			for i := range n {
				g := Generation{Key: fmt.Sprintf("%s-%d", fp, i), Fingerprint: fp, Task: "t", SampleID: fmt.Sprint(i), Budget: 8, Finish: "length", Stops: []byte("{}")}
				if round == 0 {
					gens = append(gens, g)
					if fp == "fp-a" {
						keys = append(keys, g.Key)
					}
				}
				base := Score{GenKey: g.Key, Task: "t", SampleID: g.SampleID, SettingKey: setting, Budget: 8, Digest: fmt.Sprintf("d-%s-%d", setting, i)}
				em, f1 := base, base
				em.Metric, f1.Metric = "em", "f1"
				if i%7 == 0 {
					f1.Digest = "other"
				}
				scores = append(scores, em, f1)
				if fp == "fp-a" {
					want[base.Key()] = em.Digest
					if i%7 == 0 {
						want[base.Key()] = MixedDigest
					}
				}
			}
			if round == 1 {
				gens = nil
			}
			if err := s.PutGenerations(ctx, gens, scores); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, read := range []struct {
		name string
		fp   string
		keys []string
	}{
		{"every score", "fp-a", keys},
		{"the model's scores", "fp-a", keys[:n/3+scanThreshold/2]},
		{"key by key", "", keys},
	} {
		got, err := s.ScoreDigests(ctx, read.fp, read.keys)
		if err != nil {
			t.Fatal(err)
		}
		w := maps.Clone(want)
		if len(read.keys) < len(keys) {
			maps.DeleteFunc(w, func(k ScoreKey, _ string) bool {
				var i int
				fmt.Sscanf(k.GenKey, "fp-a-%d", &i)
				return i >= len(read.keys)
			})
		}
		if all := got.All(); !maps.Equal(all, w) || got.Len() != len(w) {
			t.Errorf("%s: %d digests (Len %d), want %d; equal %v", read.name, len(all), got.Len(), len(w), maps.Equal(all, w))
		}
	}
}

// TestRowidBounds: the bounds of a table's rows are read from its ends,
// not by scanning it.
func TestRowidBounds(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, table := range []string{"scores", "generations"} {
		rows, err := s.db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+rowidBounds(table))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(detail, "SCAN "+table) {
				t.Errorf("%s: the bounds query scans the table: %s", table, detail)
			}
		}
		rows.Close()
	}
}

// TestEachEntryPredictions: a score's prediction, read in the column
// that joins its identifiers (last, so that it may hold anything), comes
// back as written: empty, multi-line, holding either engine's field
// separator, or like the prediction before it; with every identifier
// and value.
func TestEachEntryPredictions(t *testing.T) {
	engines(t, func(t *testing.T, newPath func() string) {
		ctx := context.Background()
		s, err := Open(ctx, newPath())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		preds := []string{"", " 12.5\n\nPassage: x", "a\x1fb", "sep \xc3\xbf\x1f end\x1f", "same", "same", " "}
		var want []Score
		for i, p := range preds {
			g := gen(i)
			for _, m := range []string{"em", "f1"} {
				want = append(want, Score{GenKey: g.Key, Task: "t", SampleID: g.SampleID, Setting: "dot", SettingKey: ".", Budget: 8,
					Metric: m, Value: float64(i) / 3, Prediction: p, Digest: fmt.Sprint("d", i)})
			}
			if err := s.PutGenerations(ctx, []Generation{g}, want[len(want)-2:]); err != nil {
				t.Fatal(err)
			}
		}
		var got []Score
		if err := s.EachEntry(ctx, Filter{}, func(e Entry) error {
			if e.Fingerprint != "fp" {
				t.Errorf("fingerprint %q", e.Fingerprint)
			}
			e.Score.RunID = 0
			got = append(got, e.Score)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		sort.Slice(got, func(a, b int) bool { return got[a].GenKey+got[a].Metric < got[b].GenKey+got[b].Metric })
		if !reflect.DeepEqual(got, want) {
			t.Errorf("entries\n%+v\nwant\n%+v", got, want)
		}
	})
}
