package store

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestReportReadsRedactErrors: an error stored unredacted (by a tally
// older than redaction on write) is masked by the reads `tally report`
// makes of a store, FailedGenerations and EachEntryAndGeneration, as it is by
// Generations.
func TestReportReadsRedactErrors(t *testing.T) { engines(t, testReportReadsRedactErrors) }

func testReportReadsRedactErrors(t *testing.T, newPath func() string) {
	ctx := context.Background()
	s := openAt(t, newPath())
	const secret = "sk-proj-0123456789abcdefABCDEF"
	g := gen(1)
	g.Finish, g.Error = "error", "HTTP 401"
	if err := s.PutGenerations(ctx, []Generation{g}, nil); err != nil {
		t.Fatal(err)
	}
	// What an older tally wrote: the server's message as it came (and
	// no seal).
	unseal(t, s, g.Key)
	if _, err := s.db.ExecContext(ctx, `UPDATE generations SET error=? WHERE key=?`, "Incorrect API key provided: "+secret, g.Key); err != nil {
		t.Fatal(err)
	}
	reads := map[string]string{}
	failed, err := s.FailedGenerations(ctx, Filter{})
	if err != nil || len(failed) != 1 {
		t.Fatalf("FailedGenerations: %v %v", failed, err)
	}
	reads["FailedGenerations"] = failed[0].Error
	if err := s.EachEntryAndGeneration(ctx, Filter{}, func(_ int32, g Generation) error {
		reads["EachEntryAndGeneration"] = g.Error
		return nil
	}, func(Entry) error { return nil }); err != nil {
		t.Fatal(err)
	}
	got, err := s.Generations(ctx, "", []string{g.Key})
	if err != nil {
		t.Fatal(err)
	}
	reads["Generations"] = got[g.Key].Error
	for read, e := range reads {
		if strings.Contains(e, secret) || !strings.Contains(e, "Incorrect API key provided") {
			t.Errorf("%s: error %q, want the key masked", read, e)
		}
	}
}

// TestEachEntryAndGeneration: the generations handed over before the
// entries are those the filter selects, with what a report shows of them
// as stored (separator bytes in a text or an error included), numbered
// from 0 in the order handed over; the entries are EachEntry's, in its order, each carrying its
// generation's number; over several ranges of a SQLite store's rows, and
// under a filter.
func TestEachEntryAndGeneration(t *testing.T) { engines(t, testEachEntryAndGeneration) }

func testEachEntryAndGeneration(t *testing.T, newPath func() string) {
	ctx := context.Background()
	s := openAt(t, newPath())
	n := entryRange + 300 // two ranges of generations
	sep := s.fieldSep()   // the byte the engine's reads join fields with
	var gens []Generation
	var scores []Score
	for i := range n {
		g := gen(i)
		g.Fingerprint, g.Task = fmt.Sprint("fp", i%3), fmt.Sprint("t", i%4)
		switch {
		case i%7 == 0:
			g.Finish, g.Error, g.Text = "error", "HTTP 500: "+sep+"| broken", ""
		case i%5 == 0:
			g.Text = "a" + sep + "b" + sep
		case i%11 == 0:
			g.Imported, g.Text = true, ""
		}
		g.PromptTokens = i
		gens = append(gens, g)
		if i%4 != 1 {
			for _, m := range []string{"em", "f1"} {
				scores = append(scores, Score{GenKey: g.Key, Task: g.Task, SampleID: g.SampleID, Setting: "nl", SettingKey: "\n", Budget: 8,
					Metric: m, Value: float64(i), Prediction: fmt.Sprint("p", i), Digest: "d"})
			}
		}
	}
	if err := s.PutGenerations(ctx, gens, scores); err != nil {
		t.Fatal(err)
	}
	for _, f := range []Filter{{}, {Fingerprints: []string{"fp1", "fp2"}, Tasks: []string{"t0", "t2", "t3"}}} {
		// What a report shows of each generation the filter selects.
		want := map[string]Generation{}
		var keys []string
		for _, g := range gens {
			if (len(f.Fingerprints) == 0 || slices.Contains(f.Fingerprints, g.Fingerprint)) && (len(f.Tasks) == 0 || slices.Contains(f.Tasks, g.Task)) {
				keys = append(keys, g.Key)
			}
		}
		stored, err := s.Generations(ctx, "", keys)
		if err != nil || len(stored) != len(keys) {
			t.Fatalf("Generations: %d of %d, %v", len(stored), len(keys), err)
		}
		for k, g := range stored {
			want[k] = Generation{Key: g.Key, Text: g.Text, Finish: g.Finish, Error: g.Error, PromptTokens: g.PromptTokens, Imported: g.Imported}
		}
		var wantEntries []Entry
		if err := s.EachEntry(ctx, f, func(e Entry) error {
			wantEntries = append(wantEntries, e)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		num := map[string]int32{}
		var got []Entry
		err = s.EachEntryAndGeneration(ctx, f, func(k int32, g Generation) error {
			if int(k) != len(num) {
				t.Fatalf("generation %s numbered %d after %d", g.Key, k, len(num))
			}
			if _, dup := num[g.Key]; dup || !reflect.DeepEqual(g, want[g.Key]) {
				t.Errorf("generation %q handed over as %+v, want %+v", g.Key, g, want[g.Key])
			}
			num[g.Key] = k
			return nil
		}, func(e Entry) error {
			if k, ok := num[e.GenKey]; !ok || e.Gen != k {
				t.Fatalf("entry of %s carries generation %d, handed over as %d (%v)", e.GenKey, e.Gen, k, ok)
			}
			got = append(got, e)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(num) != len(want) || len(want) == 0 {
			t.Errorf("filter %+v: %d generations handed over, %d selected", f, len(num), len(want))
		}
		strip := func(es []Entry) []Entry {
			out := make([]Entry, len(es))
			for i, e := range es {
				e.Gen, e.Cell = 0, 0
				out[i] = e
			}
			return out
		}
		if !reflect.DeepEqual(strip(got), strip(wantEntries)) || len(got) == 0 {
			t.Errorf("filter %+v: %d entries, EachEntry reads %d (or not the same, in its order)", f, len(got), len(wantEntries))
		}
	}
}

// TestSampleNotes: one note of the samples is read, on both engines;
// samples without it, or with no notes, are left out, and a member of that
// name elsewhere in the column is not a note.
func TestSampleNotes(t *testing.T) { engines(t, testSampleNotes) }

func testSampleNotes(t *testing.T, newPath func() string) {
	ctx := context.Background()
	s := openAt(t, newPath())
	if err := s.PutSamples(ctx, []Sample{
		{Task: "t", ID: "a", Prompt: "p", Refs: json.RawMessage(`[]`), Metadata: json.RawMessage(`{"metadata":{"answer_type":"x"},"share_key":"","doc":{"notes":{"answer_type":"y"}},"notes":{"answer_type":"date"}}`)},
		{Task: "t", ID: "b", Prompt: "p", Refs: json.RawMessage(`[]`), Metadata: json.RawMessage(`{"metadata":null,"share_key":""}`)},
		{Task: "t", ID: "c", Prompt: "p", Refs: json.RawMessage(`[]`), Metadata: json.RawMessage(`{"metadata":null,"share_key":"","notes":{"other":"1"}}`)},
		{Task: "u", ID: "a", Prompt: "p", Refs: json.RawMessage(`[]`), Metadata: json.RawMessage(`{"metadata":null,"share_key":"","notes":{"answer_type":"span"}}`)},
	}); err != nil {
		t.Fatal(err)
	}
	got, err := s.SampleNotes(ctx, "t", "answer_type")
	if err != nil || len(got) != 1 || got["a"] != "date" {
		t.Errorf("SampleNotes = %v, %v; want a: date", got, err)
	}
}
