package gomlx

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// Attention computed by tally's own kernels (the pure-Go backend).
//
// gomlx/compute v0.1.3 runs a graph's elementwise nodes one at a time on
// one core, Exp in float64; attention's scores, mask and softmax over n²
// entries per head made long prompts run at about one GFLOP/s. So on the
// pure-Go backend the step is split (see split.go): graphs compute the
// projections, norms and MLP, and between them attend computes each
// layer's attention on every core, flash-attention style: each tile of
// query rows walks the cache in blocks of kvBlock keys, with the scores of
// one block, the mask, an online softmax in float32 and the weighted sum
// of the values, never holding the n² scores. The inner loops are
// stepKernels: simd/archsimd AVX-512 and AVX2 kernels where the backend's
// own matrix kernels are SIMD, portable Go ones elsewhere.
//
// A query row's result depends only on its own query, its position and
// the keys and values up to it: every tile walks whole blocks aligned to
// position 0, and the operations on one row's values (each score summed
// over the head in order; the running maximum; each probability an exp of
// one fused multiply-add; each output value scaled by the row's rescale
// factor then summed over the block's keys in order) do not depend on the
// other rows of its tile, on the tile's size or on the kernel family's
// vector width. A block a row may not see (past its position, or outside
// its sliding window) leaves its state unchanged exactly: its scores are
// −∞, its probabilities exactly 0 and its rescale factor exactly 1. So a
// sample's attention is the same, bit for bit, whatever shares its batch
// and however its prompt is chunked (TestAttendInvariant), and the same on
// the AVX-512 and AVX2 kernels (TestAttendKernelsAgree).

// kvBlock is the number of keys in one block of the key cache, and the
// number of keys attention takes per step of its online softmax.
const kvBlock = 32

// kernelRows is the number of query rows the score and value kernels take
// at a time; a tile's rows are padded to a multiple of it.
const kernelRows = 4

// tileRows is the number of query rows a prefill tile aims at: positions
// times the query heads sharing a KV head.
const tileRows = 64

// minExpArg is the smallest argument attnExp computes; below it the result
// is 0 (e^-86 ≈ 4e-38, near float32's smallest normal number), as it is
// for −∞.
const minExpArg = -86

// kvLayout is the layout of one layer's key and value caches on the
// pure-Go backend. Keys are [batch, kvHeads, length/kvBlock, headDim,
// kvBlock]: each block of kvBlock positions holds one head's keys
// transposed, so that the scores of a block are a [rows, headDim] ×
// [headDim, kvBlock] product read in place. Values are [batch, kvHeads,
// length, valueWidth]: a block's values are a [kvBlock, valueWidth]
// matrix. valueWidth is headDim rounded up to a multiple of 16 (the
// columns are zero past headDim).
type kvLayout struct {
	batch, heads, length, hd, hdV int
}

// newKVLayout is the layout of a cache of batch rows and length positions
// (a multiple of kvBlock) for c.
func newKVLayout(c Config, batch, length int) kvLayout {
	return kvLayout{batch: batch, heads: c.NumKVHeads, length: length, hd: c.HeadDim, hdV: roundUp(c.HeadDim, 16)}
}

// keySize and valueSize are the number of float32 values of one layer's
// key and value caches.
func (l kvLayout) keySize() int   { return l.batch * l.heads * l.length * l.hd }
func (l kvLayout) valueSize() int { return l.batch * l.heads * l.length * l.hdV }

// keyBlock is the offset of block blk of cache row b, head h in the keys.
func (l kvLayout) keyBlock(b, h, blk int) int {
	return ((b*l.heads+h)*l.length + blk*kvBlock) * l.hd
}

// keyAt is the offset of element 0 of position t's key (row b, head h);
// element d is at keyAt + d·kvBlock.
func (l kvLayout) keyAt(b, h, t int) int {
	return l.keyBlock(b, h, t/kvBlock) + t%kvBlock
}

// valueAt is the offset of position t's value (row b, head h).
func (l kvLayout) valueAt(b, h, t int) int {
	return ((b*l.heads+h)*l.length + t) * l.hdV
}

