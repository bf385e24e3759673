package generate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"tally/backends"
	"tally/datasets"
)

// digestTok is byteTok that digests its prompts (backends.PromptDigester)
// under a version, and counts what it encodes.
type digestTok struct {
	byteTok
	version string
	encoded *atomic.Int64
}

func (d digestTok) Encode(text string, special bool) ([]int, error) {
	d.encoded.Add(1)
	return d.byteTok.Encode(text, special)
}

func (d digestTok) PromptDigest(prompt string) ([32]byte, bool, error) {
	return sha256.Sum256([]byte(d.version + "\x00" + prompt)), true, nil
}

// digestModel is fakeModel with a digesting tokenizer, under a fingerprint.
type digestModel struct {
	*fakeModel
	tok digestTok
	fp  string
}

func (m digestModel) Tokenizer() backends.Tokenizer               { return m.tok }
func (m digestModel) Fingerprint(context.Context) (string, error) { return m.fp, nil }

// TestKeyCache: a plan keeps its prompts' keys and lengths between runs
// (keycache) for a tokenizer that digests its prompts: the next plan
// encodes none of the unchanged prompts and is the plan made by
// tokenising (every item's key, length, status and every count), and a
// changed prompt, tokenizer (its digest) or fingerprint is tokenised
// again. Rescoring's keys (PlanKeys) read the same cache.
func TestKeyCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ctx := context.Background()
	st := openStore(t)
	fm := &fakeModel{slots: 4}
	model := func(version, fp string) (digestModel, *atomic.Int64) {
		n := new(atomic.Int64)
		return digestModel{fm, digestTok{version: version, encoded: n}, fp}, n
	}
	plain := otherModel{fm, "fake-cached"}
	runJobs(t, st, plain, newJob(40, 16, dot, none))
	jobs := func(n int) []*Job { return []*Job{newJob(n, 16, dot, none, nl)} }
	want, err := MakePlan(ctx, st, plain, jobs(50))
	if err != nil {
		t.Fatal(err)
	}
	plan := func(m digestModel, n int) *Plan {
		t.Helper()
		p, err := MakePlan(ctx, st, m, jobs(n))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	same := func(what string, got, want *Plan) {
		t.Helper()
		if !maps.Equal(got.Counts, want.Counts) || got.Requests != want.Requests || got.PromptTokens != want.PromptTokens || got.TokensToGenerate != want.TokensToGenerate {
			t.Fatalf("%s: counts %v, %d requests, %d prompt tokens; want %v, %d, %d", what, got.Counts, got.Requests, got.PromptTokens, want.Counts, want.Requests, want.PromptTokens)
		}
		for i, it := range got.Items {
			w := want.Items[i]
			if it.Key != w.Key || it.promptLen != w.promptLen || it.Budget != w.Budget || fmt.Sprint(it.Statuses) != fmt.Sprint(w.Statuses) {
				t.Fatalf("%s: item %d: %s %d %d %v, want %s %d %d %v", what, i, it.Key, it.promptLen, it.Budget, it.Statuses, w.Key, w.promptLen, w.Budget, w.Statuses)
			}
		}
	}

	m, encoded := model("v1", "fake-cached")
	same("cold", plan(m, 50), want)
	// 50 prompts keyed, and the 10 new samples' prompts tokenised again
	// for their requests.
	if n := encoded.Load(); n != 60 {
		t.Fatalf("cold plan encoded %d prompts, want 60", n)
	}
	encoded.Store(0)
	same("warm", plan(m, 50), want)
	if n := encoded.Load(); n != 10 {
		t.Errorf("warm plan encoded %d prompts, want only the 10 that need model work", n)
	}
	keys, err := PlanKeys(ctx, m, jobs(50))
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range keys.Items {
		if it.Key != want.Items[i].Key || it.Budget != want.Items[i].Budget {
			t.Fatalf("PlanKeys item %d: %s %d, want %s %d", i, it.Key, it.Budget, want.Items[i].Key, want.Items[i].Budget)
		}
	}

	// A changed prompt is a miss, keyed by its tokens.
	encoded.Store(0)
	changed := jobs(50)
	changed[0].Samples[3].Prompt += " (revised)"
	p, err := MakePlan(ctx, st, m, changed)
	if err != nil {
		t.Fatal(err)
	}
	if ids, _ := (byteTok{}).Encode(changed[0].Samples[3].Prompt, true); p.Items[3].Key != Key("fake-cached", ids, "") {
		t.Error("a changed prompt kept its old key")
	}
	if n := encoded.Load(); n != 12 {
		t.Errorf("a plan with one changed prompt encoded %d prompts, want 1 + 11 for model work", n)
	}

	// Another tokenizer (digest) or fingerprint reads nothing kept.
	for _, c := range []struct{ version, fp string }{{"v2", "fake-cached"}, {"v1", "fake-cached-2"}} {
		m, encoded := model(c.version, c.fp)
		plan(m, 50)
		if n := encoded.Load(); n < 50 {
			t.Errorf("tokenizer %s, fingerprint %s: %d prompts encoded, want every one", c.version, c.fp, n)
		}
	}

	// A damaged cache costs tokenisation only.
	files, _ := filepath.Glob(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "tally", "prompt-keys", "*"))
	for _, f := range files {
		if err := os.WriteFile(f, []byte("damaged"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	encoded.Store(0)
	same("damaged cache", plan(m, 50), want)
	if n := encoded.Load(); n != 60 {
		t.Errorf("a plan over a damaged cache encoded %d prompts, want 60", n)
	}
}

// TestScoreDigestFormat pins ScoreDigest: the SHA-256 of each part's
// length, a colon and the part (the digests of every store's scores: a
// change would make them all stale).
func TestScoreDigestFormat(t *testing.T) {
	j := &Job{Spec: "drop/v1 drop-fixed/v1"}
	s := &datasets.Sample{References: json.RawMessage(`[["12"]]`), Metadata: map[string]any{"b": 1, "a": "x"}}
	set := StopSetting{Name: "dot", Seqs: []string{"."}}
	h := sha256.New()
	for _, part := range []string{"score/v1", j.Spec, `[["12"]]`, `{"a":"x","b":1}`, set.Key(), "32", " 12"} {
		fmt.Fprintf(h, "%d:%s", len(part), part)
	}
	if got, want := ScoreDigest(j, s, set, 32, " 12"), hex.EncodeToString(h.Sum(nil)); got != want {
		t.Errorf("ScoreDigest %s, want %s", got, want)
	}
}
