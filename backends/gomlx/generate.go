package gomlx

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"

	"tally/backends"
)

// minCache is the smallest cache-length bucket; minChunk the smallest
// prefill chunk.
const (
	minCache = 64
	minChunk = 16
)

// pow2AtLeast is the smallest power of two ≥ n (and ≥ 1).
func pow2AtLeast(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}

// minBlock is the smallest prefill attention block (and chunk step).
const minBlock = 8

// blockLength is the attention block of a prefill chunk of n tokens, and
// the step chunk lengths (and key bases) are rounded to: an eighth of the
// power of two ≥ n, at least minBlock. Rounding n up to it pads less than
// a quarter of the chunk once n ≥ 4·minBlock (n > P/2 for P the power of
// two, so the padding, under P/8, is under n/4), and leaves at most 8
// blocks per chunk.
func blockLength(n int) int {
	return max(pow2AtLeast(n)/8, minBlock)
}

// chunkLength is the prefill chunk for a row with n tokens left: n rounded
// up to blockLength(n).
func chunkLength(n int) int {
	return roundUp(max(n, 1), blockLength(n))
}

// roundUp rounds n up to a multiple of step.
func roundUp(n, step int) int {
	return (n + step - 1) / step * step
}

// decodeKeys is the attended-key bucket of a decode step whose rows hold
// at most n tokens, in a cache of length tokens: n rounded up to
// blockLength(n), at least minCache, at most length. The padded keys are
// under a quarter of the bucket (n ≥ minCache), where powers of two pad up
// to half of it. A bucket over half the cache is the whole cache: taking
// the bucket's keys out of the cache is a copy on every step and layer
// (the pure-Go backend's Slice, element by element), which costs more
// than attending the rest of the cache in place (BenchmarkCPUBenchModel,
// 270-token prompts, 128 new tokens in a 512-token cache: decode 1.2×
// faster at batch 1 and 1.45× at batch 8 than with the bucket sliced).
// The pure-Go backend rounds the bucket further (invariance.keyCount).
func decodeKeys(n, length int) int {
	k := min(roundUp(max(n, minCache), blockLength(n)), length)
	if 2*k > length {
		return length
	}
	return k
}

// keyBuckets lists the decodeKeys buckets of a cache of length tokens.
func keyBuckets(length int) []int {
	var out []int
	for n := 1; n <= length; {
		k := decodeKeys(n, length)
		out = append(out, k)
		n = k + 1
	}
	return out
}

// batchBucket rounds a row count up to a power of two, capped at max.
func batchBucket(n, max int) int {
	return min(pow2AtLeast(n), max)
}

// cacheBucket rounds a cache length up to a power of two ≥ minCache.
func cacheBucket(n int) int {
	return pow2AtLeast(max(n, minCache))
}

// fineCache is the cache length above which cacheLength rounds to eighths
// of a power of two instead of a power of two.
const fineCache = 8192

// cacheLen is the KV cache length a run of need tokens allocates:
// cacheLength on the one-graph step (a graph per length), and on the split
// step, whose graphs do not depend on it, need in whole key blocks
// (splitCacheLength).
func (m *Model) cacheLen(need int) int {
	if m.useSplit() {
		return splitCacheLength(need)
	}
	return cacheLength(need)
}

// splitCacheLength is the split step's KV cache length for n tokens: n
// rounded up to whole key blocks (kvBlock).
func splitCacheLength(n int) int { return roundUp(max(n, 1), kvBlock) }

// cacheLength is the KV cache length allocated for n tokens: cacheBucket
// up to fineCache, then a multiple of an eighth of cacheBucket(n) (so a
// 128k prompt plus budget gets 160k rows, not 256k).
func cacheLength(n int) int {
	b := cacheBucket(n)
	if b <= fineCache {
		return b
	}
	step := b / 8
	return (n + step - 1) / step * step
}

