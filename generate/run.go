package generate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"sort"
	"sync"
	"time"

	"tally/backends"
	"tally/internal/redact"
	"tally/store"
)

// Progress receives progress reports; implementations must be safe for
// concurrent use.
type Progress interface {
	// Start announces the number of samples that need model work.
	Start(samples int)
	// Tokens reports n newly generated tokens. When a sample ends, n
	// corrects what was reported for it to the backend's count (negative
	// when a server streamed more pieces than tokens), so that the tokens
	// reported add up to Summary.GeneratedTokens.
	Tokens(n int)
	// SampleDone reports one finished sample.
	SampleDone()
	// Finish ends the report.
	Finish()
}

// Options tune Execute.
type Options struct {
	RunID    int64
	Progress Progress
	// FlushEvery bounds how long a finished generation waits before it is
	// committed (default 200ms); FlushSize bounds how many wait (default 64,
	// or the claim batch when that grew).
	FlushEvery time.Duration
	FlushSize  int
	// Owner names this process in the store's claims (default: host, pid
	// and a random suffix). Lease is how long a claim holds without
	// renewal (default DefaultLease); claims are renewed every Lease/3
	// while the process works, and a dead process's claims are taken over
	// once their lease expires. Poll is how often a process waiting for
	// work claimed by a live peer looks again (default min(Lease/4, 500ms)).
	Owner string
	Lease time.Duration
	Poll  time.Duration
	// ClaimBatch is how many generations a process claims at a time, so
	// that processes sharing a store pull work in portions (default
	// max(16, 4 × the backend's slots), doubled up to MaxClaimBatch while
	// batches take under FastBatch: with a fast backend, claims and
	// commits cost less per generation in larger portions). A ClaimBatch
	// given is kept.
	ClaimBatch int
	// Model is the model as the user named it, recorded with the worker
	// entry that lists this process in the store (tally ls).
	Model string
}

// MaxClaimBatch bounds the growth of a default claim batch (Options.ClaimBatch).
const MaxClaimBatch = 256

// FastBatch is how long a batch of model work may take for the default
// claim batch to grow (Options.ClaimBatch); one that takes 4 times as long
// shrinks it back.
const FastBatch = 100 * time.Millisecond

// DefaultLease is how long a work claim holds without renewal.
const DefaultLease = 30 * time.Second

// Summary is what a run did, as `tally run --json` prints it.
type Summary struct {
	Samples              int `json:"samples"`
	GenerationsNew       int `json:"generations_new"`
	GenerationsReused    int `json:"generations_reused"`
	GenerationsContinued int `json:"generations_continued"`
	// GenerationsByPeers counts samples another process sharing the store
	// generated while this one waited for them.
	GenerationsByPeers int `json:"generations_by_peers"`
	// ClaimsTakenOver counts work claims taken over from a process whose
	// lease expired (it died).
	ClaimsTakenOver int `json:"claims_taken_over"`
	// Worker is the worker id of a tally run --worker.
	Worker          string  `json:"worker,omitempty"`
	GeneratedTokens int     `json:"generated_tokens"`
	PromptTokens    int     `json:"prompt_tokens"`
	Errors          int     `json:"errors"`
	Seconds         float64 `json:"seconds"`
	// Recomputed counts (sample, setting) pairs whose stored scores were
	// stale (data, metrics, task fields changed) and were recomputed.
	Recomputed int `json:"recomputed"`
	// Scores is the mean of each metric per task and setting, failed
	// samples counted as 0 (null when undefined).
	Scores map[string]map[string]map[string]Mean `json:"scores"`
	// Counts is the number of samples scored and failed per task and
	// setting; FailedSamples says how failed samples enter the means.
	Counts        map[string]map[string]SampleCounts `json:"counts"`
	FailedSamples string                             `json:"failed_samples"`
	// GenSeconds is the time spent in model work (for throughput).
	GenSeconds float64 `json:"-"`
	// ClaimSeconds is the time spent claiming work and looking at what
	// peers stored (the cost of sharing the store).
	ClaimSeconds float64 `json:"claim_seconds"`
	// Overflowed names the samples (task/id) whose prompt did not fit the
	// model's context; they are stored with finish reason "context".
	Overflowed []string `json:"-"`
	// ErrorSamples lists the samples that failed, as "task/id: message".
	ErrorSamples []string `json:"-"`
	// Unscorable lists the (sample, setting) pairs a metric could not
	// score, with the metric's error.
	Unscorable []string `json:"-"`
}