// stepKernels are the loops tally runs between the graphs of the split
// step (split.go), for one kernel family: attention's and the MLP's
// activation.
type stepKernels struct {
	// family is the kernel family ("avx512", "avx2", "go-ARCH").
	family string
	// scores computes s[(4g+i)·kvBlock + j] = Σ_d qp[(g·hd+d)·4+i] ·
	// k[d·kvBlock+j] for g < groups, i < 4, j < kvBlock: qp holds groups
	// of 4 query rows, each group transposed ([hd, 4]); k is one block of
	// keys ([hd, kvBlock]). Each sum is taken in the order of d, one
	// fused multiply-add after another, starting from 0.
	scores func(qp, k, s []float32, hd, groups int)
	// softmax takes rows rows of kvBlock masked scores s (−∞ where a row
	// may not attend), the rows' running maxima m (raw scores, −∞ before
	// any key) and sums lsum (16 lanes a row: lane j sums the
	// probabilities of the keys ≡ j mod 16). It updates m, sets alpha[i]
	// to the factor that rescales row i's sums to the new maximum (exactly
	// 1 when the maximum is unchanged or still −∞), replaces s by the
	// probabilities exp((s − m)·scale) (exactly 0 where s is −∞) and sets
	// each lane of lsum to lsum·alpha + p[j] + p[j+16].
	softmax func(s, m, lsum, alpha []float32, rows int, scale float32)
	// accum sets o[(4g+i)·hdV + d] to o·alpha[4g+i] + Σ_j
	// p[(4g+i)·kvBlock + j] · v[j·hdV + d], the sum in the order of j, one
	// fused multiply-add after another, for g < groups, i < 4, d < hdV (a
	// multiple of 16).
	accum func(p, v, o, alpha []float32, hdV, groups int)
	// exp sets x[i] to e^x[i] for every i (0 below minExpArg), with the
	// arithmetic softmax uses.
	exp func(x []float32)
	// silu sets out[i] to silu(gate[i])·up[i], silu(g) = g/(1+e^−g) with
	// exp's arithmetic, for i < len(out).
	silu func(gate, up, out []float32)
}

// stepKernelsFor returns the attention kernels of a kernel family (see
// cpuFeatures.family): the SIMD ones where this binary has them, else the
// portable ones.
func stepKernelsFor(family string) *stepKernels {
	if k := simdStepKernels(family); k != nil {
		return k
	}
	return &stepKernels{family: family, scores: goScores, softmax: goSoftmax, accum: goAccum, exp: goExpSlice, silu: goSiLU}
}

// attnStep is one layer's attention in one step of the split model: rows
// of new tokens, each in its own cache row, attend to their caches.
type attnStep struct {
	kern   *stepKernels
	lay    kvLayout
	keys   []float32 // the layer's key cache (kvLayout)
	values []float32 // the layer's value cache (kvLayout)
	heads  int       // query heads
	chunk  int       // C: token slots per step row
	window int       // sliding window (0: none)
	scale  float32
	rows   []stepRow
	// rope holds the step's rotation tables: cos and signed sin
	// ([rows, chunk, hd] each), see ropeInPlace.
	cos, ssin []float32
}

// stepRow is one row of a step: its n tokens are positions pos0 … pos0+n−1
// of cache row slot; n is 0 for a padding row.
type stepRow struct{ slot, pos0, n int }

// write rotates the step's new keys k and writes them and the values v
// (both [rows, chunk, kvHeads, hd], the graph's projections) into the
// caches, then zeroes each row's positions after its last one up to the
// end of that block, so that attention never reads a value it did not
// write (a block is read whole; its positions past a row's last one get
// probability 0, and 0 times a stale non-finite value is not 0).
func (a *attnStep) write(k, v []float32) {
	l := a.lay
	kvH, hd, C := l.heads, l.hd, a.chunk
	work := make([][2]int, 0, len(a.rows)*C)
	for r, row := range a.rows {
		for c := range row.n {
			work = append(work, [2]int{r, c})
		}
	}
	parallelFor(len(work), kvH*hd*4, func(lo, hi int) {
		rot := make([]float32, hd)
		for _, w := range work[lo:hi] {
			r, c := w[0], w[1]
			row := a.rows[r]
			t := row.pos0 + c
			tab := (r*C + c) * hd
			for h := range kvH {
				src := ((r*C+c)*kvH + h) * hd
				ropeInto(rot, k[src:src+hd], a.cos[tab:tab+hd], a.ssin[tab:tab+hd])
				at := l.keyAt(row.slot, h, t)
				for d, x := range rot {
					a.keys[at+d*kvBlock] = x
				}
				copy(a.values[l.valueAt(row.slot, h, t):], v[src:src+hd])
			}
		}
	})
	for _, row := range a.rows {
		if row.n > 0 {
			l.clearTail(a.keys, a.values, row.slot, row.pos0+row.n)
		}
	}
}

