// Package generate turns samples into requests, asks the store what already
// exists, plans what must run, schedules requests onto a backend, applies
// stop sequences, and writes each finished generation (with its scores) to
// the store as it arrives.
//
// Greedy decoding is deterministic and a stop sequence only cuts text, so a
// generation is stored raw, keyed without its stop settings and budget, and
// truncated per setting at scoring time. K stop settings cost one pass that
// ends when all of them have stopped; a new setting whose cut lies inside a
// stored continuation costs no model work, and one that needs more text
// continues the stored token ids instead of starting over.
package generate

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"runtime"
	"sort"
	"strconv"

	"golang.org/x/sync/errgroup"

	"tally/backends"
	"tally/datasets"
	"tally/internal/keycache"
	"tally/store"
	"tally/tasks/variant"
)

// Decoding names the decoding parameters that are part of a generation's
// key. tally decodes greedily; the string is versioned so that a future
// sampler cannot collide with it.
const Decoding = "greedy/v1"

// Scorer scores one truncated prediction of a sample; keys are metric names
// (e.g. "drop.em").
type Scorer func(prediction string, s datasets.Sample) (map[string]float64, error)

// Job is one task's part of a run: its samples, the stop settings to score,
// the token budget, and how to score.
type Job struct {
	Task      string
	Samples   []datasets.Sample
	Settings  []StopSetting
	MaxTokens int
	Score     Scorer
	// Spec identifies the scoring (metrics and their versions, and the
	// task fields that can change a score; tasks.Config.ScoringSpec): it
	// enters every score's digest, so a change recomputes the scores.
	Spec string
}

// Status is the state of one (sample, stop setting) before a run.
type Status string

// The statuses a planner assigns.
const (
	// Complete: a stored generation answers the setting and it is scored.
	Complete Status = "complete"
	// Answerable: a stored generation answers it; only scoring is needed.
	Answerable Status = "answerable"
	// Continue: the stored generation is too short for this setting; it is
	// extended from its stored token ids.
	Continue Status = "continue"
	// Failed: the stored generation ended in an error (generated again) or
	// its prompt exceeds the model's context (generated again only when it
	// now fits). A failed sample counts as 0 in every mean.
	Failed Status = "failed"
	// Missing: nothing is stored.
	Missing Status = "missing"
)

// AllStatuses lists the statuses in display order.
func AllStatuses() []Status { return []Status{Complete, Answerable, Continue, Failed, Missing} }

// Item is one sample of a plan with what it needs.
type Item struct {
	Job    *Job
	Sample *datasets.Sample
	// Key is the generation key (model, exact prompt, decoding).
	Key string
	// Budget is the job's token budget capped by the model's context: at
	// most the room left after the prompt, when both are known (a
	// generation that fills the context answers every setting).
	Budget int
	// PromptIDs is the tokenised prompt of an item that needs model work
	// (nil for server-side tokenisation, and for an item that needs none).
	PromptIDs []int
	// promptLen is the length of the tokenised prompt (0 for server-side
	// tokenisation).
	promptLen int
	// Stored is the stored generation, if any.
	Stored *store.Generation
	// Statuses holds one status per Job.Settings entry.
	Statuses []Status
	// NewTokens is the budget of the request to run (0: no model work).
	NewTokens int
	// Continue marks a request that extends Stored rather than starting over.
	Continue bool
	// Stale marks, per setting, stored scores computed under other inputs
	// than the current ones (their digest differs): they are recomputed.
	Stale []bool
	// FailReason says why the stored generation failed ("" when it did not).
	FailReason string
}

