package generate

// This file holds Execute's claim loop: a window of the pending work
// claimed at a time, what peers finished taken, what live peers hold left
// for later, and the claim batch adapted to the speed of the work.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"os"
	"time"

	"tally/store"
)

// window is how many pending items a claim looks at.
func (x *executor) window() int { return max(4*x.opt.ClaimBatch, 64) }

// step claims work from the window of pending items at x.off, runs what
// it claimed, and returns the work still pending: what peers finished is
// taken, what a live peer holds moves to the end.
func (x *executor) step(ctx context.Context, pending []*Item) ([]*Item, error) {
	if x.off >= len(pending) {
		x.off = 0
	}
	w := windowAt(pending, x.off, x.window())
	t0 := time.Now()
	cr, now, err := x.claim(ctx, w)
	x.sum.ClaimSeconds += time.Since(t0).Seconds()
	if err != nil {
		return pending, err
	}
	x.sum.ClaimsTakenOver += cr.TakenOver
	s := x.sortWindow(ctx, pending, w, cr, now)
	pending = append(s.rest, s.held...)
	switch {
	case len(s.run) > 0:
		x.idle = 0
		t0 := time.Now()
		err := runBatch(ctx, x.st, x.be, x.p, s.run, x.opt, &x.sum)
		x.adapt(len(s.run), time.Since(t0))
		return pending, err
	case len(s.done) > 0:
		x.idle = 0
		return pending, nil
	}
	// Nothing here for this process: look at the next window, and wait
	// once all of them were looked at in vain.
	x.off += s.winItems
	x.idle += s.winItems
	if x.idle < len(pending) {
		return pending, nil
	}
	x.idle, x.off = 0, 0
	if wp, ok := x.opt.Progress.(WaitProgress); ok && time.Since(x.noted) >= WaitNoteEvery {
		x.noted = time.Now()
		if w, err := waitFor(ctx, x.st, pending); err == nil && len(w.Holders) > 0 {
			wp.Waiting(w)
		}
	}
	select {
	case <-ctx.Done():
		return pending, ctx.Err()
	case <-time.After(x.opt.Poll):
	}
	return pending, nil
}

// adapt sets the default claim batch (and flush size) after a batch of n
// items that took took.
func (x *executor) adapt(n int, took time.Duration) {
	if !x.adaptive {
		return
	}
	x.opt.ClaimBatch = nextClaimBatch(x.opt.ClaimBatch, x.minBatch, n, took)
	if x.flushAdaptive {
		// A batch that grew is committed in as few portions.
		x.opt.FlushSize = max(64, x.opt.ClaimBatch)
	}
}

// claimWindow is a window of the pending work: its keys, and which keys
// had a stored generation when planned (they are continued: claimed
// whatever is stored) and which had none (claimed only while unstored).
type claimWindow struct {
	keys, fresh, cont []string
	in                map[string]bool
}

// windowAt is the window of up to n keys of pending from off.
func windowAt(pending []*Item, off, n int) claimWindow {
	w := claimWindow{keys: make([]string, 0, n), in: map[string]bool{}}
	had := map[string]bool{} // keys with a stored generation when planned
	for i := off; i < len(pending) && len(w.keys) < n; i++ {
		it := pending[i]
		if !w.in[it.Key] {
			w.in[it.Key] = true
			w.keys = append(w.keys, it.Key)
		}
		if it.Stored != nil {
			had[it.Key] = true
		}
	}
	for _, k := range w.keys {
		if had[k] {
			w.cont = append(w.cont, k)
		} else {
			w.fresh = append(w.fresh, k)
		}
	}
	return w
}