// clearTail zeroes positions [from, the end of from's block) of cache row
// b in every head.
func (l kvLayout) clearTail(keys, values []float32, b, from int) {
	end := min(roundUp(from, kvBlock), l.length)
	if from >= end {
		return
	}
	for h := range l.heads {
		for t := from; t < end; t++ {
			at := l.keyAt(b, h, t)
			for d := range l.hd {
				keys[at+d*kvBlock] = 0
			}
		}
		clear(values[l.valueAt(b, h, from):l.valueAt(b, h, end)])
	}
}

// attnTask is one tile of an attention step: the queries of step row r at
// chunk slots [c0, c1), for KV head h and its query heads.
type attnTask struct{ r, h, c0, c1 int }

// tilePositions is the number of positions in a prefill tile for groups
// query heads per KV head: the largest power of two with at most
// tileRows rows, at least 1.
func tilePositions(groups int) int {
	p := 1
	for 2*p*groups <= tileRows {
		p *= 2
	}
	return p
}

// run computes the attention of q ([rows, chunk, heads, hd], the graph's
// projections before rotation) into out ([rows, chunk, heads·hd]) on every
// core. Rows' slots past their n tokens are left as they are.
func (a *attnStep) run(q, out []float32) {
	G := a.heads / a.lay.heads
	per := tilePositions(G)
	var tasks []attnTask
	for r, row := range a.rows {
		for h := range a.lay.heads {
			for c0 := 0; c0 < row.n; c0 += per {
				tasks = append(tasks, attnTask{r, h, c0, min(c0+per, row.n)})
			}
		}
	}
	// Longest first: a tile's work grows with its last position.
	cost := func(t attnTask) int { return (t.c1 - t.c0) * (a.rows[t.r].pos0 + t.c1) }
	slices.SortStableFunc(tasks, func(x, y attnTask) int { return cost(y) - cost(x) })
	workers := min(runtime.GOMAXPROCS(0), len(tasks))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			s := newAttnScratch(per*G, a.lay)
			for {
				i := int(next.Add(1) - 1)
				if i >= len(tasks) {
					return
				}
				a.tile(tasks[i], q, out, s)
			}
		})
	}
	wg.Wait()
}

// attnScratch is one worker's buffers for tiles of up to rows query rows.
type attnScratch struct {
	qp, s, o, m, lsum, alpha []float32
	pos                      []int
	rot                      []float32
}

func newAttnScratch(rows int, l kvLayout) *attnScratch {
	rows = roundUp(rows, kernelRows)
	return &attnScratch{
		qp: make([]float32, rows*l.hd), s: make([]float32, rows*kvBlock), o: make([]float32, rows*l.hdV),
		m: make([]float32, rows), lsum: make([]float32, rows*16), alpha: make([]float32, rows),
		pos: make([]int, rows), rot: make([]float32, l.hd),
	}
}