// newCache allocates zeroed K/V caches of batch rows and length tokens,
// laid out as cacheDims says.
func (m *Model) newCache(batch, length int) []*tensors.Tensor {
	if m.useSplit() {
		return m.newSplitCache(batch, length)
	}
	c := m.cfg
	out := make([]*tensors.Tensor, 2*c.NumLayers)
	for i := range out {
		out[i] = tensors.FromShape(shapesF32(cacheDims(c, m.lay.inv, batch, length, i%2 == 1)...))
	}
	return out
}

func freeCache(cache []*tensors.Tensor) {
	for _, t := range cache {
		if t != nil {
			_ = t.FinalizeAll()
		}
	}
}

// prefillRow is one sequence being prefilled into a cache slot.
type prefillRow struct {
	slot   int
	ids    []int
	done   int
	logits []float32   // last-position logits, when finished
	all    [][]float32 // every position's logits (fullLogits only)
}

// remaining is the number of r's prompt tokens not prefilled yet.
func (r *prefillRow) remaining() int { return len(r.ids) - r.done }

// chunk is the prefill chunk that fits r's remaining tokens, capped by
// limit (none when 0).
func (r *prefillRow) chunk(limit int) int {
	n := r.remaining()
	if limit > 0 {
		n = min(n, limit)
	}
	return chunkLength(n)
}

// unfinished returns the rows with prompt tokens left to prefill, the
// longest first (rows of equal length in their order).
func unfinished(rows []*prefillRow) []*prefillRow {
	var active []*prefillRow
	for _, r := range rows {
		if r.remaining() > 0 {
			active = append(active, r)
		}
	}
	sort.SliceStable(active, func(i, j int) bool { return active[i].remaining() > active[j].remaining() })
	return active
}

// prefill runs rows (each in its own slot) through the model in chunks,
// writing their keys and values into cache and recording each row's last
// logits. all asks for every position's logits (one chunk, one row).
// budget bounds one call's attention scores (rows × heads × chunk × keys,
// see prefillBudget).
func (m *Model) prefill(ctx context.Context, cache []*tensors.Tensor, batch, length int, rows []*prefillRow, all bool, budget int) error {
	if m.useSplit() {
		return m.prefillSplit(ctx, cache, batch, length, rows, all, budget)
	}
	H := m.cfg.NumHeads
	V := m.cfg.VocabSize
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("prefill: %w", err)
		}
		active := unfinished(rows)
		if len(active) == 0 {
			return nil
		}
		R := batchBucket(len(active), batch)
		// The chunk fits the longest remaining row (capped by limit, a
		// power of two, when the attention budget asks for less); the
		// cache positions before it are bounded by base.
		limit := 0
		chunk := func() int { return active[0].chunk(limit) }
		base := func() int {
			d := 0
			for _, r := range active[:min(R, len(active))] {
				d = max(d, r.done)
			}
			return min(roundUp(d, blockLength(d)), length)
		}
		C := chunk()
		keys := func() int { return m.lay.inv.keyCount(min(base()+C, length), length) }
		if !all {
			for C > 256 && R*H*C*keys() > budget {
				limit = pow2AtLeast(C) / 2
				C = chunk()
			}
			for R > 1 && R*H*C*keys() > budget {
				R /= 2
			}
			for C > minChunk && R*H*C*keys() > budget {
				limit = pow2AtLeast(C) / 2
				C = chunk()
			}
		}
		TK := keys()
		group := active[:min(R, len(active))]
		{
			tokens := make([]int32, R*C)
			positions := make([]int32, R*C)
			valid := make([]bool, R*C)
			slots := make([]int32, R)
			clear := make([]bool, batch)
			last := make([]int32, R)
			ns := make([]int, R)
			for i, r := range group {
				n := min(C, len(r.ids)-r.done)
				ns[i] = n
				slots[i] = int32(r.slot)
				if n <= 0 {
					continue
				}
				if r.done == 0 {
					clear[r.slot] = true
				}
				for j := range C {
					positions[i*C+j] = int32(r.done + j)
					if j < n {
						tokens[i*C+j] = int32(r.ids[r.done+j])
						valid[i*C+j] = true
					}
				}
				last[i] = int32(n - 1)
				m.stats.PrefillTokens += n
			}
			key := graphKey{Rows: R, Chunk: C, Batch: batch, Cache: length, Keys: TK,
				Base: base(), Block: blockLength(C), All: all}
			g, err := m.graphFor(key)
			if err != nil {
				return err
			}
			t0 := time.Now()
			out, err := m.run(g, []*tensors.Tensor{
				tensors.FromFlatDataAndDimensions(tokens, R, C),
				tensors.FromFlatDataAndDimensions(positions, R, C),
				tensors.FromFlatDataAndDimensions(valid, R, C),
				tensors.FromFlatDataAndDimensions(slots, R),
				tensors.FromFlatDataAndDimensions(clear, batch),
				tensors.FromFlatDataAndDimensions(last, R),
			}, cache)
			if err != nil {
				return err
			}
			m.stats.PrefillCalls++
			m.stats.PrefillSeconds += time.Since(t0).Seconds()
			logits, err := tensors.CopyFlatData[float32](out)
			_ = out.FinalizeAll()
			if err != nil {
				return fmt.Errorf("read logits: %w", err)
			}
			for i, r := range group {
				if ns[i] <= 0 {
					continue
				}
				r.done += ns[i]
				if r.done == len(r.ids) {
					if all {
						r.all = make([][]float32, ns[i])
						for j := range ns[i] {
							r.all[j] = logits[(i*C+j)*V : (i*C+j+1)*V]
						}
						r.logits = r.all[ns[i]-1]
					} else {
						r.logits = logits[i*V : (i+1)*V]
					}
				}
			}
		}
	}
}

