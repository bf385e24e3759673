package gomlx

import (
	"context"
	"fmt"

	"github.com/gomlx/gomlx/core/tensors"
)

// minShare is the shortest common prefix worth sharing between requests.
const minShare = minChunk

// sharer implements prefix sharing inside one Generate call. Requests with
// the same ShareKey have a shared length P (the longest common prefix of
// their prompt+prefix ids, kept one token short of the shortest so every
// request prefills at least its last token). The first request of a key
// prefills those P tokens into its slot; every other slot that takes a
// request of the key gets them by the copy graph (buildCopy) from a slot
// that still holds them, then prefills only its suffix. A slot holds a
// key's prefix from when it takes a request of that key until it takes a
// request of another key: decode and suffix prefill write only positions
// ≥ P, and a finished slot's rows stay in the cache until it is refilled.
type sharer struct {
	m             *Model
	batch, length int
	budget        int            // the prefill budget (see prefillBudget)
	shared        map[string]int // ShareKey → P (keys worth sharing only)
	holds         []string       // per slot: the key whose prefix it holds, or ""
}

// newSharer computes the shared prefix of every ShareKey among jobs.
func (m *Model) newSharer(jobs []*job, batch, length, budget int) *sharer {
	s := &sharer{m: m, batch: batch, length: length, budget: budget, shared: map[string]int{}, holds: make([]string, batch)}
	if m.opts.NoPrefixSharing {
		return s
	}
	first := map[string][]int{}
	count := map[string]int{}
	for _, j := range jobs {
		k := j.req.ShareKey
		if k == "" {
			continue
		}
		count[k]++
		p, ok := first[k]
		if !ok {
			first[k] = j.seq[:len(j.seq)-1]
			continue
		}
		n := 0
		for n < len(p) && n < len(j.seq)-1 && p[n] == j.seq[n] {
			n++
		}
		first[k] = p[:n]
	}
	for k, p := range first {
		if count[k] > 1 && len(p) >= minShare {
			s.shared[k] = len(p)
		}
	}
	return s
}

// place prepares the cache for jobs just placed in the fresh slots and
// returns the prefill rows still to run. Requests of a shared key get their
// prefix by a copy from a slot that holds it (the copy runs before anything
// of this refill is prefilled, so it reads the cache as it was) or, when no
// slot holds it, one of them prefills the prefix and the others copy it
// from there; their rows then start at P. Other requests prefill in full.
func (s *sharer) place(ctx context.Context, cache []*tensors.Tensor, fresh []int, slots []*slotState) ([]*prefillRow, error) {
	m := s.m
	// copies[0] reads slots as they were; copies[1] reads the slots whose
	// prefix is prefilled in this refill (seeds).
	var copies [2]struct {
		src, keep []int32
		n         int
	}
	for c := range copies {
		copies[c].src = make([]int32, s.batch)
		copies[c].keep = make([]int32, s.batch)
		for b := range s.batch {
			copies[c].src[b], copies[c].keep[b] = int32(b), int32(s.length)
		}
	}
	holder := map[string]int{}
	for b, k := range s.holds {
		if k != "" {
			if _, ok := holder[k]; !ok {
				holder[k] = b
			}
		}
	}
	seed := map[string]int{}
	var seeds, rows []*prefillRow
	for _, i := range fresh {
		j := slots[i].job
		k := j.req.ShareKey
		p, ok := s.shared[k]
		if !ok {
			s.holds[i] = ""
			rows = append(rows, &prefillRow{slot: i, ids: j.seq})
			continue
		}
		s.holds[i] = k
		rows = append(rows, &prefillRow{slot: i, ids: j.seq, done: p})
		if h, ok := holder[k]; ok {
			copies[0].src[i], copies[0].keep[i] = int32(h), int32(p)
			copies[0].n++
			m.stats.SharedTokens += p
			continue
		}
		if h, ok := seed[k]; ok {
			copies[1].src[i], copies[1].keep[i] = int32(h), int32(p)
			copies[1].n++
			m.stats.SharedTokens += p
			continue
		}
		seed[k] = i
		seeds = append(seeds, &prefillRow{slot: i, ids: j.seq[:p]})
	}
	if copies[0].n > 0 {
		if err := m.copyRows(cache, s.batch, s.length, copies[0].src, copies[0].keep); err != nil {
			return nil, fmt.Errorf("share prefix: %w", err)
		}
	}
	if len(seeds) > 0 {
		if err := m.prefill(ctx, cache, s.batch, s.length, seeds, false, s.budget); err != nil {
			return nil, fmt.Errorf("prefill shared prefix: %w", err)
		}
	}
	if copies[1].n > 0 {
		if err := m.copyRows(cache, s.batch, s.length, copies[1].src, copies[1].keep); err != nil {
			return nil, fmt.Errorf("share prefix: %w", err)
		}
	}
	return rows, nil
}
