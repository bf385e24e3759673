package gomlx

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// gib is one binary gigabyte.
const gib = 1 << 30

// maxPlanChunk is the largest prefill chunk the planner picks (longer
// chunks add workspace without making prefill faster); minPlanChunk the
// smallest it keeps when that still allows a batch above one.
const (
	maxPlanChunk = 4096
	minPlanChunk = 512
)

// MemoryInput describes a model and a run for PlanMemory. Sizes are bytes.
type MemoryInput struct {
	// FreeBytes is the memory the run may use in all, weights included
	// (device memory on a GPU, host memory on the pure-Go backend).
	FreeBytes int64
	// WeightBytes is the weights' size as held for computation.
	WeightBytes int64
	// KVBytesPerToken is one token's keys and values over all layers:
	// 2 × layers × kv_heads × head_dim × dtype bytes.
	KVBytesPerToken int64
	// ActBytes is the size of one activation element (4 for float32).
	ActBytes int
	// Model shape, for the activation workspace.
	Hidden, Intermediate, Heads, KVHeads, HeadDim, Vocab int
	// PromptTokens is the longest prompt of the run (prompt plus any
	// continued prefix); MaxNewTokens the largest token budget.
	PromptTokens, MaxNewTokens int
	// Requests is the number of requests in the run (0: MaxBatch).
	Requests int
	// MaxBatch caps the batch (0: 8).
	MaxBatch int
	// ReserveBytes is kept free for the runtime and fragmentation
	// (0: 256 MiB plus 5% of FreeBytes).
	ReserveBytes int64
	// NoScores is true when attention never holds its scores (the pure-Go
	// backend's split step computes it block by block): the workspace is
	// then the activations alone, and the cache length need not be a
	// bucket (splitCacheLength).
	NoScores bool
}

// MemoryPlan is how a run uses memory: its batch, cache and prefill chunk,
// and the bytes each part takes.
type MemoryPlan struct {
	// Batch is the number of cache rows (requests decoded together).
	Batch int
	// CacheLength is the KV cache length in tokens (a bucket ≥ the longest
	// prompt plus budget; on the split step that length in whole key
	// blocks).
	CacheLength int
	// KeyBuckets are the attended-key lengths graphs are compiled for.
	KeyBuckets []int
	// PrefillChunk is the longest prefill chunk for one row at the full
	// cache length; PrefillBudget the same as attention-score elements
	// (heads × chunk × cache length), the unit of Options.PrefillBudget.
	PrefillChunk, PrefillBudget int
	// FreeBytes is the memory available; the other fields are the parts
	// of the plan's need.
	FreeBytes, WeightBytes, KVBytes, WorkspaceBytes, ReserveBytes int64
}

// NeedBytes is the memory the plan uses in all.
func (p MemoryPlan) NeedBytes() int64 {
	return p.WeightBytes + p.KVBytes + p.WorkspaceBytes + p.ReserveBytes
}

// String describes the plan on one line, for the command line.
func (p MemoryPlan) String() string {
	return fmt.Sprintf("batch %d, cache %d tokens (%d key buckets), prefill chunk %d; needs %s of %s free: weights %s, KV cache %s, workspace %s, reserve %s",
		p.Batch, p.CacheLength, len(p.KeyBuckets), p.PrefillChunk, fmtGiB(p.NeedBytes()), fmtGiB(p.FreeBytes),
		fmtGiB(p.WeightBytes), fmtGiB(p.KVBytes), fmtGiB(p.WorkspaceBytes), fmtGiB(p.ReserveBytes))
}

func fmtGiB(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/gib) }

// ErrDoesNotFit is returned (wrapped) by PlanMemory when even one request
// with the smallest prefill chunk does not fit.
var ErrDoesNotFit = errors.New("model and cache do not fit in memory")

// prefillWorkspace estimates the activations of one prefill call of chunk
// tokens for one row attending to keys cached tokens: the additive mask,
// scores and probabilities ([heads, chunk, keys] each), one layer's
// gathered keys and values, the chunk's hidden activations and the
// last-position logits.
func (in MemoryInput) prefillWorkspace(chunk, keys int) int64 {
	a := int64(in.ActBytes)
	scores := 3 * int64(in.Heads) * int64(chunk) * int64(keys)
	kv := 2 * int64(keys) * int64(in.KVHeads) * int64(in.HeadDim)
	if in.NoScores {
		scores, kv = 0, 0
	}
	hidden := int64(chunk) * int64(4*in.Hidden+(in.Heads+2*in.KVHeads)*in.HeadDim+3*in.Intermediate)
	return a * (scores + kv + hidden + int64(in.Vocab))
}