// decodeStep feeds one token per cache row at the given positions
// (valid false rows write nothing) and returns each row's argmax.
func (m *Model) decodeStep(cache []*tensors.Tensor, batch, length int, tokens, positions []int32, valid []bool) ([]int32, error) {
	if m.useSplit() {
		return m.decodeSplit(cache, batch, length, tokens, positions, valid)
	}
	maxPos := 0
	for i, p := range positions {
		if valid[i] {
			maxPos = max(maxPos, int(p))
		}
	}
	keys := m.lay.inv.keyCount(decodeKeys(maxPos+1, length), length)
	g, err := m.graphFor(graphKey{Decode: true, Rows: batch, Chunk: 1, Batch: batch, Cache: length, Keys: keys})
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	out, err := m.run(g, []*tensors.Tensor{
		tensors.FromFlatDataAndDimensions(tokens, batch, 1),
		tensors.FromFlatDataAndDimensions(positions, batch, 1),
		tensors.FromFlatDataAndDimensions(valid, batch, 1),
	}, cache)
	if err != nil {
		return nil, err
	}
	m.stats.DecodeSteps++
	m.stats.DecodeSeconds += time.Since(t0).Seconds()
	ids, err := tensors.CopyFlatData[int32](out)
	_ = out.FinalizeAll()
	if err != nil {
		return nil, fmt.Errorf("read ids: %w", err)
	}
	return ids, nil
}

// argmax returns the first index of the largest value; nonFinite when a
// value is NaN or infinite (a model of NaN weights, an overflow), as the
// decode graph gives it.
func argmax(xs []float32) int {
	best := 0
	for i, x := range xs {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nonFinite
		}
		if x > xs[best] {
			best = i
		}
	}
	return best
}

// nonFinite is the greedy id of logits that are not all finite: the
// request fails with errNonFinite, where it took token 0 (or whatever
// ArgMax made of NaN) and was stored as a success.
const nonFinite = -1

// errNonFinite is the error of a request whose logits were not all
// finite.
var errNonFinite = errors.New("the model's logits are not finite (NaN or infinite): its weights hold NaN or Inf, or its arithmetic overflowed; no token can be chosen")

// checkIDs validates token ids against the vocabulary.
func (m *Model) checkIDs(ids []int) error {
	for _, id := range ids {
		if id < 0 || id >= m.cfg.VocabSize {
			return fmt.Errorf("token id %d outside the vocabulary [0,%d)", id, m.cfg.VocabSize)
		}
	}
	return nil
}

