package gomlx

import (
	"fmt"
	"slices"

	mlbackends "github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL reads best unqualified
)

// graphKey identifies one compiled graph. A decode graph runs one token per
// cache row (Rows == Batch, Chunk == 1); a prefill graph runs Chunk tokens
// for Rows rows, each mapped to a cache slot; a copy graph (Copy) copies
// cache rows between slots (shared prefixes) and uses only Batch and Cache.
type graphKey struct {
	Decode bool
	Copy   bool
	Rows   int // rows of tokens in this call
	Chunk  int // tokens per row
	Batch  int // rows of the KV cache
	Cache  int // cache length
	Keys   int // cache prefix attended to (≤ Cache)
	// Base (prefill) is a bound on the cache positions written before this
	// call (every row's first new token is at a position ≤ Base), and
	// Block the attention block: query rows [j·Block, (j+1)·Block) of the
	// chunk attend only to keys [0, Base+(j+1)·Block), so no block
	// computes scores for keys past its own last row (see buildStep).
	Base, Block int
	All         bool
}

// String names the graph for logs and compile counts.
func (k graphKey) String() string {
	if k.Copy {
		return fmt.Sprintf("copy_b%d_t%d", k.Batch, k.Cache)
	}
	if k.Decode {
		return fmt.Sprintf("decode_b%d_t%d_k%d", k.Batch, k.Cache, k.Keys)
	}
	return fmt.Sprintf("prefill_r%d_c%d_b%d_t%d_k%d_base%d_blk%d_all%v", k.Rows, k.Chunk, k.Batch, k.Cache, k.Keys, k.Base, k.Block, k.All)
}

// matrix is the parameter of a weight matrix: flat as the product reads
// it, and, for a small matrix whose contraction is split into panels on
// the pure-Go backend (weightSpec.panels), the same values as [panels,
// panel, out] (nil otherwise), so that no step reshapes a weight: the
// pure-Go backend's Reshape copies a buffer it does not own, and a weight
// is never its own. The one-graph step holds such a matrix twice; the
// split step (split.go), the pure-Go backend's, holds it once and gives a
// graph the parameter of the shape it multiplies by (splitModel.params).
type matrix struct{ flat, panels *Node }

// layerParams are the parameter nodes of one decoder block.
type layerParams struct {
	inNorm, qBias, kBias, vBias, oBias, postNorm, gateBias, upBias, downBias *Node
	q, k, v, o, gate, up, down                                               matrix
}

// modelParams are the parameter nodes of the whole model.
type modelParams struct {
	embed, finalNorm *Node
	lmHead           matrix
	layers           []layerParams
}

// weightSpec is one weight tensor in canonical (graph parameter) order.
type weightSpec struct {
	name string
	dims []int
	// matrix marks the embedding and projection matrices: they keep the
	// file's half-precision dtype (layout.half); norms and biases are f32.
	matrix bool
	// inOut marks a projection held transposed, [in, out] (dims stay the
	// file's [out, in]): see projInOut.
	inOut bool
	// tiedCopy marks the LM head of a model whose head is tied to the
	// embedding, held as a copy of it (see layout.headInOut).
	tiedCopy bool
	// panels marks the second holding of the matrix before it, [panels,
	// panel, out] (see matrix and invariance.splits).
	panels bool
}

// graphDims are the dimensions the weight is held in: a small matrix
// (invariance.smallMatrix) held [in, out] is padded with zeros to
// invariance.weightDims.
func (s weightSpec) graphDims(lay layout) []int {
	if !s.inOut {
		return s.dims
	}
	in, out := s.dims[1], s.dims[0]
	if lay.inv.smallMatrix(in, out) {
		in, out = lay.inv.weightDims(in, out)
	}
	if s.panels {
		return []int{in / lay.inv.panel, lay.inv.panel, out}
	}
	return []int{in, out}
}

// dtype is the dtype the weight is held and computed in.
func (s weightSpec) dtype(lay layout) dtypes.DType {
	if s.matrix && lay.half != dtypes.InvalidDType {
		return lay.half
	}
	return dtypes.Float32
}