// Plan is what a run will do, computed before any model work.
type Plan struct {
	Fingerprint string
	Items       []*Item
	// Counts counts (sample, setting) pairs per status.
	Counts map[Status]int
	// Requests is the number of samples that need model work.
	Requests int
	// TokensToGenerate is an upper bound: each request's budget.
	TokensToGenerate int
	// PromptTokens is the number of prompt (and prefix) tokens to prefill,
	// over the requests whose prompt ids are known; Untokenised counts the
	// requests whose prompt a server backend tokenises (its length unknown
	// before the server says).
	PromptTokens int
	Untokenised  int
	// Throughput is generated tokens per second measured in earlier runs of
	// this model (0 when unknown); EstimatedSeconds is Estimate.Seconds (-1
	// when unknown).
	Throughput       float64
	EstimatedSeconds float64
	// Estimate is the tokens and time the work is expected to take, from
	// the stop positions and speeds measured for this model.
	Estimate Estimate
	// Overflow counts samples to run whose prompt cannot fit the model's
	// context.
	Overflow int
	// Stale counts (sample, setting) pairs whose stored scores are out of
	// date (data, metrics, task or stop setting changed).
	Stale int
	// Superseded lists the fingerprints of this model under another
	// arithmetic that hold generations of the missing samples: they are
	// not reused (see Superseded).
	Superseded []Superseded
}