// claim claims work of the window and reads what is stored now. What is
// stored is looked at after the claim: a peer may have finished some of
// this work since the plan was made (or since the last look), including
// work this process just claimed (the peer stored it and released its
// claim while the claim statement ran, after its snapshot: the statement
// could not see either). ClaimUnstoredRead looks at least at the claimed
// keys and those the claim passed over (a peer holds or stored them: what
// a peer stored leaves pending now rather than being claimed over again
// at every turn), and at the whole window once nothing in it can be
// claimed.
func (x *executor) claim(ctx context.Context, w claimWindow) (store.ClaimResult, map[string]store.Generation, error) {
	if len(w.cont) == 0 {
		return x.st.ClaimUnstoredRead(ctx, x.opt.Owner, w.fresh, x.opt.ClaimBatch, x.opt.Lease)
	}
	cr, err := x.st.ClaimUnstored(ctx, x.opt.Owner, w.fresh, x.opt.ClaimBatch, x.opt.Lease)
	if err == nil && len(cr.Claimed) < x.opt.ClaimBatch {
		var more store.ClaimResult
		more, err = x.st.Claim(ctx, x.opt.Owner, w.cont, x.opt.ClaimBatch-len(cr.Claimed), x.opt.Lease)
		cr.Claimed, cr.TakenOver = append(cr.Claimed, more.Claimed...), cr.TakenOver+more.TakenOver
	}
	if err != nil {
		return cr, nil, err
	}
	now, err := x.st.Generations(ctx, x.p.Fingerprint, w.keys)
	return cr, now, err
}

// sorted is the pending work after a claim: what this process claimed
// (run), what a peer finished (done), what is left (rest, in pending's
// order) and what live peers hold (held); winItems counts the window's
// items left in rest.
type sorted struct {
	run, done, rest, held []*Item
	winItems              int
}

// sortWindow sorts the pending work after a claim of window w (cr) and a
// look at what is stored (now). A key a peer stored (or extended) is
// taken as it made it, with only what is still needed left to do (and
// this process's claim on it released when nothing is); the keys the
// claim passed over (before its last claim) are held by live peers (those
// peers stored were read above): they move to the end of pending, so that
// the next claims look at work still free before they look at these
// again. Work a peer stored is not scored here: the peer committed its
// scores with it, and the caller's CurrentResults scores whatever this
// process's settings need beyond those (scoring it here too would have
// every worker rewrite every peer's scores).
func (x *executor) sortWindow(ctx context.Context, pending []*Item, w claimWindow, cr store.ClaimResult, now map[string]store.Generation) sorted {
	mine := map[string]bool{}
	for _, k := range cr.Claimed {
		mine[k] = true
	}
	passed := map[string]bool{}
	for _, k := range store.PassedOver(w.fresh, cr.Claimed) {
		passed[k] = true
	}
	ctxLen := x.be.ContextLength()
	var s sorted
	var release []string
	for _, it := range pending {
		if !w.in[it.Key] {
			s.rest = append(s.rest, it)
			continue
		}
		g, ok := now[it.Key]
		if ok && (it.Stored == nil || g.NTokens != it.Stored.NTokens || g.Finish != it.Stored.Finish || g.Continued != it.Stored.Continued) {
			it.Stored = &g
			it.NewTokens, it.Continue = needs(it, &g, ctxLen, false)
			if it.NewTokens == 0 {
				s.done = append(s.done, it)
				if mine[it.Key] {
					release = append(release, it.Key)
				}
				continue
			}
		}
		switch {
		case mine[it.Key]:
			s.run = append(s.run, it)
		case passed[it.Key]:
			s.held = append(s.held, it)
		default:
			s.rest = append(s.rest, it)
		}
	}
	if len(release) > 0 {
		x.st.Release(ctx, x.opt.Owner, release)
	}
	for range s.done {
		x.sum.GenerationsByPeers++
		if x.opt.Progress != nil {
			x.opt.Progress.SampleDone()
		}
	}
	// rest keeps pending's order: the window's leftovers (held by peers,
	// when nothing could be claimed) stay where the window began.
	for _, it := range s.rest {
		if w.in[it.Key] {
			s.winItems++
		}
	}
	return s
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