// projInOut holds the four projections of every layer transposed, [in,
// out], so that the pure-Go backend multiplies them in its "non-transposed"
// layout: its packed kernel (used from a few rows up) then copies the
// weight panels with vector loads, where the [out, in] layout has them
// transposed element by element on every call (compute v0.1.3 dot/matmul
// unsafePackLHS).
// On the model of scripts/cpu-bench (AVX-512, 2 threads) the four
// projections of a layer take 1.85× less time at 8 rows held [in, out],
// about the same at 1 row, and somewhat less at 320 rows. The embedding
// (a row lookup) and the LM head (often tied to it) keep [out, in].
const projInOut = true

// layout says which optional tensors the model has, and in which dtype its
// matrices are held.
type layout struct {
	qkvBias, oBias, mlpBias bool
	// half is Float16 or BFloat16 when the products run in that dtype
	// (the file stores every matrix in it and --dtype is auto, or --dtype
	// asks for it: see resolveProducts): matrices are held in it and
	// matrix products read it with float32 accumulation; InvalidDType (the
	// zero value) keeps all f32.
	half dtypes.DType
	// inv lays the products out so that a row's result does not depend
	// on the other rows (the pure-Go backend; see invariance).
	inv invariance
}

// headInOut reports whether the LM head is held [hidden, vocab] (see
// projInOut) rather than as the file's [vocab, hidden]: on the pure-Go
// backend when it is a small matrix, whose product must be non-transposed
// to be batch-invariant (see invariance); a head tied to the embedding is
// then held as a transposed copy of it.
func (lay layout) headInOut(c Config) bool {
	return lay.inv.smallMatrix(c.HiddenSize, c.VocabSize)
}

// weightSpecs lists the weights in the order they are graph parameters.
func weightSpecs(c Config, lay layout) []weightSpec {
	d, q, kv, in := c.HiddenSize, c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim, c.IntermediateSize
	specs := []weightSpec{
		{name: "model.embed_tokens.weight", dims: []int{c.VocabSize, d}, matrix: true},
		{name: "model.norm.weight", dims: []int{d}},
	}
	switch head := lay.headInOut(c); {
	case !c.TieWordEmbeddings:
		specs = append(specs, weightSpec{name: "lm_head.weight", dims: []int{c.VocabSize, d}, matrix: true, inOut: head})
	case head:
		specs = append(specs, weightSpec{name: "lm_head.weight", dims: []int{c.VocabSize, d}, matrix: true, inOut: true, tiedCopy: true})
	}
	for l := range c.NumLayers {
		p := fmt.Sprintf("model.layers.%d.", l)
		specs = append(specs,
			weightSpec{name: p + "input_layernorm.weight", dims: []int{d}},
			weightSpec{name: p + "self_attn.q_proj.weight", dims: []int{q, d}, matrix: true, inOut: projInOut},
			weightSpec{name: p + "self_attn.k_proj.weight", dims: []int{kv, d}, matrix: true, inOut: projInOut},
			weightSpec{name: p + "self_attn.v_proj.weight", dims: []int{kv, d}, matrix: true, inOut: projInOut})
		if lay.qkvBias {
			specs = append(specs,
				weightSpec{name: p + "self_attn.q_proj.bias", dims: []int{q}},
				weightSpec{name: p + "self_attn.k_proj.bias", dims: []int{kv}},
				weightSpec{name: p + "self_attn.v_proj.bias", dims: []int{kv}})
		}
		specs = append(specs, weightSpec{name: p + "self_attn.o_proj.weight", dims: []int{d, q}, matrix: true, inOut: projInOut})
		if lay.oBias {
			specs = append(specs, weightSpec{name: p + "self_attn.o_proj.bias", dims: []int{d}})
		}
		specs = append(specs,
			weightSpec{name: p + "post_attention_layernorm.weight", dims: []int{d}},
			weightSpec{name: p + "mlp.gate_proj.weight", dims: []int{in, d}, matrix: true, inOut: projInOut},
			weightSpec{name: p + "mlp.up_proj.weight", dims: []int{in, d}, matrix: true, inOut: projInOut})
		if lay.mlpBias {
			specs = append(specs,
				weightSpec{name: p + "mlp.gate_proj.bias", dims: []int{in}},
				weightSpec{name: p + "mlp.up_proj.bias", dims: []int{in}})
		}
		specs = append(specs, weightSpec{name: p + "mlp.down_proj.weight", dims: []int{d, in}, matrix: true, inOut: projInOut})
		if lay.mlpBias {
			specs = append(specs, weightSpec{name: p + "mlp.down_proj.bias", dims: []int{d}})
		}
	}
	return withPanels(specs, lay)
}

