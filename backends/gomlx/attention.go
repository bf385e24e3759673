package gomlx

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL reads best unqualified
)

// attBlock is one attention block of a step: query rows [lo, hi) of the
// chunk attend to cache positions [0, keys).
type attBlock struct{ lo, hi, keys int }

// maskKey names an attention mask: a sliding window (0: none) and a
// block.
type maskKey struct{ window, block int }

// stepAttention is the attention of one step graph (see buildStep): it
// writes each layer's new keys and values into the layer's cache and
// attends every query row to its cache row.
type stepAttention struct {
	g          *Graph
	c          Config
	lay        layout
	k          graphKey
	blocks     []attBlock
	positions  *Node // [R,C] int32
	slots      *Node // [R] int32: the cache row of each query row
	scatterIdx *Node // [R,C,2] (slot, position) of each new key and value
	masks      map[maskKey]*Node
}

// mask is the additive attention mask [R,kvH,n,G,keys] of block j under
// a sliding window (0: none): 0 where a query row may attend a position,
// -1e30 elsewhere (softmax then gives exactly 0).
func (a *stepAttention) mask(window, j int) *Node {
	if m, ok := a.masks[maskKey{window, j}]; ok {
		return m
	}
	g, c, i32 := a.g, a.c, dtypes.Int32
	R, C := a.k.Rows, a.k.Chunk
	kvH, G := c.NumKVHeads, c.NumHeads/c.NumKVHeads
	b := a.blocks[j]
	n := b.hi - b.lo
	kpos := Iota(g, shapes.Make(i32, 1, 1, b.keys), 2)
	pos := a.positions
	if n < C {
		pos = Slice(pos, AxisRange(), AxisRange(b.lo, b.hi))
	}
	qpos := ExpandAxes(pos, -1) // [R,n,1]
	allowed := LessOrEqual(kpos, qpos)
	if window > 0 {
		allowed = And(allowed, LessThan(Sub(qpos, kpos), Scalar(g, i32, window)))
	}
	m := Where(allowed, ScalarZero(g, dtypes.Float32), Scalar(g, dtypes.Float32, -1e30))
	m = BroadcastToDims(Reshape(BroadcastToDims(m, R, n, b.keys), R, 1, n, 1, b.keys), R, kvH, n, G, b.keys)
	a.masks[maskKey{window, j}] = m
	return m
}

// scale is 1/√headDim.
func (a *stepAttention) scale() float64 { return 1 / math.Sqrt(float64(a.c.HeadDim)) }

// plain is the attention of XLA (layout.inv off): q [R,C,H,hd] and the new
// keys and values kk, vv [R,C,kvH,hd] (zero where not valid) are written
// into the caches ck, cv (laid out as cacheDims says); it returns the
// attention output [R,C,H·hd] and the new caches.
func (a *stepAttention) plain(window int, q, kk, vv, ck, cv *Node) (out, newK, newV *Node) {
	c, k := a.c, a.k
	R, C, T, TK := k.Rows, k.Chunk, k.Cache, k.Keys
	kvH, hd, H := c.NumKVHeads, c.HeadDim, c.NumHeads
	G := H / kvH
	// The (slot, position) index pairs address axes 0 and 2 of the
	// keys [B,kvH,T,hd] and axes 0 and 3 of the values [B,kvH,hd,T];
	// each update is a [kvH,hd] window (axes 2, 3 of kk and vv).
	ck = BackendScatterSum(ck, a.scatterIdx, kk, 2, []int{2, 3}, []int{0, 2}, []int{0, 2}, false, false)
	cv = BackendScatterSum(cv, a.scatterIdx, vv, 2, []int{2, 3}, []int{0, 3}, []int{0, 3}, false, false)
	keys, vals := ck, cv
	if TK < T {
		keys = Slice(keys, AxisRange(), AxisRange(), AxisRange(0, TK))
		vals = Slice(vals, AxisRange(), AxisRange(), AxisRange(), AxisRange(0, TK))
	}
	if !k.Decode {
		idx := ExpandAxes(a.slots, -1)
		keys = Gather(keys, idx) // [R,kvH,TK,hd]
		vals = Gather(vals, idx) // [R,kvH,hd,TK]
	}
	// Both products take the cache operand in the [batch, cross,
	// contracting] order the pure-Go backend computes in, so it is
	// read in place rather than transposed every step.
	q5 := Reshape(q, R, C, kvH, G, hd)
	parts := make([]*Node, len(a.blocks))
	for j, b := range a.blocks {
		qj, kj, vj := q5, keys, vals
		if b.hi-b.lo < C {
			qj = Slice(q5, AxisRange(), AxisRange(b.lo, b.hi))
		}
		if b.keys < TK {
			kj = Slice(keys, AxisRange(), AxisRange(), AxisRange(0, b.keys))
			vj = Slice(vals, AxisRange(), AxisRange(), AxisRange(), AxisRange(0, b.keys))
		}
		scores := DotGeneral(qj, []int{4}, []int{0, 2}, kj, []int{3}, []int{0, 1}) // [R,kvH,n,G,keys]
		scores = Add(MulScalar(scores, a.scale()), a.mask(window, j))
		probs := Softmax(scores, -1)
		parts[j] = DotGeneral(probs, []int{4}, []int{0, 1}, vj, []int{3}, []int{0, 1}) // [R,kvH,n,G,hd]
	}
	att := parts[0]
	if len(parts) > 1 {
		att = Concatenate(parts, 2)
	}
	return Reshape(TransposeAllAxes(att, 0, 2, 1, 3, 4), R, C, H*hd), ck, cv
}

