package gomlx

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"tally/backends"
)

// sharedRequests builds one document with questions that share it (key
// "doc"), a keyless request and a single request with its own key.
func sharedRequests(doc []int, questions [][]int, other []int, maxTokens int) []backends.Request {
	var reqs []backends.Request
	for i, q := range questions {
		ids := append(slices.Clone(doc), q...)
		reqs = append(reqs, backends.Request{Index: i, PromptIDs: ids, MaxTokens: maxTokens, ShareKey: "doc"})
	}
	n := len(reqs)
	reqs = append(reqs,
		backends.Request{Index: n, PromptIDs: other, MaxTokens: maxTokens},
		backends.Request{Index: n + 1, PromptIDs: append(slices.Clone(other), doc[:20]...), MaxTokens: maxTokens, ShareKey: "alone"})
	return reqs
}

// uniqueTokens counts the document once and every question's own tokens.
func uniqueTokens(doc []int, questions [][]int) int {
	n := len(doc)
	for _, q := range questions {
		n += len(q)
	}
	return n
}

// compareSharing runs reqs on a model with sharing on and one with it off,
// requires identical ids and finish reasons, and returns both models' stats.
func compareSharing(t *testing.T, on, off *Model, reqs []backends.Request) (Stats, Stats) {
	t.Helper()
	idsOn, finOn := collect(t, on, reqs, nil)
	idsOff, finOff := collect(t, off, reqs, nil)
	for _, r := range reqs {
		if !slices.Equal(idsOn[r.Index], idsOff[r.Index]) {
			t.Errorf("request %d: sharing on %v, off %v", r.Index, idsOn[r.Index], idsOff[r.Index])
		}
		if finOn[r.Index].Finish != finOff[r.Index].Finish || finOn[r.Index].GenTokens != finOff[r.Index].GenTokens {
			t.Errorf("request %d: final on %+v, off %+v", r.Index, finOn[r.Index], finOff[r.Index])
		}
	}
	return on.Stats(), off.Stats()
}

func TestPrefixSharingFixtures(t *testing.T) {
	cases := []struct {
		model    string
		maxBatch int // below the request count: slots are refilled from holders
	}{
		{"llama-tiny", 4},
		{"qwen2-tiny", 8},
		{"mistral-tiny", 2},
	}
	for _, tc := range cases {
		t.Run(tc.model, func(t *testing.T) {
			e := loadExpected(t, tc.model)
			doc := e.Prompts[3] // 100 tokens
			var questions [][]int
			for i, n := range []int{1, 5, 9, 13, 7} {
				questions = append(questions, e.Prompts[2][i*5:i*5+n])
			}
			questions = append(questions, nil) // the document alone
			reqs := sharedRequests(doc, questions, e.Prompts[1], 6)
			on := openFixture(t, tc.model, Options{MaxBatch: tc.maxBatch})
			off := openFixture(t, tc.model, Options{MaxBatch: tc.maxBatch, NoPrefixSharing: true})
			son, soff := compareSharing(t, on, off, reqs)
			if soff.SharedTokens != 0 || soff.PrefixCopies != 0 {
				t.Errorf("sharing off: stats %+v", soff)
			}
			if son.SharedTokens == 0 || son.PrefillTokens+son.SharedTokens != soff.PrefillTokens {
				t.Errorf("sharing on %+v, off %+v: prefill tokens do not add up", son, soff)
			}
			// The shared length is one short of the shortest prompt (the
			// document alone), so each of the 6 requests but one copies 99.
			if want := 5 * (len(doc) - 1); son.SharedTokens != want {
				t.Errorf("shared tokens %d, want %d", son.SharedTokens, want)
			}
			t.Logf("on %+v; off %+v", son, soff)
		})
	}
}

// demoDocument returns one document and eight questions about it, as ids
// from the demo tokenizer.
func demoDocument(t testing.TB, m *Model, docChars int) (doc []int, questions [][]int) {
	t.Helper()
	tok := m.Tokenizer()
	text := demoCorpus[:min(docChars, len(demoCorpus))]
	doc, err := tok.Encode("Document:\n"+text+"\n", true)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		q, err := tok.Encode(fmt.Sprintf("Question %d: what does the document say about item %d?\nAnswer:", i+1, i*7), false)
		if err != nil {
			t.Fatal(err)
		}
		questions = append(questions, q)
	}
	return doc, questions
}

// TestPrefixSharingDemo asks eight questions about one document on the demo
// model: sharing gives the same ids and prefills about the unique tokens.
func TestPrefixSharingDemo(t *testing.T) {
	ctx := context.Background()
	on, err := Demo(ctx, Options{MaxBatch: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer on.Close()
	off, err := Demo(ctx, Options{MaxBatch: 8, NoPrefixSharing: true})
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	doc, questions := demoDocument(t, on, 1000)
	var reqs []backends.Request
	for i, q := range questions {
		reqs = append(reqs, backends.Request{Index: i, PromptIDs: append(slices.Clone(doc), q...), MaxTokens: 8, ShareKey: "doc"})
	}
	son, soff := compareSharing(t, on, off, reqs)
	unique := uniqueTokens(doc, questions)
	ratioOn := float64(son.PrefillTokens) / float64(unique)
	ratioOff := float64(soff.PrefillTokens) / float64(unique)
	t.Logf("document %d tokens, 8 questions, %d unique tokens: prefilled %d with sharing (%.2f×), %d without (%.2f×)",
		len(doc), unique, son.PrefillTokens, ratioOn, soff.PrefillTokens, ratioOff)
	if ratioOn > 1.2 {
		t.Errorf("sharing prefilled %.2f× the unique tokens, want ≤ 1.2×", ratioOn)
	}
	if son.PrefixCopies != 1 {
		t.Errorf("%d copy calls, want 1 (all eight fit in one refill)", son.PrefixCopies)
	}
}

// BenchmarkPrefixSharing reports prefilled tokens for one document with
// eight questions, with and without sharing, as ratios to the unique tokens.
func BenchmarkPrefixSharing(b *testing.B) {
	for _, share := range []bool{true, false} {
		name := map[bool]string{true: "shared", false: "unshared"}[share]
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			m, err := Demo(ctx, Options{MaxBatch: 8, NoPrefixSharing: !share})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			doc, questions := demoDocument(b, m, len(demoCorpus))
			var reqs []backends.Request
			for i, q := range questions {
				reqs = append(reqs, backends.Request{Index: i, PromptIDs: append(slices.Clone(doc), q...), MaxTokens: 32, ShareKey: "doc"})
			}
			sink := func(backends.Event) bool { return true }
			if err := m.Generate(ctx, reqs, sink); err != nil { // compile outside the timing
				b.Fatal(err)
			}
			before := m.Stats()
			b.ResetTimer()
			for range b.N {
				if err := m.Generate(ctx, reqs, sink); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			st := m.Stats()
			per := float64(st.PrefillTokens-before.PrefillTokens) / float64(b.N)
			b.ReportMetric(per, "prefill_tokens/op")
			b.ReportMetric(per/float64(uniqueTokens(doc, questions)), "x_unique")
			b.ReportMetric(float64(len(doc)), "doc_tokens")
		})
	}
}