// withPanels adds after every matrix the layout splits into panels
// (invariance.splits) its second holding (weightSpec.panels).
func withPanels(specs []weightSpec, lay layout) []weightSpec {
	out := make([]weightSpec, 0, len(specs))
	for _, s := range specs {
		out = append(out, s)
		if s.inOut && lay.inv.splits(s.dims[1], s.dims[0]) {
			p := s
			p.name += " (panels)"
			p.tiedCopy, p.panels = false, true
			out = append(out, p)
		}
	}
	return out
}

// weightParams creates the weight parameters of g in canonical order.
func weightParams(g *Graph, c Config, lay layout) modelParams {
	specs := weightSpecs(c, lay)
	i := 0
	next := func() *Node {
		s := specs[i]
		i++
		return Parameter(g, s.name, shapes.Make(s.dtype(lay), s.graphDims(lay)...))
	}
	mat := func() matrix {
		m := matrix{flat: next()}
		if i < len(specs) && specs[i].panels {
			m.panels = next()
		}
		return m
	}
	var p modelParams
	p.embed = next()
	p.finalNorm = next()
	if c.TieWordEmbeddings && !lay.headInOut(c) {
		p.lmHead = matrix{flat: p.embed}
	} else {
		p.lmHead = mat()
	}
	p.layers = make([]layerParams, c.NumLayers)
	for l := range p.layers {
		lp := &p.layers[l]
		lp.inNorm = next()
		lp.q, lp.k, lp.v = mat(), mat(), mat()
		if lay.qkvBias {
			lp.qBias, lp.kBias, lp.vBias = next(), next(), next()
		}
		lp.o = mat()
		if lay.oBias {
			lp.oBias = next()
		}
		lp.postNorm = next()
		lp.gate, lp.up = mat(), mat()
		if lay.mlpBias {
			lp.gateBias, lp.upBias = next(), next()
		}
		lp.down = mat()
		if lay.mlpBias {
			lp.downBias = next()
		}
	}
	return p
}

// linear computes x·Wᵀ (+b), out columns, with W laid out [out, in] as
// in Hugging Face, or x·W with W held [in, out] (inOut, see projInOut). A
// half-precision W (layout.half) multiplies x rounded to W's dtype, with
// float32 accumulation and a float32 result, as ggml does for F16
// weights. On the pure-Go backend a small W (invariance.smallMatrix) is
// held [in, out] padded to invariance.weightDims and multiplied by
// invariantLinear, so that each row's result does not depend on the other
// rows: the tokens of the other samples in the batch.
func linear(lay layout, x *Node, w matrix, b *Node, inOut bool, out int) *Node {
	var y *Node
	wAxis := 1
	if inOut {
		wAxis = 0
	}
	switch {
	case inOut && lay.inv.smallMatrix(x.Shape().Dim(-1), out):
		y = invariantLinear(lay.inv, x, w, out)
	case w.flat.DType() != x.DType():
		y = Dot(ConvertDType(x, w.flat.DType()), w.flat).WithAccumulatorDType(x.DType()).WithOutputDType(x.DType()).
			General([]int{x.Rank() - 1}, nil, []int{wAxis}, nil)
	default:
		y = DotGeneral(x, []int{x.Rank() - 1}, nil, w.flat, []int{wAxis}, nil)
	}
	if b != nil {
		y = Add(y, ExpandLeftToRank(b, y.Rank()))
	}
	return y
}