// invariant is plain on the pure-Go backend, computed so that each query
// row's result does not depend on the other rows, the rows' count or the
// number of keys attended (see invariance): the caches are laid out keys
// [B,kvH,hdK,T] and values [B,kvH,T,hdV] (cacheDims), so that both
// products are non-transposed, [rows, hdK]·[hdK, keys] and [rows,
// keys]·[keys, hdV], per (cache row, KV head); rowDot multiplies them,
// splitting the keys into whole panels; the positions past a row's own
// take exactly zero probability, so the keys a block attends past them
// (keyCount) add exact zeros.
func (a *stepAttention) invariant(window int, q, kk, vv, ck, cv *Node) (out, newK, newV *Node) {
	c, k, v := a.c, a.k, a.lay.inv
	R, C, T, TK := k.Rows, k.Chunk, k.Cache, k.Keys
	kvH, hd, H := c.NumKVHeads, c.HeadDim, c.NumHeads
	G := H / kvH
	hdK, hdV := v.keyWidth(hd), v.valueWidth(hd)
	// The (slot, position) index pairs address axes 0 and 3 of the keys
	// [B,kvH,hdK,T] and axes 0 and 2 of the values [B,kvH,T,hdV]; each
	// update is a [kvH,hd] window (axes 2, 3 of kk and vv), padded.
	ck = BackendScatterSum(ck, a.scatterIdx, padAxis(kk, 3, hdK), 2, []int{2, 3}, []int{0, 3}, []int{0, 3}, false, false)
	cv = BackendScatterSum(cv, a.scatterIdx, padAxis(vv, 3, hdV), 2, []int{2, 3}, []int{0, 2}, []int{0, 2}, false, false)
	keys, vals := ck, cv
	if TK < T {
		keys = Slice(keys, AxisRange(), AxisRange(), AxisRange(), AxisRange(0, TK))
		vals = Slice(vals, AxisRange(), AxisRange(), AxisRange(0, TK))
	}
	if !k.Decode {
		idx := ExpandAxes(a.slots, -1)
		keys = Gather(keys, idx) // [R,kvH,hdK,TK]
		vals = Gather(vals, idx) // [R,kvH,TK,hdV]
	}
	qT := TransposeAllAxes(padAxis(Reshape(q, R, C, kvH, G, hd), 4, hdK), 0, 2, 1, 3, 4) // [R,kvH,C,G,hdK]
	parts := make([]*Node, len(a.blocks))
	for j, b := range a.blocks {
		n := b.hi - b.lo
		qj, kj, vj := qT, keys, vals
		if n < C {
			qj = Slice(qT, AxisRange(), AxisRange(), AxisRange(b.lo, b.hi))
		}
		if b.keys < TK {
			kj = Slice(keys, AxisRange(), AxisRange(), AxisRange(), AxisRange(0, b.keys))
			vj = Slice(vals, AxisRange(), AxisRange(), AxisRange(0, b.keys))
		}
		rows := n * G
		q3 := v.padRows(Reshape(qj, R*kvH, rows, hdK), 1)
		scores := v.rowDot(q3, b.keys,
			func() *Node { return Reshape(kj, R*kvH, hdK, b.keys) },
			func() *Node { return Reshape(kj, R*kvH, hdK/v.panel, v.panel, b.keys) }) // [R·kvH,rows,keys]
		mask := v.padRows(Reshape(a.mask(window, j), R*kvH, rows, b.keys), 1)
		probs := Softmax(Add(MulScalar(scores, a.scale()), mask), -1)
		o := v.rowDot(probs, hdV,
			func() *Node { return Reshape(vj, R*kvH, b.keys, hdV) },
			func() *Node { return Reshape(vj, R*kvH, b.keys/v.panel, v.panel, hdV) }) // [R·kvH,rows,hdV]
		if o.Shape().Dim(1) != rows || hdV != hd {
			o = Slice(o, AxisRange(), AxisRange(0, rows), AxisRange(0, hd))
		}
		parts[j] = Reshape(o, R, kvH, n, G, hd)
	}
	att := parts[0]
	if len(parts) > 1 {
		att = Concatenate(parts, 2)
	}
	return Reshape(TransposeAllAxes(att, 0, 2, 1, 3, 4), R, C, H*hd), ck, cv
}

// cacheDims is the layout of one layer's cache of batch rows and length
// tokens. On XLA (inv off): keys [B,kvHeads,T,headDim], values
// [B,kvHeads,headDim,T]: with the cache row and KV head leading and the
// contracted axis last, both attention products (q·kᵀ contracts headDim,
// p·v contracts T) read the cache in the [batch, cross, contracting] order
// of the pure-Go backend's "transposed" layout. On the pure-Go backend:
// keys [B,kvHeads,hdK,T] and values [B,kvHeads,T,hdV] (see
// stepAttention.invariant): both products read the cache in place in the
// [batch, contracting, cross] order of its "non-transposed" layout, the
// only one whose two kernels agree.
func cacheDims(c Config, inv invariance, batch, length int, values bool) []int {
	switch {
	case inv.on && values:
		return []int{batch, c.NumKVHeads, length, inv.valueWidth(c.HeadDim)}
	case inv.on:
		return []int{batch, c.NumKVHeads, inv.keyWidth(c.HeadDim), length}
	case values:
		return []int{batch, c.NumKVHeads, c.HeadDim, length}
	}
	return []int{batch, c.NumKVHeads, length, c.HeadDim}
}

// cacheTimeAxis is the axis of the cache positions in cacheDims's layout.
func cacheTimeAxis(inv invariance, values bool) int {
	if inv.on != values {
		return 3
	}
	return 2
}
