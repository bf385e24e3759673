package generate

// This file holds Execute: the plan's model work, shared with peer
// processes through the store's claims.

import (
	"context"
	"fmt"
	"os"
	"time"

	"tally/backends"
	"tally/store"
)

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
	Samples           int `json:"samples"`
	GenerationsNew    int `json:"generations_new"`
	GenerationsReused int `json:"generations_reused"`
	// GenerationsFailed counts the samples whose stored generation failed
	// and is not run again (a prompt still beyond the context): neither
	// reused nor generated.
	GenerationsFailed    int `json:"generations_failed"`
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
func Execute(ctx context.Context, st *store.Store, be backends.Backend, p *Plan, opt Options) (sum Summary, err error) {
	start := time.Now()
	x := newExecutor(st, be, p, opt)
	// The returned summary's, set once it is returned (x.sum was copied).
	defer func() { sum.Seconds = time.Since(start).Seconds() }()
	if err := x.scoreStored(ctx); err != nil {
		return x.sum, err
	}
	pending := p.Work()
	if err := st.PruneClaims(ctx); err != nil {
		return x.sum, err
	}
	if len(pending) == 0 {
		return x.sum, nil
	}
	if x.opt.Progress != nil {
		x.opt.Progress.Start(len(pending))
		defer x.opt.Progress.Finish()
	}
	leave, err := x.join(ctx)
	if err != nil {
		return x.sum, err
	}
	err = x.work(ctx, pending)
	leave(err)
	return x.sum, err
}

// executor is one Execute: its plan and options, what it did so far, and
// where it is in the claim loop.
type executor struct {
	st  *store.Store
	be  backends.Backend
	p   *Plan
	opt Options
	sum Summary
	// adaptive and flushAdaptive say that the claim batch and the flush
	// size are the defaults, which follow the speed of the work (from at
	// least minBatch).
	adaptive, flushAdaptive bool
	minBatch                int
	// off is where in the pending work the next window starts, idle how
	// many pending items were looked at in vain since the last progress,
	// and noted when a WaitProgress was last told whom this process waits
	// for.
	off, idle int
	noted     time.Time
}

// newExecutor is the executor of a plan, opt's zero values replaced by
// their defaults.
func newExecutor(st *store.Store, be backends.Backend, p *Plan, opt Options) *executor {
	x := &executor{st: st, be: be, p: p, sum: Summary{Samples: len(p.Items)}}
	if opt.FlushEvery <= 0 {
		opt.FlushEvery = 200 * time.Millisecond
	}
	x.flushAdaptive = opt.FlushSize <= 0
	if x.flushAdaptive {
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
	x.adaptive = opt.ClaimBatch <= 0
	if x.adaptive {
		opt.ClaimBatch = max(16, 4*be.Slots())
	}
	x.minBatch, x.opt = opt.ClaimBatch, opt
	return x
}

// scoreStored scores what the store already answers, with no model work:
// each setting a stored generation answers and that has no current score.
// A stored generation that failed and is not run again (a prompt still
// beyond the context) is counted as failed, not reused.
func (x *executor) scoreStored(ctx context.Context) error {
	var scores []store.Score
	for _, it := range x.p.Items {
		if it.Stored == nil || it.NewTokens > 0 {
			continue
		}
		if it.FailReason != "" {
			x.sum.GenerationsFailed++
			continue
		}
		x.sum.GenerationsReused++
		for k, stt := range it.Statuses {
			if stt == Answerable {
				sc, warn, fatal := scoreSetting(it, it.Stored, k, x.opt.RunID, nil)
				if fatal != nil {
					if err := x.st.PutScores(ctx, scores); err != nil {
						return fmt.Errorf("store scores: %w", err)
					}
					return fatal
				}
				if warn != "" {
					x.sum.Unscorable = append(x.sum.Unscorable, warn)
				}
				if it.Stale[k] {
					x.sum.Recomputed++
				}
				scores = append(scores, sc...)
			}
		}
	}
	if err := x.st.PutScores(ctx, scores); err != nil {
		return fmt.Errorf("store scores: %w", err)
	}
	return nil
}

// join registers this process as a worker of the store and renews its
// claims every Lease/3 while it works; leave, given how the work ended,
// stops the renewals, releases the claims and records the worker's end,
// even when interrupted (within store.CommitGrace of the signal).
func (x *executor) join(ctx context.Context) (leave func(error), err error) {
	host, _ := os.Hostname()
	if err := x.st.RegisterWorker(ctx, store.Worker{ID: x.opt.Owner, Host: host, PID: os.Getpid(), RunID: x.opt.RunID,
		Model: x.opt.Model, Fingerprint: x.p.Fingerprint, Lease: x.opt.Lease}); err != nil {
		return nil, err
	}
	renewCtx, stopRenew := context.WithCancel(context.Background())
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(x.opt.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-renewCtx.Done():
				return
			case <-t.C:
				x.st.Renew(renewCtx, x.opt.Owner, x.opt.Lease) // a failed renewal is retried at the next tick
			}
		}
	}()
	cleanup, endCleanup := store.WithGrace(ctx)
	return func(runErr error) {
		stopRenew()
		<-renewed
		x.st.Release(cleanup, x.opt.Owner, nil)
		status := store.WorkerDone
		if runErr != nil {
			status = store.WorkerStopped
		}
		x.st.EndWorker(cleanup, x.opt.Owner, status, x.sum.GenerationsNew+x.sum.GenerationsContinued)
		endCleanup()
	}, nil
}

// work does the pending model work, shared with any peer process through
// claims. Work is claimed from a window of the pending keys at a time (so
// that a claim and a look at what peers stored cost the same for any size
// of run); the window moves on when it holds nothing this process can
// claim, and once every window has been looked at without progress, the
// process waits for its live peers. Each process starts at its own place
// in the work (a hash of its owner id), so that workers started together
// do not all contend for the same first claims.
func (x *executor) work(ctx context.Context, pending []*Item) error {
	if tp, ok := x.opt.Progress.(TokenProgress); ok {
		tp.Work(workTokens(pending, x.be.ContextLength()))
	}
	genStart := time.Now()
	defer func() { x.sum.GenSeconds = time.Since(genStart).Seconds() }()
	x.off, x.idle = startOffset(x.opt.Owner, len(pending), x.window()), 0
	var err error
	for len(pending) > 0 && err == nil {
		pending, err = x.step(ctx, pending)
	}
	return err
}