// invariantLinear is x·W for W a small matrix held [in, out] padded to
// v.weightDims (and as panels when v.splits): the rows of x (every axis
// but the last) are flattened, padded with zeros to W's contraction and
// v.rows, multiplied by rowDot, and the result cut back to the rows and
// the out columns.
func invariantLinear(v invariance, x *Node, w matrix, out int) *Node {
	dims := x.Shape().Dimensions
	k := dims[len(dims)-1]
	m := x.Shape().Size() / k
	x2 := padAxis(v.padRows(Reshape(x, m, k), 0), 1, w.flat.Shape().Dim(0))
	if w.flat.DType() != x2.DType() {
		x2 = ConvertDType(x2, w.flat.DType())
	}
	y := v.rowDot(x2, w.flat.Shape().Dim(1), func() *Node { return w.flat }, func() *Node { return w.panels })
	if y.Shape().Dim(0) != m || y.Shape().Dim(1) != out {
		y = Slice(y, AxisRange(0, m), AxisRange(0, out))
	}
	return Reshape(y, append(slices.Clone(dims[:len(dims)-1]), out)...)
}

// rmsNorm is x * rsqrt(mean(x²)+eps) * w.
func rmsNorm(x, w *Node, eps float64) *Node {
	v := ReduceAndKeep(Mul(x, x), ReduceMean, -1)
	y := Mul(x, Rsqrt(AddScalar(v, eps)))
	return Mul(ExpandLeftToRank(w, y.Rank()), y)
}

// ropeTables are the rotate-half RoPE tables of one step: cos and
// signedSin [rows, chunk, 1, hd] (cos|cos and -sin|sin of the positions'
// angles) and swap, the [hd, hd] matrix that exchanges the two halves of
// a head vector.
type ropeTables struct{ cos, signedSin, swap *Node }

// newRopeTables builds the tables from the angles [rows, chunk, hd/2].
func newRopeTables(freqs *Node, hd int) ropeTables {
	cos, sin := ExpandAxes(Cos(freqs), 2), ExpandAxes(Sin(freqs), 2)
	half := hd / 2
	swap := make([][]float32, hd)
	for i := range swap {
		swap[i] = make([]float32, hd)
		swap[i][(i+half)%hd] = 1
	}
	return ropeTables{
		cos:       Concatenate([]*Node{cos, cos}, -1),
		signedSin: Concatenate([]*Node{Neg(sin), sin}, -1),
		swap:      Const(freqs.Graph(), swap),
	}
}

// rope applies rotate-half RoPE to x [rows, chunk, heads, hd]:
// x1·cos − x2·sin | x2·cos + x1·sin for the halves x1|x2, computed as
// x·cos + swap(x)·signedSin. The halves are exchanged by a product with a
// permutation matrix (exact: one term of each sum is not zero), which the
// pure-Go backend runs vectorised on every core, where slicing the halves
// out and concatenating the results are element-by-element copies on one
// core; the result is the same bit for bit.
func rope(x *Node, t ropeTables) *Node {
	swapped := DotGeneral(x, []int{3}, nil, t.swap, []int{0}, nil)
	return Add(Mul(x, t.cos), Mul(swapped, t.signedSin))
}

