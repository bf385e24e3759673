package generate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"testing"

	"tally/datasets"
)

// streamDigest is ScoreDigest as a stream of writes to one hash: the
// definition the digests of stored scores were made by.
func streamDigest(j *Job, s *datasets.Sample, set StopSetting, budget int, pred string) string {
	h := sha256.New()
	meta, _ := json.Marshal(s.Metadata)
	for _, part := range []string{"score/v1", j.Spec, string(s.References), string(meta), set.Key(), strconv.Itoa(budget), pred} {
		writeStreamPart(h, part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func writeStreamPart(h hash.Hash, part string) {
	fmt.Fprintf(h, "%d:%s", len(part), part)
}

// TestScoreDigesterStream: a ScoreDigester's digests equal those of the
// stream definition, for inputs that fit its stack buffer and longer
// ones, and Matches agrees with Digest.
func TestScoreDigesterStream(t *testing.T) {
	j := &Job{Spec: `{"metrics":["drop.em","drop.f1"]}`}
	for _, tc := range []struct {
		name   string
		refs   string
		meta   map[string]any
		set    StopSetting
		budget int
		pred   string
	}{
		{"short", `[["12.5"]]`, map[string]any{"query_id": "q1"}, StopSetting{Name: "dot", Seqs: []string{"."}}, 12, "12"},
		{"empty", ``, nil, StopSetting{Name: "none"}, 0, ""},
		{"several stops", `[["a","b"]]`, map[string]any{"b": 2, "a": "x"}, StopSetting{Name: "nl", Seqs: []string{"\n\n", "\n", "Q:"}}, 1 << 30, "a\nb"},
		{"long prediction", `[["x"]]`, nil, StopSetting{Name: "dot", Seqs: []string{"."}}, 4096, strings.Repeat("long text ", 500)},
		{"long references", `[["` + strings.Repeat("r", 3000) + `"]]`, nil, StopSetting{Name: "dot", Seqs: []string{"."}}, 64, "r"},
	} {
		s := &datasets.Sample{References: json.RawMessage(tc.refs), Metadata: tc.meta}
		want := streamDigest(j, s, tc.set, tc.budget, tc.pred)
		d := NewScoreDigester(j, s)
		if got := d.Digest(tc.set, tc.budget, tc.pred); got != want {
			t.Errorf("%s: Digest = %s, want %s", tc.name, got, want)
		}
		if got := newCloneDigester(j, s).digest(tc.set, tc.budget, tc.pred); got != want {
			t.Errorf("%s: the cloned hash's digest = %s, want %s", tc.name, got, want)
		}
		if got := ScoreDigest(j, s, tc.set, tc.budget, tc.pred); got != want {
			t.Errorf("%s: ScoreDigest = %s, want %s", tc.name, got, want)
		}
		if !d.Matches(want, tc.set, tc.budget, tc.pred) {
			t.Errorf("%s: Matches(its digest) = false", tc.name)
		}
		for _, other := range []string{"", want[:63], strings.ToUpper(want), want[:63] + "x", "mixed"} {
			if d.Matches(other, tc.set, tc.budget, tc.pred) {
				t.Errorf("%s: Matches(%q) = true", tc.name, other)
			}
		}
	}
}

// cloneDigester is how ScoreDigester worked before: the prefix hashed
// once, each digest a clone of that hash with its parts written and its
// text made (the benchmark's baseline).
type cloneDigester struct{ h hash.Hash }

func newCloneDigester(j *Job, s *datasets.Sample) cloneDigester {
	h := sha256.New()
	meta, _ := json.Marshal(s.Metadata)
	for _, part := range []string{"score/v1", j.Spec, string(s.References), string(meta)} {
		writeClonePart(h, part)
	}
	return cloneDigester{h}
}

func writeClonePart(h hash.Hash, part string) {
	var buf [24]byte
	h.Write(append(strconv.AppendInt(buf[:0], int64(len(part)), 10), ':'))
	h.Write([]byte(part))
}

func (d cloneDigester) digest(set StopSetting, budget int, pred string) string {
	c, _ := d.h.(hash.Cloner).Clone()
	h := c.(hash.Hash)
	for _, part := range []string{set.Key(), strconv.Itoa(budget), pred} {
		writeClonePart(h, part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// BenchmarkScoreDigest compares checking a stored digest by Matches with
// doing it as ScoreDigester did before (cloneDigester: the baseline).
func BenchmarkScoreDigest(b *testing.B) {
	j := &Job{Spec: `{"metrics":["drop.em","drop.f1","drop-fixed.em","drop-fixed.f1"],"version":2}`}
	s := &datasets.Sample{References: json.RawMessage(`[["12.5"],["12.5 percent"]]`), Metadata: map[string]any{"query_id": "q1", "section_id": "s1"}}
	set := StopSetting{Name: "nl", Seqs: []string{"\n"}}
	want := ScoreDigest(j, s, set, 12, "12.5")
	b.Run("clone", func(b *testing.B) {
		b.ReportAllocs()
		d := newCloneDigester(j, s)
		for b.Loop() {
			if d.digest(set, 12, "12.5") != want {
				b.Fatal("digest differs")
			}
		}
	})
	b.Run("matches", func(b *testing.B) {
		b.ReportAllocs()
		d := NewScoreDigester(j, s)
		for b.Loop() {
			if !d.Matches(want, set, 12, "12.5") {
				b.Fatal("digest differs")
			}
		}
	})
}