// decodeWorkspace estimates one decode step's activations for batch rows.
func (in MemoryInput) decodeWorkspace(batch, keys int) int64 {
	a := int64(in.ActBytes)
	per := int64(4*in.Hidden + (in.Heads+2*in.KVHeads)*in.HeadDim + 3*in.Intermediate + in.Vocab)
	if !in.NoScores {
		per += 3 * int64(in.Heads) * int64(keys)
	}
	return a * int64(batch) * per
}

// PlanMemory chooses a run's batch, cache length and prefill chunk so that
// the weights, the KV cache and the activation workspace fit in
// in.FreeBytes. The longest prompt plus budget sets the cache length. The
// batch is the largest (up to MaxBatch and the run's request bucket) whose
// cache rows fit beside a prefill chunk of at least 512 tokens, or 1; the
// chunk is then the longest that fits (up to 4096 and the prompt's power
// of two; down to 16 for one row). When one row does not fit even with
// the smallest chunk it returns an error wrapping ErrDoesNotFit that says
// what is needed and what is free.
func PlanMemory(in MemoryInput) (MemoryPlan, error) {
	switch {
	case in.FreeBytes <= 0:
		return MemoryPlan{}, errors.New("plan memory: free memory unknown")
	case in.WeightBytes < 0 || in.KVBytesPerToken <= 0 || in.ActBytes <= 0:
		return MemoryPlan{}, fmt.Errorf("plan memory: bad sizes (weights %d, KV/token %d, activation %d bytes)", in.WeightBytes, in.KVBytesPerToken, in.ActBytes)
	case in.Heads <= 0 || in.KVHeads <= 0 || in.HeadDim <= 0:
		return MemoryPlan{}, errors.New("plan memory: model shape missing (heads, kv heads, head dim)")
	case in.PromptTokens <= 0 || in.MaxNewTokens < 0:
		return MemoryPlan{}, fmt.Errorf("plan memory: bad run (prompt %d, budget %d tokens)", in.PromptTokens, in.MaxNewTokens)
	}
	maxBatch := in.MaxBatch
	if maxBatch <= 0 {
		maxBatch = 8
	}
	reqs := in.Requests
	if reqs <= 0 {
		reqs = maxBatch
	}
	reserve := in.ReserveBytes
	if reserve <= 0 {
		reserve = 256<<20 + in.FreeBytes/20
	}
	T := cacheLength(in.PromptTokens + max(in.MaxNewTokens, 1))
	if in.NoScores {
		T = splitCacheLength(in.PromptTokens + max(in.MaxNewTokens, 1))
	}
	p := MemoryPlan{CacheLength: T, FreeBytes: in.FreeBytes, WeightBytes: in.WeightBytes, ReserveBytes: reserve}
	p.KeyBuckets = keyBuckets(T)
	row := in.KVBytesPerToken * int64(T)
	base := in.WeightBytes + reserve
	workspace := func(b, c int) int64 { return max(in.prefillWorkspace(c, T), in.decodeWorkspace(b, T)) }
	fits := func(b, c int) bool { return base+int64(b)*row+workspace(b, c) <= in.FreeBytes }
	cMax := min(max(pow2AtLeast(in.PromptTokens), minChunk), maxPlanChunk)
	// A batch above one keeps chunks of at least minPlanChunk; one row
	// takes any chunk down to minChunk.
	for b := batchBucket(reqs, maxBatch); b >= 1 && p.Batch == 0; b-- {
		floor := min(minPlanChunk, cMax)
		if b == 1 {
			floor = minChunk
		}
		for c := cMax; c >= floor; c /= 2 {
			if fits(b, c) {
				p.Batch, p.PrefillChunk = b, c
				break
			}
		}
	}
	if p.Batch == 0 {
		need := base + row + workspace(1, minChunk)
		return MemoryPlan{}, fmt.Errorf("plan memory: %w: needs %s, %s free (weights %s + KV cache %s for 1 × %d tokens + prefill workspace %s at chunk %d + reserve %s)",
			ErrDoesNotFit, fmtGiB(need), fmtGiB(in.FreeBytes), fmtGiB(in.WeightBytes), fmtGiB(row), T, fmtGiB(workspace(1, minChunk)), minChunk, fmtGiB(reserve))
	}
	p.PrefillBudget = in.Heads * p.PrefillChunk * T
	p.KVBytes = int64(p.Batch) * row
	p.WorkspaceBytes = workspace(p.Batch, p.PrefillChunk)
	return p, nil
}