// Logits returns the logits at the last position of ids.
func (m *Model) Logits(ctx context.Context, ids []int) ([]float32, error) {
	rows, err := m.forward(ctx, ids, false)
	if err != nil {
		return nil, err
	}
	return rows[len(rows)-1], nil
}

// forward runs one sequence; all returns every position's logits.
func (m *Model) forward(ctx context.Context, ids []int, all bool) ([][]float32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(ids) == 0 {
		return nil, errors.New("logits: empty input")
	}
	if len(ids) > m.ctxLen {
		return nil, fmt.Errorf("logits: %w: %d tokens, context %d", backends.ErrContextOverflow, len(ids), m.ctxLen)
	}
	if err := m.checkIDs(ids); err != nil {
		return nil, fmt.Errorf("logits: %w", err)
	}
	length := cacheBucket(len(ids))
	cache := m.newCache(1, length)
	defer freeCache(cache)
	row := &prefillRow{slot: 0, ids: ids}
	if err := m.prefill(ctx, cache, 1, length, []*prefillRow{row}, all, m.budget); err != nil {
		return nil, err
	}
	if all {
		return row.all, nil
	}
	return [][]float32{row.logits}, nil
}

// job is a request accepted for running.
type job struct {
	req    Request
	seq    []int // prompt + prefix
	budget int   // new tokens allowed
}

// Request aliases backends.Request for brevity inside the package.
type Request = backends.Request

// slotState is a cache row in use.
type slotState struct {
	job    *job
	stream TextStream
	next   int // token to feed next
	pos    int // tokens in the cache
	gen    int // new tokens produced
	text   strings.Builder
}