// FailedAsZero says how failed samples enter every mean tally reports.
const FailedAsZero = "failed samples (backend error, prompt beyond the context) count as 0 in every mean and in n; n_failed counts them"

// result is one finished request on its way to the store.
type result struct {
	it  *Item
	gen store.Generation
}

// Execute does the plan's work: it scores what stored generations already
// answer, runs the rest on the backend, and commits every finished
// generation together with its scores as it arrives. On cancellation it
// commits what had finished and returns the context's error.
//
// Several processes may execute plans over one store at once: each claims
// the generations it runs (store.Claim) and renews the claims while it
// works; work claimed by a live peer is not run but waited for and read
// back from the store when the peer has stored it (with the scores the
// peer committed; CurrentResults then scores it under any setting the peer
// did not); a claim whose owner died is taken over when its lease expires.
func Execute(ctx context.Context, st *store.Store, be backends.Backend, p *Plan, opt Options) (Summary, error) {
	start := time.Now()
	if opt.FlushEvery <= 0 {
		opt.FlushEvery = 200 * time.Millisecond
	}
	flushAdaptive := opt.FlushSize <= 0
	if flushAdaptive {
		opt.FlushSize = 64
	}
	if opt.Lease <= 0 {
		opt.Lease = DefaultLease
	}
	if opt.Poll <= 0 {
		opt.Poll = min(opt.Lease/4, 500*time.Millisecond)
	}
	if opt.Owner == "" {
		opt.Owner = NewOwner()
	}
	adaptive := opt.ClaimBatch <= 0
	if adaptive {
		opt.ClaimBatch = max(16, 4*be.Slots())
	}
	minBatch := opt.ClaimBatch
	sum := Summary{Samples: len(p.Items)}

	// 1. Score what the store already answers: no model work.
	var scores []store.Score
	for _, it := range p.Items {
		if it.Stored == nil || it.NewTokens > 0 {
			continue
		}
		sum.GenerationsReused++
		for k, stt := range it.Statuses {
			if stt == Answerable {
				sc, warn := scoreSetting(it, it.Stored, k, opt.RunID, nil)
				if warn != "" {
					sum.Unscorable = append(sum.Unscorable, warn)
				}
				if it.Stale[k] {
					sum.Recomputed++
				}
				scores = append(scores, sc...)
			}
		}
	}
	if err := st.PutScores(ctx, scores); err != nil {
		return sum, fmt.Errorf("store scores: %w", err)
	}

	// 2. Model work, shared with any peer process through claims.
	pending := p.Work()
	if err := st.PruneClaims(ctx); err != nil {
		return sum, err
	}
	if len(pending) == 0 {
		sum.Seconds = time.Since(start).Seconds()
		return sum, nil
	}
	if opt.Progress != nil {
		opt.Progress.Start(len(pending))
		defer opt.Progress.Finish()
	}
	host, _ := os.Hostname()
	if err := st.RegisterWorker(ctx, store.Worker{ID: opt.Owner, Host: host, PID: os.Getpid(), RunID: opt.RunID,
		Model: opt.Model, Fingerprint: p.Fingerprint, Lease: opt.Lease}); err != nil {
		return sum, err
	}
	renewCtx, stopRenew := context.WithCancel(context.Background())
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(opt.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-renewCtx.Done():
				return
			case <-t.C:
				st.Renew(renewCtx, opt.Owner, opt.Lease) // a failed renewal is retried at the next tick
			}
		}
	}()
	var runErr error
	// The claims are released and the worker's end recorded even when
	// interrupted, within store.CommitGrace of the signal.
	cleanup, endCleanup := store.WithGrace(ctx)
	defer func() {
		stopRenew()
		<-renewed
		st.Release(cleanup, opt.Owner, nil)
		status := store.WorkerDone
		if runErr != nil {
			status = store.WorkerStopped
		}
		st.EndWorker(cleanup, opt.Owner, status, sum.GenerationsNew+sum.GenerationsContinued)
		endCleanup()
	}()

	ctxLen := be.ContextLength()
	tp, _ := opt.Progress.(TokenProgress)
	if tp != nil {
		tp.Work(workTokens(pending, ctxLen))
	}
	genStart := time.Now()
	// Work is claimed from a window of the pending keys at a time (so that
	// a claim and a look at what peers stored cost the same for any size of
	// run); the window moves on when it holds nothing this process can
	// claim, and once every window has been looked at without progress,
	// the process waits for its live peers.
	window := func() int { return max(4*opt.ClaimBatch, 64) }
	// Each process starts at its own place in the work (a hash of its
	// owner id), so that workers started together do not all contend for
	// the same first claims.
	off, idle := startOffset(opt.Owner, len(pending), window()), 0
	var noted time.Time // when a WaitProgress was last told what this process waits for
	for len(pending) > 0 && runErr == nil {
		if off >= len(pending) {
			off = 0
		}
		win := window()
		keys := make([]string, 0, win)
		inWin := map[string]bool{}
		had := map[string]bool{} // keys with a stored generation when planned
		for i := off; i < len(pending) && len(keys) < win; i++ {
			it := pending[i]
			if !inWin[it.Key] {
				inWin[it.Key] = true
				keys = append(keys, it.Key)
			}
			if it.Stored != nil {
				had[it.Key] = true
			}
		}
		// Keys planned with nothing stored are claimed only while still
		// unstored (a peer's finished work is found by looking, below);
		// keys to continue are claimed whatever is stored.
		var fresh, cont []string
		for _, k := range keys {
			if had[k] {
				cont = append(cont, k)
			} else {
				fresh = append(fresh, k)
			}
		}
		// What is stored now is looked at after the claim: a peer may
		// have finished some of this work since the plan was made (or
		// since the last look), including work this process just claimed
		// (the peer stored it and released its claim while the claim
		// statement ran, after its snapshot: the statement could not see
		// either). ClaimUnstoredRead looks at least at the claimed keys
		// and those the claim passed over (a peer holds or stored them:
		// what a peer stored leaves pending now rather than being
		// claimed over again at every turn), and at the whole window once
		// nothing in it can be claimed.
		t0 := time.Now()
		var cr store.ClaimResult
		var now map[string]store.Generation
		var err error
		if len(cont) == 0 {
			cr, now, err = st.ClaimUnstoredRead(ctx, opt.Owner, fresh, opt.ClaimBatch, opt.Lease)
		} else {
			cr, err = st.ClaimUnstored(ctx, opt.Owner, fresh, opt.ClaimBatch, opt.Lease)
			if err == nil && len(cr.Claimed) < opt.ClaimBatch {
				var more store.ClaimResult
				more, err = st.Claim(ctx, opt.Owner, cont, opt.ClaimBatch-len(cr.Claimed), opt.Lease)
				cr.Claimed, cr.TakenOver = append(cr.Claimed, more.Claimed...), cr.TakenOver+more.TakenOver
			}
			if err == nil {
				now, err = st.Generations(ctx, p.Fingerprint, keys)
			}
		}
		sum.ClaimSeconds += time.Since(t0).Seconds()
		if err != nil {
			runErr = err
			break
		}
		sum.ClaimsTakenOver += cr.TakenOver
		mine := map[string]bool{}
		for _, k := range cr.Claimed {
			mine[k] = true
		}
		// The keys the claim passed over (before its last claim) are held
		// by live peers (those peers stored were read above): they move
		// to the end of pending, so that the next claims look at work
		// still free before they look at these again.
		passed := map[string]bool{}
		for _, k := range store.PassedOver(fresh, cr.Claimed) {
			passed[k] = true
		}
		var run, done, rest, held []*Item
		var release []string
		for _, it := range pending {
			if !inWin[it.Key] {
				rest = append(rest, it)
				continue
			}
			g, ok := now[it.Key]
			if ok && (it.Stored == nil || g.NTokens != it.Stored.NTokens || g.Finish != it.Stored.Finish || g.Continued != it.Stored.Continued) {
				// A peer stored (or extended) it: take what it made, and
				// do only what is still needed.
				it.Stored = &g
				it.NewTokens, it.Continue = needs(it, &g, ctxLen, false)
				if it.NewTokens == 0 {
					done = append(done, it)
					if mine[it.Key] {
						release = append(release, it.Key)
					}
					continue
				}
			}
			switch {
			case mine[it.Key]:
				run = append(run, it)
			case passed[it.Key]:
				held = append(held, it)
			default:
				rest = append(rest, it)
			}
		}
		if len(release) > 0 {
			st.Release(ctx, opt.Owner, release)
		}
		// Work a peer stored is not scored here: the peer committed its
		// scores with it, and the caller's CurrentResults scores whatever
		// this process's settings need beyond those (scoring it here
		// too would have every worker rewrite every peer's scores).
		for range done {
			sum.GenerationsByPeers++
			if opt.Progress != nil {
				opt.Progress.SampleDone()
			}
		}
		// rest keeps pending's order: the window's leftovers (held by
		// peers, when nothing could be claimed) stay where the window
		// began.
		winItems := 0
		for _, it := range rest {
			if inWin[it.Key] {
				winItems++
			}
		}
		pending = append(rest, held...)
		switch {
		case len(run) > 0:
			idle = 0
			t0 := time.Now()
			runErr = runBatch(ctx, st, be, p, run, opt, &sum)
			if adaptive {
				opt.ClaimBatch = nextClaimBatch(opt.ClaimBatch, minBatch, len(run), time.Since(t0))
				if flushAdaptive {
					// A batch that grew is committed in as few portions.
					opt.FlushSize = max(64, opt.ClaimBatch)
				}
			}
		case len(done) > 0:
			idle = 0
		default:
			// Nothing here for this process: look at the next window, and
			// wait once all of them were looked at in vain.
			off += winItems
			idle += winItems
			if idle >= len(pending) {
				idle, off = 0, 0
				if wp, ok := opt.Progress.(WaitProgress); ok && time.Since(noted) >= WaitNoteEvery {
					noted = time.Now()
					if w, err := waitFor(ctx, st, pending); err == nil && len(w.Holders) > 0 {
						wp.Waiting(w)
					}
				}
				select {
				case <-ctx.Done():
					runErr = ctx.Err()
				case <-time.After(opt.Poll):
				}
			}
		}
	}
	sum.GenSeconds = time.Since(genStart).Seconds()
	sum.Seconds = time.Since(start).Seconds()
	return sum, runErr
}

