package generate

// This file holds runBatch: claimed work run on the backend, each
// finished generation recorded and handed to the writer.

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"tally/backends"
	"tally/datasets"
	"tally/internal/redact"
	"tally/store"
	"tally/tasks/variant"
)

// runBatch runs the items (claimed by this process) on the backend and
// streams each finished generation, with its scores, into the store,
// releasing its claim once stored.
func runBatch(ctx context.Context, st *store.Store, be backends.Backend, p *Plan, work []*Item, opt Options, sum *Summary) error {
	results := make(chan result, 256)
	written := make(chan writeOutcome, 1)
	// Finished work is committed even when interrupted (within
	// store.CommitGrace of the signal); once a commit fails, generating
	// more that cannot be stored stops.
	wctx, endWrites := store.WithGrace(ctx)
	defer endWrites()
	gctx, stopGen := context.WithCancelCause(ctx)
	defer stopGen(nil)
	go func() { written <- writeResults(wctx, st, results, opt, stopGen) }()

	reqs, states := requests(work)
	b := &batchSink{p: p, opt: opt, sum: sum, states: states, results: results}
	b.tp, _ = opt.Progress.(TokenProgress)
	var genErr error
	if len(reqs) > 0 {
		genErr = be.Generate(gctx, reqs, b.event)
	}
	close(results)
	wo := <-written
	sum.Unscorable = append(sum.Unscorable, wo.unscorable...)
	if genErr == nil || (wo.err != nil && ctx.Err() == nil) {
		// Not interrupted: generation ended, or was stopped because
		// nothing more could be stored.
		genErr = ctx.Err()
	}
	return errors.Join(wo.err, genErr)
}

// requests are the backend requests of the items, with the state each
// one's stream builds (a continuation starts from its stored text).
func requests(work []*Item) ([]backends.Request, []*reqState) {
	reqs := make([]backends.Request, len(work))
	states := make([]*reqState, len(work))
	for i, it := range work {
		r := backends.Request{Index: i, Prompt: it.Sample.Prompt, PromptIDs: it.PromptIDs, MaxTokens: it.NewTokens,
			StopHint: sharedStops(it.Job.Settings), ShareKey: it.Sample.ShareKey}
		s := &reqState{it: it, matcher: NewMatcher(it.Job.Settings), started: time.Now()}
		if it.Continue {
			r.Prefix = it.Stored.IDs
			r.PrefixText = it.Stored.Text
			s.text = []byte(it.Stored.Text)
			s.ids = append([]int(nil), it.Stored.IDs...)
			s.offsets = append([]int(nil), it.Stored.Offsets...)
			s.matcher.Feed(it.Stored.Text)
		}
		reqs[i], states[i] = r, s
	}
	return reqs, states
}

// batchSink takes a batch's streamed events: each request's text, ids and
// stop matches as they come, and each finished generation counted,
// reported and handed to the writer.
type batchSink struct {
	p       *Plan
	opt     Options
	tp      TokenProgress
	states  []*reqState
	results chan<- result
	mu      sync.Mutex // guards sum, updated from the sink
	sum     *Summary
}

// event takes one event; it reports whether the request should go on
// (false once every stop setting has stopped, or at its end).
func (b *batchSink) event(ev backends.Event) bool {
	s := b.states[ev.Index]
	for j, id := range ev.IDs {
		s.offsets = append(s.offsets, len(s.text))
		s.ids = append(s.ids, id)
		if j == len(ev.IDs)-1 {
			s.text = append(s.text, ev.Text...)
		}
	}
	newTokens := len(ev.IDs)
	if len(ev.IDs) == 0 && ev.Text != "" {
		// A server backend streams text pieces without ids: count each
		// piece as a token for progress.
		s.text = append(s.text, ev.Text...)
		newTokens = 1
	}
	if newTokens > 0 && b.opt.Progress != nil {
		s.reported += newTokens
		b.opt.Progress.Tokens(newTokens)
	}
	done := s.matcher.Feed(ev.Text)
	if ev.Done {
		b.finish(s, ev)
		return false
	}
	return !done
}