// tile computes one task.
func (a *attnStep) tile(t attnTask, q, out []float32, s *attnScratch) {
	l := a.lay
	hd, hdV, C, H := l.hd, l.hdV, a.chunk, a.heads
	G := H / l.heads
	row := a.rows[t.r]
	real := (t.c1 - t.c0) * G
	rows := roundUp(real, kernelRows)
	groups := rows / kernelRows
	qp, sc, o := s.qp[:rows*hd], s.s[:rows*kvBlock], s.o[:rows*hdV]
	m, lsum, alpha, pos := s.m[:rows], s.lsum[:rows*16], s.alpha[:rows], s.pos[:rows]
	clear(qp)
	clear(o)
	clear(lsum)
	for i := range m {
		m[i] = float32(math.Inf(-1))
	}
	pmin, pmax := row.pos0+t.c0, row.pos0+t.c1-1
	for i := range rows {
		pos[i] = pmax // padding rows: zero queries at the last position
	}
	for c := t.c0; c < t.c1; c++ {
		tab := (t.r*C + c) * hd
		for g := range G {
			i := (c-t.c0)*G + g
			pos[i] = row.pos0 + c
			src := ((t.r*C+c)*H + t.h*G + g) * hd
			ropeInto(s.rot, q[src:src+hd], a.cos[tab:tab+hd], a.ssin[tab:tab+hd])
			base := (i/kernelRows*hd)*kernelRows + i%kernelRows
			for d, x := range s.rot {
				qp[base+d*kernelRows] = x
			}
		}
	}
	first := 0
	if a.window > 0 {
		first = max(0, pmin-a.window+1) / kvBlock
	}
	negInf := float32(math.Inf(-1))
	for blk := first; blk <= pmax/kvBlock; blk++ {
		k0 := blk * kvBlock
		kb := l.keyBlock(row.slot, t.h, blk)
		a.kern.scores(qp, a.keys[kb:kb+hd*kvBlock], sc, hd, groups)
		if k0+kvBlock-1 > pmin || (a.window > 0 && k0 <= pmax-a.window) {
			for i, p := range pos {
				srow := sc[i*kvBlock : (i+1)*kvBlock]
				for j := range srow {
					if k := k0 + j; k > p || (a.window > 0 && p-k >= a.window) {
						srow[j] = negInf
					}
				}
			}
		}
		a.kern.softmax(sc, m, lsum, alpha, rows, a.scale)
		vb := l.valueAt(row.slot, t.h, k0)
		a.kern.accum(sc, a.values[vb:vb+kvBlock*hdV], o, alpha, hdV, groups)
	}
	for c := t.c0; c < t.c1; c++ {
		for g := range G {
			i := (c-t.c0)*G + g
			var sum float32
			for _, x := range lsum[i*16 : (i+1)*16] {
				sum += x
			}
			dst := ((t.r*C+c)*H + t.h*G + g) * hd
			for d, x := range o[i*hdV : i*hdV+hd] {
				out[dst+d] = x / sum
			}
		}
	}
}

// ropeInto writes rotate-half RoPE of x into dst: x·cos + swap(x)·ssin,
// where swap exchanges the halves of x and ssin is −sin on the first half
// and sin on the second (newRopeTables' tables), each product rounded to
// float32 before the sum.
func ropeInto(dst, x, cos, ssin []float32) {
	half := len(x) / 2
	for d := range x {
		sw := x[(d+half)%len(x)]
		dst[d] = float32(x[d]*cos[d]) + float32(sw*ssin[d])
	}
}

// fillRope fills cos and ssin ([rows, chunk, hd]) for the positions of
// rows (slots past a row's n tokens get the tables of position 0): cos|cos
// and −sin|sin of each position's angles pos·invFreq[i], as
// newRopeTables computes them.
func fillRope(rows []stepRow, chunk int, invFreq []float32, cos, ssin []float32) {
	half := len(invFreq)
	hd := 2 * half
	for r, row := range rows {
		for c := range chunk {
			p := float32(0)
			if c < row.n {
				p = float32(row.pos0 + c)
			}
			base := (r*chunk + c) * hd
			for i, f := range invFreq {
				angle := float64(p * f)
				co, si := float32(math.Cos(angle)), float32(math.Sin(angle))
				cos[base+i], cos[base+half+i] = co, co
				ssin[base+i], ssin[base+half+i] = -si, si
			}
		}
	}
}

// parallelFor calls fn on contiguous parts [lo, hi) of [0, n) on every
// core (parts of at least about 64Ki values of cost each; see onCores).
func parallelFor(n, cost int, fn func(lo, hi int)) {
	if n == 0 {
		return
	}
	onCores(n, cost, fn)
}

// --- portable kernels ---

// goScores is stepKernels.scores in portable Go.
func goScores(qp, k, s []float32, hd, groups int) {
	_ = k[hd*kvBlock-1]
	_ = s[groups*kernelRows*kvBlock-1]
	for g := range groups {
		q := qp[g*hd*kernelRows : (g+1)*hd*kernelRows]
		for i := range kernelRows {
			out := s[(g*kernelRows+i)*kvBlock : (g*kernelRows+i+1)*kvBlock]
			var acc [kvBlock]float32
			for d := range hd {
				qv := q[d*kernelRows+i]
				kr := k[d*kvBlock : (d+1)*kvBlock]
				for j := range acc {
					acc[j] += float32(qv * kr[j])
				}
			}
			copy(out, acc[:])
		}
	}
}