// nextClaimBatch is the default claim batch after a batch of n items
// claimed with batch cur took took: doubled (up to MaxClaimBatch) after a
// full batch faster than FastBatch, halved (down to least) after one slower
// than 4 × FastBatch.
func nextClaimBatch(cur, least, n int, took time.Duration) int {
	switch {
	case took < FastBatch && n >= cur:
		return max(min(2*cur, MaxClaimBatch), cur)
	case took > 4*FastBatch:
		return max(cur/2, least)
	}
	return cur
}

// startOffset is where in n pending items an owner starts claiming: a
// multiple of the window chosen by a hash of the owner id (0 when the work
// fits one window).
func startOffset(owner string, n, window int) int {
	if n <= window {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(owner))
	return int(h.Sum32()%uint32((n+window-1)/window)) * window
}

// NewOwner returns a claim owner id for this process: host, pid and a
// random suffix.
func NewOwner() string {
	host, _ := os.Hostname()
	return NewOwnerNamed(host)
}

// NewOwnerNamed returns a claim owner id for this process under a worker
// name: name, pid and a random suffix (unique even when several workers
// share a name).
func NewOwnerNamed(name string) string {
	var b [6]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", name, os.Getpid(), hex.EncodeToString(b[:]))
}

// runBatch runs the items (claimed by this process) on the backend and
// streams each finished generation, with its scores, into the store,
// releasing its claim once stored.
func runBatch(ctx context.Context, st *store.Store, be backends.Backend, p *Plan, work []*Item, opt Options, sum *Summary) error {
	tp, _ := opt.Progress.(TokenProgress)
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
	var mu sync.Mutex // guards sum counters updated from the sink
	sink := func(ev backends.Event) bool {
		s := states[ev.Index]
		for j, id := range ev.IDs {
			s.offsets = append(s.offsets, len(s.text))
			s.ids = append(s.ids, id)
			if j == len(ev.IDs)-1 {
				s.text = append(s.text, ev.Text...)
			}
		}
		newTokens := len(ev.IDs)
		if len(ev.IDs) == 0 && ev.Text != "" {
			// A server backend streams text pieces without ids: count
			// each piece as a token for progress.
			s.text = append(s.text, ev.Text...)
			newTokens = 1
		}
		if newTokens > 0 && opt.Progress != nil {
			s.reported += newTokens
			opt.Progress.Tokens(newTokens)
		}
		done := s.matcher.Feed(ev.Text)
		if ev.Done {
			g := s.record(p.Fingerprint, ev, opt.RunID)
			mu.Lock()
			newTok := g.NTokens
			if s.it.Continue {
				newTok -= s.it.Stored.NTokens
				sum.GenerationsContinued++
			} else {
				sum.GenerationsNew++
			}
			sum.GeneratedTokens += max(newTok, 0)
			if g.Finish != backends.FinishContext { // an overflowing prompt is never prefilled
				sum.PromptTokens += ev.PromptTokens
			}
			if g.Finish == backends.FinishError || g.Finish == backends.FinishContext {
				sum.Errors++
			}
			if g.Finish == backends.FinishContext {
				sum.Overflowed = append(sum.Overflowed, s.it.Sample.Task+"/"+s.it.Sample.ID)
			}
			if g.Finish == backends.FinishError {
				msg := s.it.Sample.Task + "/" + s.it.Sample.ID + ": " + g.Error
				if s.it.Stored != nil && failReason(s.it.Stored) == "" {
					msg += " (the generation stored before this attempt is kept)"
				}
				sum.ErrorSamples = append(sum.ErrorSamples, msg)
			}
			mu.Unlock()
			results <- result{it: s.it, gen: g}
			if opt.Progress != nil && max(newTok, 0) != s.reported {
				// Progress counted streamed pieces (a server's carry no
				// ids): its total now agrees with the summary's.
				opt.Progress.Tokens(max(newTok, 0) - s.reported)
			}
			if tp != nil {
				prefilled := ev.PromptTokens
				if g.Finish == backends.FinishContext {
					prefilled = 0 // as in the summary: never prefilled
				}
				tp.SampleEnded(s.it.Sample.Task+"/"+s.it.Sample.ID, prefilled, s.it.NewTokens, max(newTok, 0), g.Error)
			}
			if opt.Progress != nil {
				opt.Progress.SampleDone()
			}
			return false
		}
		return !done
	}
	var genErr error
	if len(reqs) > 0 {
		genErr = be.Generate(gctx, reqs, sink)
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

// writeOutcome is what the writer reports when the results are drained.
type writeOutcome struct {
	err        error
	unscorable []string
}

// writeResults commits the results as they come, in portions, until the
// channel is closed; ctx outlives an interrupt by store.CommitGrace, so
// that finished work is still written. The first failed commit is passed
// to fail (and reported once the results are drained).
func writeResults(ctx context.Context, st *store.Store, results <-chan result, opt Options, fail func(error)) writeOutcome {
	var gens []store.Generation
	var scores []store.Score
	var firstErr error
	var unscorable []string
	flush := func() {
		if len(gens) == 0 {
			return
		}
		// Stored and released together: peers waiting for these read
		// them from the store.
		if err := st.CommitGenerations(ctx, opt.Owner, gens, scores); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("store generations: %w", err)
			fail(firstErr)
		}
		gens, scores = gens[:0], scores[:0]
	}
	tick := time.NewTicker(opt.FlushEvery)
	defer tick.Stop()
	for {
		select {
		case r, ok := <-results:
			if !ok {
				flush()
				return writeOutcome{firstErr, unscorable}
			}
			gens = append(gens, r.gen)
			if r.gen.Finish != backends.FinishError && r.gen.Finish != backends.FinishContext {
				for k := range r.it.Job.Settings {
					sc, warn := scoreSetting(r.it, &r.gen, k, opt.RunID, nil)
					if warn != "" {
						unscorable = append(unscorable, warn)
					}
					scores = append(scores, sc...)
				}
			}
			if len(gens) >= opt.FlushSize {
				flush()
			}
		case <-tick.C:
			flush()
		}
	}
}

// Unscorable is the score stored for a (sample, setting) whose prediction
// the metric's reference cannot score (the reference raises): the run goes
// on, the sample is left out of that metric's mean, and this score (value
// 1) counts such samples.
const Unscorable = "unscorable"

// scoreSetting scores a generation under setting k of its job (dg, when
// not nil, is the sample's digester). A scorer error does not stop the
// run: the pair gets an Unscorable score and warn describes the error.
func scoreSetting(it *Item, g *store.Generation, k int, runID int64, dg *ScoreDigester) (scores []store.Score, warn string) {
	set := it.Job.Settings[k]
	budget := it.Job.MaxTokens
	pred, ok, _ := it.truncate(g, set)
	if !ok {
		// The generation still cannot answer (it ended early on a stop that
		// only other settings share); leave it for a continuation.
		return nil, ""
	}
	vals, err := it.Job.Score(pred, *it.Sample)
	if err != nil {
		vals = map[string]float64{Unscorable: 1}
		warn = fmt.Sprintf("%s/%s under %s: %v", it.Sample.Task, it.Sample.ID, set.Name, err)
	}
	if dg == nil {
		x := NewScoreDigester(it.Job, it.Sample)
		dg = &x
	}
	digest := dg.Digest(set, budget, pred)
	out := make([]store.Score, 0, len(vals))
	for m, v := range vals {
		out = append(out, store.Score{GenKey: g.Key, Task: it.Sample.Task, SampleID: it.Sample.ID, Setting: set.Name,
			SettingKey: set.Key(), Budget: budget, Metric: m, Value: v, Prediction: pred, RunID: runID, Digest: digest})
	}
	return out, warn
}

// Results holds scores per task, setting and metric: the values in sample
// order. A failed sample (backend error, prompt beyond the context) is in
// every metric's list with value 0 and its reason in Failed; a sample the
// metric's reference could not score is only under Unscorable.
type Results map[string]map[string]map[string][]SampleScore

// SampleScore is one sample's value of one metric.
type SampleScore struct {
	SampleID   string
	Value      float64
	Prediction string
	// Failed is why the sample failed ("" when it was scored); a failed
	// sample's Value is 0.
	Failed string
}

// NoneScored is the metric name under which failed samples are listed when
// no sample of the task was scored (so no metric names are known).
const NoneScored = "(none scored)"

// Mean is a mean that is written to JSON as null when it is undefined
// (NaN, as when nothing was scored).
type Mean float64

// MarshalJSON writes the mean, or null when it is NaN or infinite.
func (m Mean) MarshalJSON() ([]byte, error) {
	f := float64(m)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

// SampleCounts is the number of samples scored and failed in one task and
// setting.
type SampleCounts struct {
	Scored int `json:"n_scored"`
	Failed int `json:"n_failed"`
}

// ScoreOptions tune CurrentResults.
type ScoreOptions struct {
	// Write stores what was (re)computed; read-only commands leave it
	// unset and recompute in memory.
	Write bool
	// Force recomputes every score, stale or not (tally rescore).
	Force bool
	RunID int64
}

// ScoreReport is what CurrentResults did.
type ScoreReport struct {
	// Scored counts the (sample, setting) pairs computed now; Recomputed
	// those of them that had stale stored scores.
	Scored, Recomputed int
	// Unscorable lists the pairs the metrics could not score.
	Unscorable []string
}

// CurrentResults returns the scores of the plan's items as they are now:
// it reads the stored generations and scores, uses every stored score
// whose digest is current, and computes (no model work) every score that
// is missing or stale, storing those with opt.Write. Scores of metrics the
// task no longer names are not returned (and, with Write, are removed).
//
// It works through the items resultsChunk at a time (read, score, write),
// so that what it holds beyond the results is one portion's generations
// and scores, whatever the size of the plan.
func CurrentResults(ctx context.Context, st *store.Store, p *Plan, opt ScoreOptions) (Results, ScoreReport, error) {
	c := &collector{out: Results{}, opt: opt}
	for lo := 0; lo < len(p.Items); lo += resultsChunk {
		if err := c.portion(ctx, st, p.Items[lo:min(lo+resultsChunk, len(p.Items))]); err != nil {
			return nil, c.rep, err
		}
	}
	for _, f := range c.failures {
		metrics := c.out.Metrics(f.task)
		if len(metrics) == 0 {
			metrics = []string{NoneScored}
		}
		for _, m := range metrics {
			if m != Unscorable {
				c.out.add(f.task, f.set, m, SampleScore{SampleID: f.id, Failed: f.reason})
			}
		}
	}
	return c.out, c.rep, nil
}

// resultsChunk is how many items CurrentResults reads, scores and writes
// at a time (fewer than store.Generations' threshold for a scan of the
// whole model: a portion's generations are looked up by key).
const resultsChunk = 1024

// collector gathers CurrentResults over portions of a plan's items.
type collector struct {
	out      Results
	rep      ScoreReport
	opt      ScoreOptions
	failures []failure
}

// failure is a failed sample under one setting, added to every metric's
// list once all are known.
type failure struct{ task, set, id, reason string }

// add appends x to the list of a task, setting and metric.
func (r Results) add(task, set, metric string, x SampleScore) {
	if r[task] == nil {
		r[task] = map[string]map[string][]SampleScore{}
	}
	if r[task][set] == nil {
		r[task][set] = map[string][]SampleScore{}
	}
	r[task][set][metric] = append(r[task][set][metric], x)
}

// portion does CurrentResults' work for some items: reads their
// generations and stored scores, keeps the current ones, computes the
// others, and (opt.Write) stores what it computed and deletes the scores
// of samples that failed.
func (c *collector) portion(ctx context.Context, st *store.Store, items []*Item) error {
	keys := make([]string, 0, len(items))
	for _, it := range items {
		keys = append(keys, it.Key)
	}
	gens, err := st.Generations(ctx, "", keys)
	if err != nil {
		return err
	}
	// Recomputing every score needs only what the stored ones are (their
	// digests cover the predictions); otherwise the current ones are
	// returned as they are, predictions included.
	readScores := st.ScoresFor
	if c.opt.Force {
		readScores = st.ScoreStatesFor
	}
	all, err := readScores(ctx, keys)
	if err != nil {
		return err
	}
	byKey := map[store.ScoreKey][]store.Score{}
	for _, s := range all {
		byKey[s.Key()] = append(byKey[s.Key()], s)
	}
	var toWrite []store.Score
	var toDelete []store.ScoreKey
	for _, it := range items {
		g, ok := gens[it.Key]
		if !ok {
			continue
		}
		budget := it.Job.MaxTokens
		reason := failReason(&g)
		var dg *ScoreDigester
		for k, set := range it.Job.Settings {
			sk := store.ScoreKey{GenKey: it.Key, Task: it.Sample.Task, SampleID: it.Sample.ID, SettingKey: set.Key(), Budget: budget}
			rows := byKey[sk]
			if reason != "" {
				c.failures = append(c.failures, failure{it.Sample.Task, set.Name, it.Sample.ID, reason})
				if len(rows) > 0 {
					toDelete = append(toDelete, sk)
				}
				continue
			}
			pred, ok, _ := it.truncate(&g, set)
			if !ok {
				continue // needs more generation
			}
			isCurrent := false
			if len(rows) > 0 {
				if dg == nil {
					x := NewScoreDigester(it.Job, it.Sample)
					dg = &x
				}
				isCurrent = current(rows, dg.Digest(set, budget, pred))
			}
			if !c.opt.Force && isCurrent {
				for _, s := range rows {
					// The metrics of one sample and setting share its prediction.
					c.out.add(s.Task, set.Name, s.Metric, SampleScore{SampleID: s.SampleID, Value: s.Value, Prediction: rows[0].Prediction})
				}
				continue
			}
			if dg == nil {
				x := NewScoreDigester(it.Job, it.Sample)
				dg = &x
			}
			sc, warn := scoreSetting(it, &g, k, c.opt.RunID, dg)
			if warn != "" {
				c.rep.Unscorable = append(c.rep.Unscorable, warn)
			}
			c.rep.Scored++
			if len(rows) > 0 && !isCurrent {
				c.rep.Recomputed++
			}
			for _, s := range sc {
				c.out.add(s.Task, set.Name, s.Metric, SampleScore{SampleID: s.SampleID, Value: s.Value, Prediction: s.Prediction})
			}
			if !sameScores(sc, rows) {
				toWrite = append(toWrite, sc...)
			}
		}
	}
	if c.opt.Write {
		if err := st.PutScores(ctx, toWrite); err != nil {
			return fmt.Errorf("store scores: %w", err)
		}
		if err := st.DeleteScores(ctx, toDelete); err != nil {
			return err
		}
	}
	return nil
}

// sameScores reports whether the scores computed for one sample and
// setting are those stored (same metrics, values and digest, which covers
// the prediction):
// writing them again would change nothing but the run that wrote them.
func sameScores(computed, stored []store.Score) bool {
	if len(computed) != len(stored) {
		return false
	}
	byMetric := make(map[string]store.Score, len(stored))
	for _, s := range stored {
		byMetric[s.Metric] = s
	}
	for _, c := range computed {
		s, ok := byMetric[c.Metric]
		if !ok || c.Digest != s.Digest || !sameValue(c.Value, s.Value) { // the digest covers the prediction
			return false
		}
	}
	return true
}

// sameValue reports whether two stored values are equal, an undefined
// value (NaN or infinite, stored as NULL) equal to any other.
func sameValue(a, b float64) bool {
	undefined := func(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }
	if undefined(a) || undefined(b) {
		return undefined(a) && undefined(b)
	}
	return a == b
}

// current reports whether every stored score row has the digest d.
func current(rows []store.Score, d string) bool {
	for _, r := range rows {
		if r.Digest != d {
			return false
		}
	}
	return true
}

// ReadResults returns the current scores of the plan's items without
// writing anything: stale or missing scores are computed in memory.
func ReadResults(ctx context.Context, st *store.Store, p *Plan) (Results, error) {
	res, _, err := CurrentResults(ctx, st, p, ScoreOptions{})
	return res, err
}

// Failures returns, sorted, the failed samples of the results as
// "task/id under setting: reason".
func (r Results) Failures() []string {
	seen := map[string]bool{}
	var out []string
	for task, bySet := range r {
		for set, byMetric := range bySet {
			for _, xs := range byMetric {
				for _, x := range xs {
					if x.Failed == "" {
						continue
					}
					s := fmt.Sprintf("%s/%s under %s: %s", task, x.SampleID, set, x.Failed)
					if !seen[s] {
						seen[s] = true
						out = append(out, s)
					}
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// Metrics returns the sorted metric names present for a task.
func (r Results) Metrics(task string) []string {
	seen := map[string]bool{}
	for _, byMetric := range r[task] {
		for m := range byMetric {
			seen[m] = true
		}
	}
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// Rescore recomputes, with no model work, the scores of every (sample,
// setting) of the jobs that a stored generation answers, replacing the
// stored scores, and returns what it did. It streams: one job at a time is
// keyed (PlanKeys), scored (CurrentResults, a portion of its items at a
// time) and handed to each with its plan and results, then dropped, so
// that what it holds beyond the jobs' samples is one job's results.
func Rescore(ctx context.Context, st *store.Store, be backends.Backend, jobs []*Job, each func(*Job, *Plan, Results) error) (ScoreReport, error) {
	var rep ScoreReport
	for _, j := range jobs {
		p, err := PlanKeys(ctx, be, []*Job{j})
		if err != nil {
			return rep, fmt.Errorf("rescore: %w", err)
		}
		res, r, err := CurrentResults(ctx, st, p, ScoreOptions{Write: true, Force: true})
		if err != nil {
			return rep, fmt.Errorf("rescore: %w", err)
		}
		rep.Scored, rep.Recomputed = rep.Scored+r.Scored, rep.Recomputed+r.Recomputed
		rep.Unscorable = append(rep.Unscorable, r.Unscorable...)
		if err := each(j, p, res); err != nil {
			return rep, err
		}
	}
	return rep, nil
}
