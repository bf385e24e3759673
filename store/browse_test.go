package store

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestBrowse(t *testing.T) { engines(t, testBrowse) }

// testBrowse checks Inventory and EachEntry, which read scores through one
// joined column, on every engine: names, budgets, setting keys, digests,
// odd sample ids, a NULL value, a score whose generation is gone.
func testBrowse(t *testing.T, newPath func() string) {
	ctx := context.Background()
	s := openAt(t, newPath())
	if _, err := s.StartRun(ctx, Run{Command: "run", Model: "org/m", Fingerprint: "fp-a", Config: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutSamples(ctx, []Sample{{Task: "t1", ID: "0", Prompt: "p", Refs: json.RawMessage(`[]`), Metadata: json.RawMessage(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	var gens []Generation
	var scores []Score
	ids := []string{"0", "id with spaces", "ünïcode/7", "10"}
	for i, id := range ids {
		for _, fp := range []string{"fp-a", "imported:x"} {
			key := fmt.Sprintf("%s-%d", strings.ReplaceAll(fp, ":", ""), i)
			finish := "stop"
			if i == 3 {
				finish = "error"
			}
			gens = append(gens, Generation{Key: key, Fingerprint: fp, Task: "t1", SampleID: id, Text: "x", Finish: finish, Budget: 8 * (i + 1), Stops: json.RawMessage(`{}`)})
			for _, set := range []struct{ name, key string }{{"nl", "\n"}, {"dot", "."}, {"none", ""}} {
				for _, m := range []string{"em", "f1"} {
					v := float64(i) / 4
					if i == 2 && m == "f1" {
						v = math.NaN()
					}
					scores = append(scores, Score{GenKey: key, Task: "t1", SampleID: id, Setting: set.name, SettingKey: set.key, Budget: 16,
						Metric: m, Value: v, Prediction: "pred " + id + set.name, Digest: fmt.Sprintf("%x", i)})
				}
			}
		}
	}
	if err := s.PutGenerations(ctx, gens, scores); err != nil {
		t.Fatal(err)
	}
	// A score whose generation is not stored is not listed.
	orphan := Score{GenKey: "gone", Task: "t1", SampleID: "0", Setting: "nl", SettingKey: "\n", Budget: 16, Metric: "em", Value: 1}
	if err := s.PutScores(ctx, []Score{orphan}); err != nil {
		t.Fatal(err)
	}

	inv, err := s.Inventory(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantTasks := []TaskState{
		{Fingerprint: "fp-a", Task: "t1", Samples: 1, Generated: 4, Failed: 1, MaxBudget: 32},
		{Fingerprint: "imported:x", Task: "t1", Samples: 1, Generated: 4, Failed: 1, MaxBudget: 32},
	}
	if !reflect.DeepEqual(inv.Tasks, wantTasks) {
		t.Errorf("tasks %+v, want %+v", inv.Tasks, wantTasks)
	}
	if inv.Models["fp-a"] != "org/m" || inv.Models["imported:x"] != "imported:x" {
		t.Errorf("models %v", inv.Models)
	}
	if len(inv.Cells) != 6 {
		t.Fatalf("%d cells: %+v", len(inv.Cells), inv.Cells)
	}
	for _, c := range inv.Cells {
		if c.Scored != 4 || !slices.Equal(c.Metrics, []string{"em", "f1"}) || c.Budget != 16 || c.Task != "t1" {
			t.Errorf("cell %+v", c)
		}
		if want := map[string]string{"nl": "\n", "dot": ".", "none": ""}[c.Setting]; c.SettingKey != want {
			t.Errorf("cell %s has key %q", c.Setting, c.SettingKey)
		}
	}
	models, err := s.Models(ctx)
	if err != nil || !reflect.DeepEqual(models, inv.Models) {
		t.Errorf("Models %v, %v; Inventory's %v", models, err, inv.Models)
	}

	for _, f := range []Filter{{}, {Fingerprints: []string{"imported:x"}}, {Tasks: []string{"t1"}, Settings: []string{"dot"}}, {Tasks: []string{"t2"}}} {
		var got []Entry
		if err := s.EachEntry(ctx, f, func(e Entry) error {
			got = append(got, e)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var want []Entry
		for _, sc := range scores {
			fp := gens[slices.IndexFunc(gens, func(g Generation) bool { return g.Key == sc.GenKey })].Fingerprint
			if len(f.Fingerprints) > 0 && !slices.Contains(f.Fingerprints, fp) || len(f.Tasks) > 0 && !slices.Contains(f.Tasks, sc.Task) ||
				len(f.Settings) > 0 && !slices.Contains(f.Settings, sc.Setting) {
				continue
			}
			if math.IsNaN(sc.Value) {
				sc.Value = 0 // reports count an undefined value as 0
			}
			want = append(want, Entry{Fingerprint: fp, Score: sc})
		}
		key := func(e Entry) string {
			return strings.Join([]string{e.GenKey, e.SampleID, e.Setting, e.Metric}, "|")
		}
		slices.SortFunc(got, func(a, b Entry) int { return strings.Compare(key(a), key(b)) })
		slices.SortFunc(want, func(a, b Entry) int { return strings.Compare(key(a), key(b)) })
		cells := map[[3]string]int{}
		genOf, keyOf := map[string]int32{}, map[int32]string{}
		for i := range got {
			c := [3]string{got[i].Setting, got[i].Metric, got[i].SettingKey}
			if n, ok := cells[c]; ok && n != got[i].Cell {
				t.Errorf("cell numbers differ for %v", c)
			}
			cells[c] = got[i].Cell
			k, n := got[i].GenKey, got[i].Gen
			if m, ok := genOf[k]; ok && m != n || keyOf[n] != "" && keyOf[n] != k || n < 0 {
				t.Errorf("generation %s numbered %d, and %d before (or the number another's)", k, n, m)
			}
			genOf[k], keyOf[n] = n, k
			got[i].Cell, got[i].Gen = 0, 0
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("filter %+v: entries\n%+v\nwant\n%+v", f, got, want)
		}
	}
}

// TestGenFingerprints: generation keys map to their fingerprints and to
// numbers from 0, one each, whether or not they spell a digest; a digest
// in upper case is another key than the same digest in lower case.
func TestGenFingerprints(t *testing.T) {
	lower := strings.Repeat("0a1b2c3d4e5f6789", 4)
	keys := map[string]string{
		lower:                   "fp-lower",
		strings.ToUpper(lower):  "fp-upper",
		lower[:63] + "g":        "fp-not-hex",
		lower[:62]:              "fp-short",
		"imported:model/task/7": "fp-imported",
		strings.Repeat("f", 64): "fp-ff",
		strings.Repeat("0", 64): "fp-00",
		"":                      "fp-empty",
	}
	m := newGenIndex()
	n := map[string]int32{}
	for k, fp := range keys {
		n[k] = m.add([]byte(k), []byte(fp))
	}
	seen := map[int32]bool{}
	for k, fp := range keys {
		if got, i := m.of([]byte(k)); got != fp || i != n[k] || seen[i] || i < 0 || int(i) >= len(keys) {
			t.Errorf("of(%q) = %q %d, want %q, %d numbered once from 0", k, got, i, fp, n[k])
		}
		seen[n[k]] = true
	}
	if got, i := m.of([]byte(strings.Repeat("1", 64))); got != "" || i != -1 {
		t.Errorf("an unknown key maps to %q %d", got, i)
	}
	if len(m.digests) != 3 {
		t.Errorf("%d keys held as digests, want 3", len(m.digests))
	}
}