// buildStep builds and compiles the graph for key k. Parameters: the
// weights, then tokens [R,C] int32, positions [R,C] int32, valid [R,C] bool,
// then (prefill only) slots [R] int32, clear [B] bool, last [R] int32, then
// the caches (K and V per layer, see cacheDims). Outputs: decode: next
// ids [B] int32; prefill: logits [R,V] (or [R,C,V] when k.All); then the
// updated caches.
func buildStep(backend mlbackends.Backend, c Config, lay layout, invFreq []float32, k graphKey) (g *Graph, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("build graph %s: %v", k, r)
			if g != nil {
				g.Finalize()
				g = nil
			}
		}
	}()
	g = NewGraph(backend, k.String())
	p := weightParams(g, c, lay)
	R, C, B, T, TK := k.Rows, k.Chunk, k.Batch, k.Cache, k.Keys
	if TK <= 0 || TK > T {
		return nil, fmt.Errorf("build graph %s: bad key length", k)
	}
	kvH, hd, H := c.NumKVHeads, c.HeadDim, c.NumHeads
	i32 := dtypes.Int32
	tokens := Parameter(g, "tokens", shapes.Make(i32, R, C))
	positions := Parameter(g, "positions", shapes.Make(i32, R, C))
	valid := Parameter(g, "valid", shapes.Make(dtypes.Bool, R, C))
	var slots, clear, last *Node
	if !k.Decode {
		slots = Parameter(g, "slots", shapes.Make(i32, R))
		clear = Parameter(g, "clear", shapes.Make(dtypes.Bool, B))
		last = Parameter(g, "last", shapes.Make(i32, R))
	} else {
		slots = Iota(g, shapes.Make(i32, R), 0)
	}
	caches := make([]*Node, 2*c.NumLayers)
	for i := range caches {
		caches[i] = Parameter(g, fmt.Sprintf("cache%d", i), shapes.Make(dtypes.Float32, cacheDims(c, lay.inv, B, T, i%2 == 1)...))
	}

	// Scatter indices (slot, position) for the new keys and values.
	clampedPos := ClipScalar(positions, 0, float64(T-1))
	slotsRC := BroadcastToDims(ExpandAxes(slots, -1), R, C)
	scatterIdx := Stack([]*Node{slotsRC, clampedPos}, -1) // [R,C,2]

	// RoPE tables.
	posF := ConvertDType(positions, dtypes.Float32)
	inv := Const(g, invFreq)
	freqs := Mul(ExpandAxes(posF, -1), Reshape(inv, 1, 1, hd/2)) // [R,C,hd/2]
	rt := newRopeTables(freqs, hd)

	// Attention blocks: query rows [lo, hi) of the chunk attend to keys
	// [0, keys). A prefill chunk of several blocks gives block j the keys
	// up to Base+(j+1)·Block, the last position any of its rows can have,
	// so the work above the causal diagonal is at most half of each
	// diagonal block rather than half of the whole chunk × keys square.
	blocks := []attBlock{{0, C, TK}}
	if !k.Decode && k.Block > 0 && k.Block < C {
		if C%k.Block != 0 {
			return nil, fmt.Errorf("build graph %s: chunk not a multiple of the block", k)
		}
		blocks = blocks[:0]
		for lo := 0; lo < C; lo += k.Block {
			blocks = append(blocks, attBlock{lo, lo + k.Block, min(lay.inv.keyCount(k.Base+lo+k.Block, T), TK)})
		}
	}
	att := &stepAttention{g: g, c: c, lay: lay, k: k, blocks: blocks, positions: positions, slots: slots,
		scatterIdx: scatterIdx, masks: map[maskKey]*Node{}}

	x := Gather(p.embed, ExpandAxes(tokens, -1)) // [R,C,D]
	if x.DType() != dtypes.Float32 {
		x = ConvertDType(x, dtypes.Float32)
	}
	newCaches := make([]*Node, len(caches))
	qDim, kvDim := H*hd, kvH*hd
	for l, lp := range p.layers {
		h := rmsNorm(x, lp.inNorm, c.RMSNormEps)
		q := Reshape(linear(lay, h, lp.q, lp.qBias, projInOut, qDim), R, C, H, hd)
		kk := Reshape(linear(lay, h, lp.k, lp.kBias, projInOut, kvDim), R, C, kvH, hd)
		vv := Reshape(linear(lay, h, lp.v, lp.vBias, projInOut, kvDim), R, C, kvH, hd)
		q = rope(q, rt)
		kk = rope(kk, rt)
		zero := ScalarZero(g, dtypes.Float32)
		kk = Where(valid, kk, zero)
		vv = Where(valid, vv, zero)
		ck, cv := caches[2*l], caches[2*l+1]
		if !k.Decode {
			ck = Where(clear, zero, ck)
			cv = Where(clear, zero, cv)
		}
		var out *Node
		if lay.inv.on {
			out, ck, cv = att.invariant(c.SlidingWindow[l], q, kk, vv, ck, cv)
		} else {
			out, ck, cv = att.plain(c.SlidingWindow[l], q, kk, vv, ck, cv)
		}
		newCaches[2*l], newCaches[2*l+1] = ck, cv
		x = Add(x, linear(lay, out, lp.o, lp.oBias, projInOut, c.HiddenSize))

		h = rmsNorm(x, lp.postNorm, c.RMSNormEps)
		gate := linear(lay, h, lp.gate, lp.gateBias, projInOut, c.IntermediateSize)
		up := linear(lay, h, lp.up, lp.upBias, projInOut, c.IntermediateSize)
		act := Mul(Mul(gate, Logistic(gate)), up)
		x = Add(x, linear(lay, act, lp.down, lp.downBias, projInOut, c.HiddenSize))
	}
	head := lay.headInOut(c)
	var outputs []*Node
	switch {
	case k.All:
		outputs = append(outputs, linear(lay, rmsNorm(x, p.finalNorm, c.RMSNormEps), p.lmHead, nil, head, c.VocabSize))
	case k.Decode:
		hLast := Reshape(x, R, c.HiddenSize)
		logits := linear(lay, rmsNorm(hLast, p.finalNorm, c.RMSNormEps), p.lmHead, nil, head, c.VocabSize)
		outputs = append(outputs, greedyIDs(logits))
	default:
		sel := OneHot(last, C, dtypes.Float32)                              // [R,C]
		hLast := DotGeneral(sel, []int{1}, []int{0}, x, []int{1}, []int{0}) // [R,D]
		outputs = append(outputs, linear(lay, rmsNorm(hLast, p.finalNorm, c.RMSNormEps), p.lmHead, nil, head, c.VocabSize))
	}
	outputs = append(outputs, newCaches...)
	g.Compile(outputs...)
	return g, nil
}