// Key returns the generation key: a digest of the model fingerprint, the
// exact prompt (token ids when the backend tokenises locally, else the
// text) and the decoding parameters. Stop settings and token budget are
// deliberately not part of it.
func Key(fingerprint string, promptIDs []int, prompt string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", fingerprint, Decoding)
	if promptIDs != nil {
		h.Write([]byte("ids\x00"))
		var b [4]byte
		for _, id := range promptIDs {
			binary.LittleEndian.PutUint32(b[:], uint32(id))
			h.Write(b[:])
		}
	} else {
		h.Write([]byte("text\x00"))
		h.Write([]byte(prompt))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Truncate applies a stop setting and a token budget to a stored
// generation: the text is first limited to the first budget tokens (when
// token offsets are known), then cut at the setting's earliest match. ok is
// false when the stored text cannot answer the setting (no match, and the
// generation stopped early for another reason than eos, context or the
// budget); need is then the number of tokens still to generate.
func Truncate(g *store.Generation, s StopSetting, budget int) (pred string, ok bool, need int) {
	text := g.Text
	if len(g.Offsets) > budget {
		text = text[:g.Offsets[budget]]
	}
	if m, found := FindStop(text, s.Seqs); found {
		return text[:m.Offset], true, 0
	}
	switch {
	case g.Imported, g.Finish == backends.FinishEOS, g.Finish == backends.FinishContext, g.Finish == backends.FinishContextFull, g.NTokens >= budget:
		return text, true, 0
	}
	return "", false, budget - g.NTokens
}

// MaxBudget is the largest token budget tally accepts: far beyond any
// model's context (budgets are capped by the context anyway), and small
// enough that no count of tokens over any number of samples overflows.
const MaxBudget = 1 << 30

// classify sets the item's failure reason, and its status and staleness
// under each of its job's settings, from its stored generation (set) and
// the digests of the stored scores.
func classify(it *Item, digests *store.Digests) {
	it.FailReason = failReason(it.Stored)
	budget := it.Job.MaxTokens
	it.Statuses = make([]Status, len(it.Job.Settings))
	it.Stale = make([]bool, len(it.Job.Settings))
	var dg *ScoreDigester
	var scores store.GenDigests // of the stored generation, looked up once
	if it.Stored != nil {
		scores = digests.Gen(it.Key)
	}
	for k, set := range it.Job.Settings {
		switch g := it.Stored; {
		case g == nil:
			it.Statuses[k] = Missing
		case it.FailReason != "":
			it.Statuses[k] = Failed
		default:
			pred, ok, _ := it.truncate(g, set)
			d, scored := scores.Get(it.Sample.Task, it.Sample.ID, set.Key(), budget)
			if scored && ok && dg == nil {
				x := NewScoreDigester(it.Job, it.Sample)
				dg = &x
			}
			switch {
			case !ok:
				it.Statuses[k] = Continue
			case scored && dg.Matches(d, set, budget, pred):
				it.Statuses[k] = Complete
			default:
				it.Statuses[k], it.Stale[k] = Answerable, scored
			}
		}
	}
}

// capBudget is a token budget capped by the room a context of ctxLen
// tokens leaves after a prompt of promptLen tokens (unchanged when either
// is unknown, or the prompt alone overflows: it fails before any budget
// matters).
func capBudget(budget, promptLen, ctxLen int) int {
	if promptLen <= 0 || ctxLen <= 0 || promptLen >= ctxLen {
		return budget
	}
	return min(budget, ctxLen-promptLen)
}

// truncate is Truncate under the item's job budget, where a generation
// that already fills the model's context (it.Budget tokens, fewer than
// the job's budget) answers every setting: more text cannot be had.
func (it *Item) truncate(g *store.Generation, s StopSetting) (pred string, ok bool, need int) {
	pred, ok, need = Truncate(g, s, it.Job.MaxTokens)
	if !ok {
		if g.NTokens >= it.Budget {
			return g.Text, true, 0
		}
		need = it.Budget - g.NTokens
	}
	return pred, ok, need
}

// MakePlan classifies every (sample, setting) of the jobs against the store
// and decides the model work: a sample with a missing or failed setting is
// generated from scratch; one that only needs more text is continued.
func MakePlan(ctx context.Context, st *store.Store, be backends.Backend, jobs []*Job) (*Plan, error) {
	p, err := PlanKeys(ctx, be, jobs)
	if err != nil {
		return nil, err
	}
	fp := p.Fingerprint
	ctxLen := be.ContextLength()
	keys := make([]string, len(p.Items))
	for i, it := range p.Items {
		keys[i] = it.Key
	}
	// What is stored and how it was scored are read at once.
	var stored map[string]store.Generation
	var digests *store.Digests
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		stored, err = st.Generations(gctx, fp, keys)
		return err
	})
	g.Go(func() (err error) {
		digests, err = st.ScoreDigests(gctx, fp, keys)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	// Each item is classified on its own (on every core), then counted.
	err = eachItem(ctx, p.Items, func(it *Item) error {
		if g, ok := stored[it.Key]; ok {
			it.Stored = &g
		}
		classify(it, digests)
		it.NewTokens, it.Continue = needs(it, it.Stored, ctxLen, true)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, it := range p.Items {
		for k, stt := range it.Statuses {
			p.Counts[stt]++
			if it.Stale[k] {
				p.Stale++
			}
		}
		if it.NewTokens > 0 {
			promptLen := it.promptLen
			if it.Continue {
				promptLen += it.Stored.NTokens
			}
			p.Requests++
			if overflows(it, ctxLen) {
				p.Overflow++
				continue
			}
			p.TokensToGenerate += it.NewTokens
			p.PromptTokens += promptLen
			if it.promptLen == 0 { // a server backend tokenises it
				p.Untokenised++
			}
		}
	}
	if err := encodeItems(ctx, be.Tokenizer(), p.Work()); err != nil {
		return nil, err
	}
	if p.Superseded, err = superseded(ctx, st, be, p); err != nil {
		return nil, err
	}
	if err := estimate(ctx, st, p, ctxLen); err != nil {
		return nil, err
	}
	return p, nil
}

// keyedItems makes an item of every sample of the jobs, with its
// generation key and its budget capped by the context (refusing a job
// budget out of range).
func keyedItems(ctx context.Context, be backends.Backend, fp string, jobs []*Job) ([]*Item, error) {
	var items []*Item
	for _, j := range jobs {
		if j.MaxTokens <= 0 || j.MaxTokens > MaxBudget {
			return nil, fmt.Errorf("plan: task %s: token budget %d: want 1 to %d", variant.Name(j.Task), j.MaxTokens, MaxBudget)
		}
		for i := range j.Samples {
			items = append(items, &Item{Job: j, Sample: &j.Samples[i]})
		}
	}
	if err := keyItems(ctx, be.Tokenizer(), fp, items); err != nil {
		return nil, err
	}
	ctxLen := be.ContextLength()
	for _, it := range items {
		it.Budget = capBudget(it.Job.MaxTokens, it.promptLen, ctxLen)
	}
	return items, nil
}

// keyItems sets the items' generation keys (and prompt lengths),
// tokenising their prompts with tok when the backend tokenises locally.
// The ids are not kept: most items of a large plan need no model work
// (encodeItems tokenises those that do again). A tokenizer that can digest
// its prompts (backends.PromptDigester) has the keys and lengths of the
// prompts it encoded before kept between runs (keycache, under the model's
// fingerprint and the executable), so an unchanged prompt is not
// tokenised again.
func keyItems(ctx context.Context, tok backends.Tokenizer, fp string, items []*Item) error {
	pd, _ := tok.(backends.PromptDigester)
	var cache *keycache.Cache
	if pd != nil {
		if exe := keycache.ExecutableIdentity(); exe != "" {
			cache = keycache.Open(keycache.DefaultDir(), fp, fp+"\x00"+Decoding+"\x00"+exe)
		}
	}
	err := eachItem(ctx, items, func(it *Item) error {
		var d [32]byte
		cached := false
		if cache != nil {
			var err error
			if d, cached, err = pd.PromptDigest(it.Sample.Prompt); err != nil {
				return fmt.Errorf("plan: prompt of %s: %w", sampleName(it.Sample), err)
			}
			if e, ok := cache.Get(d); cached && ok {
				it.Key, it.promptLen = e.Key, e.Tokens
				return nil
			}
		}
		var ids []int
		if tok != nil {
			var err error
			if ids, err = tok.Encode(it.Sample.Prompt, true); err != nil {
				return fmt.Errorf("plan: tokenise prompt of %s: %w", sampleName(it.Sample), err)
			}
		}
		it.Key, it.promptLen = Key(fp, ids, it.Sample.Prompt), len(ids)
		if cached {
			cache.Put(d, keycache.Entry{Key: it.Key, Tokens: it.promptLen})
		}
		return nil
	})
	if err == nil && cache != nil {
		_ = cache.Save() // a cache that cannot be written costs only time
	}
	return err
}

// encodeItems sets the PromptIDs of items that need model work (with
// tok, when the backend tokenises locally).
func encodeItems(ctx context.Context, tok backends.Tokenizer, items []*Item) error {
	if tok == nil {
		return nil
	}
	return eachItem(ctx, items, func(it *Item) error {
		ids, err := tok.Encode(it.Sample.Prompt, true)
		if err != nil {
			return fmt.Errorf("plan: tokenise prompt of %s: %w", sampleName(it.Sample), err)
		}
		it.PromptIDs = ids
		return nil
	})
}

// eachItem calls f for every item, on every core (a tokenizer is safe for
// concurrent use: backends.Tokenizer), until f fails or ctx ends.
func eachItem(ctx context.Context, items []*Item, f func(*Item) error) error {
	const chunk = 256
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for lo := 0; lo < len(items); lo += chunk {
		part := items[lo:min(lo+chunk, len(items))]
		g.Go(func() error {
			for _, it := range part {
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := f(it); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// overflows reports whether the item's prompt cannot fit a context of
// ctxLen tokens (0: unknown, never).
func overflows(it *Item, ctxLen int) bool {
	return ctxLen > 0 && it.promptLen >= ctxLen
}

// failReason says why a stored generation failed: its error, or that its
// prompt exceeded the context; "" when it did not fail (or is nil).
func failReason(g *store.Generation) string {
	switch {
	case g == nil:
		return ""
	case g.Finish == backends.FinishError:
		if g.Error == "" {
			return "backend error"
		}
		return "backend error: " + g.Error
	case g.Finish == backends.FinishContext && g.PromptTokens > 0:
		return fmt.Sprintf("prompt (%d tokens) exceeds the model's context", g.PromptTokens)
	case g.Finish == backends.FinishContext && g.Error != "":
		// A server backend refused it on an estimate (its error says
		// which) and counted no prompt tokens.
		return g.Error
	case g.Finish == backends.FinishContext:
		return backends.ErrContextOverflow.Error()
	}
	return ""
}

// needs decides the model work an item needs given its stored generation
// g: a fresh generation (nothing stored; a failed one, when retryErrors; a
// context overflow whose prompt now fits), a continuation from the stored
// ids when some setting needs more text, or none.
func needs(it *Item, g *store.Generation, ctxLen int, retryErrors bool) (newTokens int, cont bool) {
	budget := it.Budget
	switch {
	case g == nil:
		return budget, false
	case g.Finish == backends.FinishError:
		if retryErrors {
			return budget, false
		}
		return 0, false
	case g.Finish == backends.FinishContext:
		if it.promptLen > 0 && ctxLen > 0 && !overflows(it, ctxLen) {
			return budget, false
		}
		return 0, false
	}
	need := 0
	for _, set := range it.Job.Settings {
		if _, ok, n := it.truncate(g, set); !ok {
			need = max(need, n)
		}
	}
	return need, need > 0
}

// ScoreDigest is the digest of everything that produces the scores of one
// sample under one setting and budget: the job's scoring spec (metrics,
// their versions, scoring fields), the sample's references and metadata,
// the stop setting, the budget and the truncated prediction. A stored
// score with another digest is stale.
func ScoreDigest(j *Job, s *datasets.Sample, set StopSetting, budget int, pred string) string {
	return NewScoreDigester(j, s).Digest(set, budget, pred)
}

// ScoreDigester computes the ScoreDigests of one sample: the part of the
// digest its job and sample make (spec, references, metadata) is encoded
// once, then each setting's is added to it. A checker of many settings of
// one sample makes one.
type ScoreDigester struct{ prefix []byte }

// NewScoreDigester encodes the part of a sample's score digests that its
// job (Spec) and the sample (References, Metadata) make.
func NewScoreDigester(j *Job, s *datasets.Sample) ScoreDigester {
	meta := []byte("null") // what json.Marshal writes for no metadata
	if s.Metadata != nil {
		meta, _ = json.Marshal(s.Metadata) // maps marshal with sorted keys
	}
	b := make([]byte, 0, 32+len(j.Spec)+len(s.References)+len(meta))
	b = appendPart(appendPart(b, "score/v1"), j.Spec)
	return ScoreDigester{appendPart(appendPart(b, []byte(s.References)), meta)}
}

// appendPart appends one part of a digest's input: its length in decimal,
// a colon, and the part.
func appendPart[T string | []byte](b []byte, part T) []byte {
	b = append(strconv.AppendInt(b, int64(len(part)), 10), ':')
	return append(b, part...)
}

// sum is the SHA-256 of the sample's digest input under set, budget and
// pred, made on the stack where it fits (no allocation but set's key).
func (d ScoreDigester) sum(set StopSetting, budget int, pred string) [sha256.Size]byte {
	var stack [1024]byte
	var num [20]byte
	b := append(stack[:0], d.prefix...)
	b = appendPart(b, set.Key())
	b = appendPart(b, strconv.AppendInt(num[:0], int64(budget), 10))
	return sha256.Sum256(appendPart(b, pred))
}

// Digest is ScoreDigest of the sample under set, budget and pred.
func (d ScoreDigester) Digest(set StopSetting, budget int, pred string) string {
	sum := d.sum(set, budget, pred)
	return hex.EncodeToString(sum[:])
}

// Matches reports whether digest is the sample's Digest under set, budget
// and pred (what a check of millions of stored scores asks, without
// making the digest's text).
func (d ScoreDigester) Matches(digest string, set StopSetting, budget int, pred string) bool {
	if len(digest) != 2*sha256.Size {
		return false
	}
	sum := d.sum(set, budget, pred)
	var text [2 * sha256.Size]byte
	hex.Encode(text[:], sum[:])
	return string(text[:]) == digest
}

// Work returns the items that need model work, longest prompt first (so the
// tail of a run is short), keeping samples that share a prefix together.
func (p *Plan) Work() []*Item {
	var out []*Item
	for _, it := range p.Items {
		if it.NewTokens > 0 {
			out = append(out, it)
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		x, y := out[a], out[b]
		if x.Sample.ShareKey != y.Sample.ShareKey {
			return x.Sample.ShareKey < y.Sample.ShareKey
		}
		return x.promptLen+len(x.Sample.Prompt) > y.promptLen+len(y.Sample.Prompt)
	})
	return out
}