// Generate implements backends.Backend: greedy decoding of every request,
// batched over at most Slots() cache rows with continuous refilling (a
// finished row's slot is prefilled with the next waiting request). Each new
// token is one event (Text from the incremental decoder, IDs the token). An
// EOS id ends the row with Finish "eos" and is not reported as a token; the
// budget gives "length", or "context-full" where the budget was capped to
// the context's room after the prompt (and prefix); the sink returning false, or a StopHint appearing
// in the text, gives "stop". PromptTokens is len(PromptIDs) and GenTokens
// the tokens reported in this call (Prefix excluded). Requests with the
// same ShareKey prefill their common prefix once (see sharer; off with
// Options.NoPrefixSharing), and the batch is capped by the memory plan
// (see PlanMemory) when the free memory is known: a run that cannot fit
// fails every request with an error wrapping ErrDoesNotFit.
func (m *Model) Generate(ctx context.Context, reqs []backends.Request, sink backends.Sink) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.opts.Log != nil {
		m.announce.Do(func() { fmt.Fprintln(m.opts.Log, m.announcement()) })
	}
	var jobs []*job
	for _, r := range reqs {
		j, ev := m.admit(r)
		if ev != nil {
			sink(*ev)
			continue
		}
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return nil
	}
	batch := batchBucket(len(jobs), m.maxBatch)
	need := 0
	for _, j := range jobs {
		need = max(need, len(j.seq)+j.budget)
	}
	length := m.cacheLen(need)
	plan, err := m.planRun(jobs, need)
	if err != nil {
		for _, j := range jobs {
			sink(backends.Event{Index: j.req.Index, Done: true, Finish: backends.FinishError,
				PromptTokens: len(j.req.PromptIDs), Err: err})
		}
		return nil
	}
	if plan.Batch > 0 {
		batch = min(batch, plan.Batch)
	}
	budget := m.prefillBudget(plan)
	cache := m.newCache(batch, length)
	defer func() { freeCache(cache) }()

	slots := make([]*slotState, batch)
	pending := jobs
	sharer := m.newSharer(jobs, batch, length, budget)
	finish := func(i int, reason string, err error) {
		s := slots[i]
		sink(backends.Event{Index: s.job.req.Index, Text: s.stream.Flush(), Done: true, Finish: reason,
			PromptTokens: len(s.job.req.PromptIDs), GenTokens: s.gen, Err: err})
		slots[i] = nil
	}
	failAll := func(err error) {
		for i := range slots {
			if slots[i] != nil {
				finish(i, backends.FinishError, err)
			}
		}
		for _, j := range pending {
			sink(backends.Event{Index: j.req.Index, Done: true, Finish: backends.FinishError,
				PromptTokens: len(j.req.PromptIDs), Err: err})
		}
		pending = nil
	}
	// accept takes a generated id for slot i; it reports whether the slot goes on.
	accept := func(i, id int) bool {
		s := slots[i]
		if id == nonFinite {
			finish(i, backends.FinishError, fmt.Errorf("generate: after %d tokens: %w", s.gen, errNonFinite))
			return false
		}
		if slices.Contains(m.cfg.EOSTokenIDs, id) {
			finish(i, backends.FinishEOS, nil)
			return false
		}
		s.gen++
		m.stats.DecodeTokens++
		piece := s.stream.Next(id)
		if !sink(backends.Event{Index: s.job.req.Index, Text: piece, IDs: []int{id}}) {
			finish(i, backends.FinishStop, nil)
			return false
		}
		if stopHit(&s.text, piece, s.job.req.StopHint) {
			finish(i, backends.FinishStop, nil)
			return false
		}
		if s.gen >= s.job.budget {
			reason := backends.FinishLength
			if len(s.job.seq)+s.gen >= m.ctxLen {
				reason = backends.FinishContextFull
			}
			finish(i, reason, nil)
			return false
		}
		s.next = id
		return true
	}
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("generate: %w", err)
		}
		// Refill free slots with waiting requests, prefilling them together.
		var fresh []int
		for i := range slots {
			if slots[i] == nil && len(pending) > 0 {
				j := pending[0]
				pending = pending[1:]
				slots[i] = &slotState{job: j, stream: m.newStream(j.req.Prefix)}
				fresh = append(fresh, i)
			}
		}
		if len(fresh) > 0 {
			rows, err := sharer.place(ctx, cache, fresh, slots)
			if err == nil {
				err = m.prefill(ctx, cache, batch, length, rows, false, budget)
			}
			if err != nil {
				if ctx.Err() != nil {
					return fmt.Errorf("generate: %w", ctx.Err())
				}
				failAll(err)
				return nil
			}
			for _, r := range rows {
				slots[r.slot].pos = len(r.ids)
				if m.prefillHook != nil {
					m.prefillHook(slots[r.slot].job.req.Index, r.logits)
				}
				accept(r.slot, argmax(r.logits))
			}
			continue // slots may have finished at once: refill again
		}
		anyActive := false
		for _, s := range slots {
			anyActive = anyActive || s != nil
		}
		if !anyActive {
			return nil
		}
		tokens := make([]int32, batch)
		positions := make([]int32, batch)
		valid := make([]bool, batch)
		for i, s := range slots {
			if s != nil {
				tokens[i], positions[i], valid[i] = int32(s.next), int32(s.pos), true
			}
		}
		ids, err := m.decodeStep(cache, batch, length, tokens, positions, valid)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("generate: %w", ctx.Err())
			}
			failAll(err)
			return nil
		}
		for i, s := range slots {
			if s != nil {
				s.pos++
				accept(i, int(ids[i]))
			}
		}
	}
}

// prefillBudget is the attention-score budget (rows × heads × chunk ×
// keys) of a Generate call's prefill chunks: Options.PrefillBudget when
// set; the memory plan's when Options.DeviceMemory is set (the longest
// chunk that fits beside the weights and the cache, so a long prompt takes
// few, long chunks: the XLA default, 1<<28 score elements, prefills a
// 32k-token prompt of a 32-head model in about 100 calls of 128 to 2,048
// tokens, 15 graph shapes to compile; the plan for an 80 GB card in 10
// calls of 2,048 to 8,192 tokens, 8 shapes); else the device's default.
func (m *Model) prefillBudget(plan MemoryPlan) int {
	if m.opts.PrefillBudget <= 0 && m.opts.DeviceMemory > 0 && plan.PrefillBudget > 0 {
		return plan.PrefillBudget
	}
	return m.budget
}