// buildCopy builds and compiles the cache-copy graph for key k (k.Copy).
// Parameters: src [B] int32 and keep [B] int32, then the caches (K and V
// per layer, see cacheDims). Each output cache row b holds
// positions t < keep[b] of input row src[b] and zeros after them: a row
// with src[b] == b and keep[b] == T is unchanged; a row that takes a shared
// prefix of length P from slot s has src s and keep P, and its positions
// from P on are cleared for the suffix's prefill. Outputs: the new caches.
func buildCopy(backend mlbackends.Backend, c Config, inv invariance, k graphKey) (g *Graph, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("build graph %s: %v", k, r)
			if g != nil {
				g.Finalize()
				g = nil
			}
		}
	}()
	g = NewGraph(backend, k.String())
	B, T := k.Batch, k.Cache
	i32 := dtypes.Int32
	src := Parameter(g, "src", shapes.Make(i32, B))
	keep := Parameter(g, "keep", shapes.Make(i32, B))
	pos := Iota(g, shapes.Make(i32, B, T), 1)
	mask := LessThan(pos, BroadcastToDims(ExpandAxes(keep, -1), B, T)) // [B,T]
	zero := ScalarZero(g, dtypes.Float32)
	idx := ExpandAxes(src, -1) // [B,1]
	outputs := make([]*Node, 2*c.NumLayers)
	masks := map[bool]*Node{}
	for i := range outputs {
		values := i%2 == 1
		dims := cacheDims(c, inv, B, T, values)
		cache := Parameter(g, fmt.Sprintf("cache%d", i), shapes.Make(dtypes.Float32, dims...))
		m, ok := masks[values]
		if !ok {
			// [B,T] as [B,1,T,1] or [B,1,1,T], T where the cache has it.
			mdims := []int{B, 1, 1, 1}
			mdims[cacheTimeAxis(inv, values)] = T
			m = BroadcastToDims(Reshape(mask, mdims...), dims...)
			masks[values] = m
		}
		outputs[i] = Where(m, Gather(cache, idx), zero)
	}
	g.Compile(outputs...)
	return g, nil
}

// greedyIDs returns each row's greedy id of logits [R,V] as int32 [R]. A
// row whose logits are not all finite (NaN weights, an overflow) has no
// greedy token: its id is -1 (nonFinite), from its own logits alone, so
// that no row depends on its batch.
func greedyIDs(logits *Node) *Node {
	finite := LogicalAll(IsFinite(logits), -1)
	return Where(finite, ArgMax(logits, -1, dtypes.Int32), Scalar(logits.Graph(), dtypes.Int32, nonFinite))
}