// memoryInput describes the model for PlanMemory: its weights in the dtypes
// they are held in, float32 caches and activations, as the model computes.
func (m *Model) memoryInput(free int64, promptTokens, maxNew, requests int) MemoryInput {
	c := m.cfg
	var weights int64
	for _, s := range weightSpecs(c, m.lay) {
		if s.panels && m.useSplit() {
			continue // held once (see splitModel.weight)
		}
		n := int64(s.dtype(m.lay).Size())
		for _, d := range s.graphDims(m.lay) {
			n *= int64(d)
		}
		weights += n
	}
	// Each cached token holds a key and a value per layer and KV head, in
	// the widths cacheDims gives them (padded on the pure-Go backend when
	// the head is narrow).
	heads := int64(c.NumLayers) * int64(c.NumKVHeads)
	kvWidth := int64(m.lay.inv.keyWidth(c.HeadDim) + m.lay.inv.valueWidth(c.HeadDim))
	kvPerToken := heads * kvWidth * 4
	if m.useSplit() {
		kvPerToken = splitKVBytesPerToken(c)
	}
	return MemoryInput{
		FreeBytes: free, WeightBytes: weights, NoScores: m.useSplit(),
		KVBytesPerToken: kvPerToken, ActBytes: 4,
		Hidden: c.HiddenSize, Intermediate: c.IntermediateSize, Heads: c.NumHeads, KVHeads: c.NumKVHeads, HeadDim: c.HeadDim,
		Vocab: c.VocabSize, PromptTokens: promptTokens, MaxNewTokens: maxNew, Requests: requests, MaxBatch: m.maxBatch,
	}
}

// freeMemory is the memory the model may use in all, weights included:
// Options.DeviceMemory when set, else on the pure-Go backend the host's
// MemAvailable plus the weights (already resident). Zero means unknown.
func (m *Model) freeMemory() (int64, error) {
	if m.opts.DeviceMemory > 0 {
		return m.opts.DeviceMemory, nil
	}
	if m.device != "go" {
		return 0, nil
	}
	avail, err := memAvailable("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	return avail + m.memoryInput(1, 1, 0, 1).WeightBytes, nil
}

// MemoryPlan plans a run of requests with prompts up to promptTokens and
// budgets up to maxNew on this model (see PlanMemory), with the memory
// from Options.DeviceMemory or, on the pure-Go backend, the host's
// available memory. On XLA without Options.DeviceMemory it fails: the free
// device memory is unknown.
func (m *Model) MemoryPlan(promptTokens, maxNew int) (MemoryPlan, error) {
	free, err := m.freeMemory()
	if err != nil {
		return MemoryPlan{}, fmt.Errorf("memory plan: %w", err)
	}
	if free <= 0 {
		return MemoryPlan{}, fmt.Errorf("memory plan: free memory of the %s device unknown: pass --device-memory SIZE (Options.DeviceMemory)", m.device)
	}
	return PlanMemory(m.memoryInput(free, promptTokens, maxNew, m.maxBatch))
}

// memAvailable reads MemAvailable from a /proc/meminfo file, in bytes.
func memAvailable(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("available memory: %w", err)
	}
	defer f.Close()
	n, err := parseMemAvailable(f)
	if err != nil {
		return 0, fmt.Errorf("available memory: %s: %w", path, err)
	}
	return n, nil
}

// parseMemAvailable finds the "MemAvailable: N kB" line of meminfo text.
func parseMemAvailable(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "MemAvailable:" {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("bad MemAvailable line %q", sc.Text())
		}
		if len(f) < 3 || f[2] != "kB" {
			return 0, fmt.Errorf("MemAvailable line %q: want kB", sc.Text())
		}
		return n * 1024, nil
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no MemAvailable line")
}