// planRun plans memory for jobs whose longest prompt plus budget is need
// (see PlanMemory). It returns a zero plan when the free memory is unknown
// (XLA without Options.DeviceMemory, or no /proc/meminfo) and an error when
// the run does not fit: work that cannot fit is not started.
func (m *Model) planRun(jobs []*job, need int) (MemoryPlan, error) {
	free, err := m.freeMemory()
	if err != nil || free <= 0 {
		return MemoryPlan{}, nil
	}
	longest := 0
	for _, j := range jobs {
		longest = max(longest, len(j.seq))
	}
	plan, err := PlanMemory(m.memoryInput(free, longest, need-longest, len(jobs)))
	if err != nil {
		return MemoryPlan{}, fmt.Errorf("generate: %w", err)
	}
	return plan, nil
}

// admit validates a request, returning a job or the final event to send.
func (m *Model) admit(r backends.Request) (*job, *backends.Event) {
	fail := func(reason string, err error) (*job, *backends.Event) {
		return nil, &backends.Event{Index: r.Index, Done: true, Finish: reason, PromptTokens: len(r.PromptIDs), Err: err}
	}
	ids := r.PromptIDs
	prefix := r.Prefix
	if len(ids) == 0 && r.Prompt != "" && m.tok != nil {
		enc, err := m.tok.Encode(r.Prompt, true)
		if err != nil {
			return fail(backends.FinishError, fmt.Errorf("encode prompt: %w", err))
		}
		ids = enc
		r.PromptIDs = enc
		if len(prefix) == 0 && r.PrefixText != "" {
			if prefix, err = m.tok.Encode(r.PrefixText, false); err != nil {
				return fail(backends.FinishError, fmt.Errorf("encode prefix: %w", err))
			}
		}
	}
	if len(ids) == 0 {
		return fail(backends.FinishError, errors.New("empty prompt (no PromptIDs, and no tokenizer for Prompt)"))
	}
	seq := make([]int, 0, len(ids)+len(prefix))
	seq = append(append(seq, ids...), prefix...)
	if err := m.checkIDs(seq); err != nil {
		return fail(backends.FinishError, err)
	}
	if len(ids) >= m.ctxLen {
		return fail(backends.FinishContext, fmt.Errorf("%w: %d prompt tokens, context %d", backends.ErrContextOverflow, len(ids), m.ctxLen))
	}
	if len(seq) >= m.ctxLen {
		// The prompt fits, and the output to continue already fills the
		// context: it is complete, not failed.
		return fail(backends.FinishContextFull, nil)
	}
	if r.MaxTokens <= 0 {
		return fail(backends.FinishLength, nil)
	}
	return &job{req: r, seq: seq, budget: min(r.MaxTokens, m.ctxLen-len(seq))}, nil
}

// newStream starts a text decoder primed with prefix (whose text was
// already reported by an earlier run).
func (m *Model) newStream(prefix []int) TextStream {
	if m.tok == nil {
		return idStream{}
	}
	s := m.tok.NewStream(true)
	for _, id := range prefix {
		s.Next(id)
	}
	return s
}

// stopHit appends piece to the generated text and reports whether any stop
// hint now occurs in it.
func stopHit(text *strings.Builder, piece string, hints []string) bool {
	if len(hints) == 0 {
		return false
	}
	before := text.Len()
	text.WriteString(piece)
	s := text.String()
	for _, h := range hints {
		if h == "" {
			continue
		}
		from := max(0, before-len(h)+1)
		if strings.Contains(s[from:], h) {
			return true
		}
	}
	return false
}

func shapesF32(dims ...int) shapes.Shape { return shapes.Make(dtypes.Float32, dims...) }