// goSoftmax is stepKernels.softmax in portable Go.
func goSoftmax(s, m, lsum, alpha []float32, rows int, scale float32) {
	for i := range rows {
		srow := s[i*kvBlock : (i+1)*kvBlock]
		top := m[i]
		for _, x := range srow {
			top = max(top, x)
		}
		if math.IsInf(float64(top), -1) {
			clear(srow)
			alpha[i] = 1
			continue
		}
		c := top * scale
		alpha[i] = 1
		if top != m[i] {
			alpha[i] = goExp(float32(m[i]*scale) - c)
		}
		m[i] = top
		for j, x := range srow {
			srow[j] = goExp(float32(x*scale) - c)
		}
		l := lsum[i*16 : (i+1)*16]
		for j := range l {
			l[j] = float32(l[j]*alpha[i]) + srow[j] + srow[j+16]
		}
	}
}

// goAccum is stepKernels.accum in portable Go.
func goAccum(p, v, o, alpha []float32, hdV, groups int) {
	_ = v[kvBlock*hdV-1]
	for i := range groups * kernelRows {
		orow := o[i*hdV : (i+1)*hdV]
		prow := p[i*kvBlock : (i+1)*kvBlock]
		for d := range orow {
			orow[d] *= alpha[i]
		}
		for j, pj := range prow {
			vr := v[j*hdV : (j+1)*hdV]
			for d := range orow {
				orow[d] += float32(pj * vr[d])
			}
		}
	}
}

// The constants of attnExp (Cephes' expf): e^x = 2^n·e^r, n = round(x·log₂e),
// r = x − n·ln2 (ln2 in two parts), e^r by a degree-7 polynomial.
const (
	expLog2e = 1.44269504088896341
	expLn2Hi = 0.693359375
	expLn2Lo = -2.12194440e-4
	expMagic = 12582912 // 1.5·2²³: adding it rounds to an integer in the low mantissa bits
	expP0    = 1.9875691500e-4
	expP1    = 1.3981999507e-3
	expP2    = 8.3334519073e-3
	expP3    = 4.1665795894e-2
	expP4    = 1.6666665459e-1
	expP5    = 5.0000001201e-1
)

// goExp is attnExp in portable Go: e^x for x ≤ 88, 0 below minExpArg.
func goExp(x float32) float32 {
	if !(x >= minExpArg) {
		return 0
	}
	x = min(x, 88)
	t := float32(x*expLog2e) + expMagic
	n := t - expMagic
	r := x - float32(n*expLn2Hi)
	r = r - float32(n*expLn2Lo)
	z := float32(r * r)
	y := float32(expP0*r) + expP1
	y = float32(y*r) + expP2
	y = float32(y*r) + expP3
	y = float32(y*r) + expP4
	y = float32(y*r) + expP5
	y = float32(y*z) + r
	y += 1
	bits := (math.Float32bits(t) - math.Float32bits(expMagic) + 127) << 23
	return y * math.Float32frombits(bits)
}

// goExpSlice is stepKernels.exp in portable Go.
func goExpSlice(x []float32) {
	for i, v := range x {
		x[i] = goExp(v)
	}
}

// goSiLU is stepKernels.silu in portable Go.
func goSiLU(gate, up, out []float32) {
	_, _ = gate[len(out)-1], up[len(out)-1]
	for i := range out {
		g := gate[i]
		s := 1 / (1 + goExp(-g))
		out[i] = float32(g*s) * up[i]
	}
}

// siluOnCores computes stepKernels.silu of gate and up into out on every
// core.
func (k *stepKernels) siluOnCores(gate, up, out []float32) {
	if len(gate) < len(out) || len(up) < len(out) {
		panic(fmt.Sprintf("silu: %d gate and %d up values for %d outputs", len(gate), len(up), len(out)))
	}
	const part = 1 << 12
	parallelFor((len(out)+part-1)/part, 16*part, func(lo, hi int) {
		a, b := lo*part, min(hi*part, len(out))
		k.silu(gate[a:b], up[a:b], out[a:b])
	})
}

// checkStepKernels panics unless k's functions are all set (a kernel
// family wired without one of its loops).
func checkStepKernels(k *stepKernels) {
	if k.scores == nil || k.softmax == nil || k.accum == nil || k.exp == nil || k.silu == nil {
		panic(fmt.Sprintf("attention kernels of %s incomplete", k.family))
	}
}