// finish records a finished request's generation, counts it in the
// summary, hands it to the writer and reports it.
func (b *batchSink) finish(s *reqState, ev backends.Event) {
	g := s.record(b.p.Fingerprint, ev, b.opt.RunID)
	newTok := b.count(s, g, ev.PromptTokens)
	b.results <- result{it: s.it, gen: g}
	if b.opt.Progress != nil && max(newTok, 0) != s.reported {
		// Progress counted streamed pieces (a server's carry no ids):
		// its total now agrees with the summary's.
		b.opt.Progress.Tokens(max(newTok, 0) - s.reported)
	}
	if b.tp != nil {
		prefilled := ev.PromptTokens
		if g.Finish == backends.FinishContext {
			prefilled = 0 // as in the summary: never prefilled
		}
		b.tp.SampleEnded(sampleName(s.it.Sample), prefilled, s.it.NewTokens, max(newTok, 0), g.Error)
	}
	if b.opt.Progress != nil {
		b.opt.Progress.SampleDone()
	}
}

// count adds a finished generation to the summary and returns the tokens
// it added to what was stored.
func (b *batchSink) count(s *reqState, g store.Generation, promptTokens int) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	sum := b.sum
	newTok := g.NTokens
	if s.it.Continue {
		newTok -= s.it.Stored.NTokens
		sum.GenerationsContinued++
	} else {
		sum.GenerationsNew++
	}
	sum.GeneratedTokens += max(newTok, 0)
	if g.Finish != backends.FinishContext { // an overflowing prompt is never prefilled
		sum.PromptTokens += promptTokens
	}
	if g.Finish == backends.FinishError || g.Finish == backends.FinishContext {
		sum.Errors++
	}
	if g.Finish == backends.FinishContext {
		sum.Overflowed = append(sum.Overflowed, sampleName(s.it.Sample))
	}
	if g.Finish == backends.FinishError {
		msg := sampleName(s.it.Sample) + ": " + g.Error
		if s.it.Stored != nil && failReason(s.it.Stored) == "" {
			msg += " (the generation stored before this attempt is kept)"
		}
		sum.ErrorSamples = append(sum.ErrorSamples, msg)
	}
	return newTok
}

type reqState struct {
	// reported counts the tokens reported to Progress.Tokens.
	reported int
	it       *Item
	matcher  *Matcher
	text     []byte
	ids      []int
	offsets  []int
	started  time.Time
}

func (s *reqState) record(fp string, ev backends.Event, runID int64) store.Generation {
	it := s.it
	g := store.Generation{
		Key: it.Key, Fingerprint: fp, Task: it.Sample.Task, SampleID: it.Sample.ID,
		PromptTokens: it.promptLen, Text: string(s.text), IDs: s.ids, Offsets: s.offsets,
		NTokens: len(s.ids), Finish: ev.Finish, RunID: runID, GenSeconds: time.Since(s.started).Seconds(),
	}
	if ev.PromptTokens > 0 && g.PromptTokens == 0 {
		g.PromptTokens = ev.PromptTokens
	}
	if len(s.ids) == 0 {
		// A server backend that reports no ids: count its tokens.
		g.IDs, g.Offsets = nil, nil
		g.NTokens = ev.GenTokens
		if it.Continue {
			g.NTokens += it.Stored.NTokens
		}
	}
	g.Budget = it.NewTokens
	if it.Continue {
		g.Budget += it.Stored.NTokens
		g.Continued = it.Stored.Continued + 1
	}
	if g.Finish == backends.FinishLength && it.Budget < it.Job.MaxTokens && g.NTokens >= it.Budget {
		// The budget was capped to the context's room, and filled it.
		g.Finish = backends.FinishContextFull
	}
	if ev.Err != nil {
		g.Error = redact.String(ev.Err.Error())
	}
	stops := struct {
		Settings []StopSetting    `json:"settings"`
		Matches  map[string]Match `json:"matches"`
	}{it.Job.Settings, s.matcher.Matches()}
	g.Stops, _ = json.Marshal(stops)
	return g
}

// sampleName names a sample in messages: "task/id", the task by its name
// (not its variant's key).
func sampleName(s *datasets.Sample) string { return variant.Name(s.Task) + "/" + s.ID }

// sharedStops returns the sequences that every setting has (the only ones a
// backend may stop on without cutting a generation another setting needs).
func sharedStops(settings []StopSetting) []string {
	if len(settings) == 0 {
		return nil
	}
	var out []string
	for _, q := range settings[0].Seqs {
		all := true
		for _, s := range settings[1:] {
			found := false
			for _, x := range s.Seqs {
				found = found || x == q
			}
			all = all && found
		}
		if all {
			out = append(out, q)
		}
	}
	return out
}
