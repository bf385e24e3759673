package gomlx

import (
	"fmt"
	"math"

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

// layerParams are the parameter nodes of one decoder block.
type layerParams struct {
	inNorm, q, k, v, qBias, kBias, vBias, o, oBias, postNorm, gate, up, gateBias, upBias, down, downBias *Node
}

// modelParams are the parameter nodes of the whole model.
type modelParams struct {
	embed, finalNorm, lmHead *Node
	layers                   []layerParams
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
}

// graphDims are the dimensions the weight is held in.
func (s weightSpec) graphDims() []int {
	if s.inOut {
		return []int{s.dims[1], s.dims[0]}
	}
	return s.dims
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
}

// weightSpecs lists the weights in the order they are graph parameters.
func weightSpecs(c Config, lay layout) []weightSpec {
	d, q, kv, in := c.HiddenSize, c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim, c.IntermediateSize
	specs := []weightSpec{
		{"model.embed_tokens.weight", []int{c.VocabSize, d}, true, false},
		{"model.norm.weight", []int{d}, false, false},
	}
	if !c.TieWordEmbeddings {
		specs = append(specs, weightSpec{"lm_head.weight", []int{c.VocabSize, d}, true, false})
	}
	for l := range c.NumLayers {
		p := fmt.Sprintf("model.layers.%d.", l)
		specs = append(specs,
			weightSpec{p + "input_layernorm.weight", []int{d}, false, false},
			weightSpec{p + "self_attn.q_proj.weight", []int{q, d}, true, projInOut},
			weightSpec{p + "self_attn.k_proj.weight", []int{kv, d}, true, projInOut},
			weightSpec{p + "self_attn.v_proj.weight", []int{kv, d}, true, projInOut})
		if lay.qkvBias {
			specs = append(specs,
				weightSpec{p + "self_attn.q_proj.bias", []int{q}, false, false},
				weightSpec{p + "self_attn.k_proj.bias", []int{kv}, false, false},
				weightSpec{p + "self_attn.v_proj.bias", []int{kv}, false, false})
		}
		specs = append(specs, weightSpec{p + "self_attn.o_proj.weight", []int{d, q}, true, projInOut})
		if lay.oBias {
			specs = append(specs, weightSpec{p + "self_attn.o_proj.bias", []int{d}, false, false})
		}
		specs = append(specs,
			weightSpec{p + "post_attention_layernorm.weight", []int{d}, false, false},
			weightSpec{p + "mlp.gate_proj.weight", []int{in, d}, true, projInOut},
			weightSpec{p + "mlp.up_proj.weight", []int{in, d}, true, projInOut})
		if lay.mlpBias {
			specs = append(specs,
				weightSpec{p + "mlp.gate_proj.bias", []int{in}, false, false},
				weightSpec{p + "mlp.up_proj.bias", []int{in}, false, false})
		}
		specs = append(specs, weightSpec{p + "mlp.down_proj.weight", []int{d, in}, true, projInOut})
		if lay.mlpBias {
			specs = append(specs, weightSpec{p + "mlp.down_proj.bias", []int{d}, false, false})
		}
	}
	return specs
}

// weightParams creates the weight parameters of g in canonical order.
func weightParams(g *Graph, c Config, lay layout) modelParams {
	specs := weightSpecs(c, lay)
	i := 0
	next := func() *Node {
		s := specs[i]
		i++
		return Parameter(g, s.name, shapes.Make(s.dtype(lay), s.graphDims()...))
	}
	var p modelParams
	p.embed = next()
	p.finalNorm = next()
	if c.TieWordEmbeddings {
		p.lmHead = p.embed
	} else {
		p.lmHead = next()
	}
	p.layers = make([]layerParams, c.NumLayers)
	for l := range p.layers {
		lp := &p.layers[l]
		lp.inNorm = next()
		lp.q, lp.k, lp.v = next(), next(), next()
		if lay.qkvBias {
			lp.qBias, lp.kBias, lp.vBias = next(), next(), next()
		}
		lp.o = next()
		if lay.oBias {
			lp.oBias = next()
		}
		lp.postNorm = next()
		lp.gate, lp.up = next(), next()
		if lay.mlpBias {
			lp.gateBias, lp.upBias = next(), next()
		}
		lp.down = next()
		if lay.mlpBias {
			lp.downBias = next()
		}
	}
	return p
}

// linear computes x·Wᵀ (+b) with W laid out [out, in] as in Hugging Face,
// or x·W with W held [in, out] (inOut, see projInOut). A half-precision
// W (layout.half) multiplies x rounded to W's dtype, with float32
// accumulation and a float32 result, as ggml does for F16 weights.
func linear(x, w, b *Node, inOut bool) *Node {
	var y *Node
	wAxis := 1
	if inOut {
		wAxis = 0
	}
	if w.DType() != x.DType() {
		y = Dot(ConvertDType(x, w.DType()), w).WithAccumulatorDType(x.DType()).WithOutputDType(x.DType()).
			General([]int{x.Rank() - 1}, nil, []int{wAxis}, nil)
	} else {
		y = DotGeneral(x, []int{x.Rank() - 1}, nil, w, []int{wAxis}, nil)
	}
	if b != nil {
		y = Add(y, ExpandLeftToRank(b, y.Rank()))
	}
	return y
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
	G := H / kvH
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
		caches[i] = Parameter(g, fmt.Sprintf("cache%d", i), shapes.Make(dtypes.Float32, cacheDims(c, B, T, i%2 == 1)...))
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
	type attBlock struct{ lo, hi, keys int }
	blocks := []attBlock{{0, C, TK}}
	if !k.Decode && k.Block > 0 && k.Block < C {
		if C%k.Block != 0 {
			return nil, fmt.Errorf("build graph %s: chunk not a multiple of the block", k)
		}
		blocks = blocks[:0]
		for lo := 0; lo < C; lo += k.Block {
			blocks = append(blocks, attBlock{lo, lo + k.Block, min(k.Base+lo+k.Block, TK)})
		}
	}
	// Additive attention masks [R,kvH,rows,G,keys] per (window, block).
	type maskKey struct{ window, block int }
	masks := map[maskKey]*Node{}
	maskFor := func(window, j int) *Node {
		if m, ok := masks[maskKey{window, j}]; ok {
			return m
		}
		b := blocks[j]
		n := b.hi - b.lo
		kpos := Iota(g, shapes.Make(i32, 1, 1, b.keys), 2)
		pos := positions
		if n < C {
			pos = Slice(positions, AxisRange(), AxisRange(b.lo, b.hi))
		}
		qpos := ExpandAxes(pos, -1) // [R,n,1]
		allowed := LessOrEqual(kpos, qpos)
		if window > 0 {
			allowed = And(allowed, LessThan(Sub(qpos, kpos), Scalar(g, i32, window)))
		}
		m := Where(allowed, ScalarZero(g, dtypes.Float32), Scalar(g, dtypes.Float32, -1e30))
		m = BroadcastToDims(Reshape(BroadcastToDims(m, R, n, b.keys), R, 1, n, 1, b.keys), R, kvH, n, G, b.keys)
		masks[maskKey{window, j}] = m
		return m
	}
	scale := 1 / math.Sqrt(float64(hd))

	x := Gather(p.embed, ExpandAxes(tokens, -1)) // [R,C,D]
	if x.DType() != dtypes.Float32 {
		x = ConvertDType(x, dtypes.Float32)
	}
	newCaches := make([]*Node, len(caches))
	for l, lp := range p.layers {
		h := rmsNorm(x, lp.inNorm, c.RMSNormEps)
		q := Reshape(linear(h, lp.q, lp.qBias, projInOut), R, C, H, hd)
		kk := Reshape(linear(h, lp.k, lp.kBias, projInOut), R, C, kvH, hd)
		vv := Reshape(linear(h, lp.v, lp.vBias, projInOut), R, C, kvH, hd)
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
		// The (slot, position) index pairs address axes 0 and 2 of the
		// keys [B,kvH,T,hd] and axes 0 and 3 of the values [B,kvH,hd,T];
		// each update is a [kvH,hd] window (axes 2, 3 of kk and vv).
		ck = BackendScatterSum(ck, scatterIdx, kk, 2, []int{2, 3}, []int{0, 2}, []int{0, 2}, false, false)
		cv = BackendScatterSum(cv, scatterIdx, vv, 2, []int{2, 3}, []int{0, 3}, []int{0, 3}, false, false)
		newCaches[2*l], newCaches[2*l+1] = ck, cv
		keys, vals := ck, cv
		if TK < T {
			keys = Slice(keys, AxisRange(), AxisRange(), AxisRange(0, TK))
			vals = Slice(vals, AxisRange(), AxisRange(), AxisRange(), AxisRange(0, TK))
		}
		if !k.Decode {
			idx := ExpandAxes(slots, -1)
			keys = Gather(keys, idx) // [R,kvH,TK,hd]
			vals = Gather(vals, idx) // [R,kvH,hd,TK]
		}
		// Both products take the cache operand in the [batch, cross,
		// contracting] order the pure-Go backend computes in, so it is
		// read in place rather than transposed every step.
		q5 := Reshape(q, R, C, kvH, G, hd)
		parts := make([]*Node, len(blocks))
		for j, b := range blocks {
			qj, kj, vj := q5, keys, vals
			if b.hi-b.lo < C {
				qj = Slice(q5, AxisRange(), AxisRange(b.lo, b.hi))
			}
			if b.keys < TK {
				kj = Slice(keys, AxisRange(), AxisRange(), AxisRange(0, b.keys))
				vj = Slice(vals, AxisRange(), AxisRange(), AxisRange(), AxisRange(0, b.keys))
			}
			scores := DotGeneral(qj, []int{4}, []int{0, 2}, kj, []int{3}, []int{0, 1}) // [R,kvH,n,G,keys]
			scores = Add(MulScalar(scores, scale), maskFor(c.SlidingWindow[l], j))
			probs := Softmax(scores, -1)
			parts[j] = DotGeneral(probs, []int{4}, []int{0, 1}, vj, []int{3}, []int{0, 1}) // [R,kvH,n,G,hd]
		}
		att := parts[0]
		if len(parts) > 1 {
			att = Concatenate(parts, 2)
		}
		att = Reshape(TransposeAllAxes(att, 0, 2, 1, 3, 4), R, C, H*hd)
		x = Add(x, linear(att, lp.o, lp.oBias, projInOut))

		h = rmsNorm(x, lp.postNorm, c.RMSNormEps)
		gate := linear(h, lp.gate, lp.gateBias, projInOut)
		up := linear(h, lp.up, lp.upBias, projInOut)
		act := Mul(Mul(gate, Logistic(gate)), up)
		x = Add(x, linear(act, lp.down, lp.downBias, projInOut))
	}
	var outputs []*Node
	switch {
	case k.All:
		outputs = append(outputs, linear(rmsNorm(x, p.finalNorm, c.RMSNormEps), p.lmHead, nil, false))
	case k.Decode:
		hLast := Reshape(x, R, c.HiddenSize)
		logits := linear(rmsNorm(hLast, p.finalNorm, c.RMSNormEps), p.lmHead, nil, false)
		outputs = append(outputs, ArgMax(logits, -1, i32))
	default:
		sel := OneHot(last, C, dtypes.Float32)                              // [R,C]
		hLast := DotGeneral(sel, []int{1}, []int{0}, x, []int{1}, []int{0}) // [R,D]
		outputs = append(outputs, linear(rmsNorm(hLast, p.finalNorm, c.RMSNormEps), p.lmHead, nil, false))
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
func buildCopy(backend mlbackends.Backend, c Config, k graphKey) (g *Graph, err error) {
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
	kvH, hd := c.NumKVHeads, c.HeadDim
	kMask := BroadcastToDims(Reshape(mask, B, 1, T, 1), B, kvH, T, hd)
	vMask := BroadcastToDims(Reshape(mask, B, 1, 1, T), B, kvH, hd, T)
	zero := ScalarZero(g, dtypes.Float32)
	idx := ExpandAxes(src, -1) // [B,1]
	outputs := make([]*Node, 2*c.NumLayers)
	for i := range outputs {
		values := i%2 == 1
		cache := Parameter(g, fmt.Sprintf("cache%d", i), shapes.Make(dtypes.Float32, cacheDims(c, B, T, values)...))
		mask := kMask
		if values {
			mask = vMask
		}
		outputs[i] = Where(mask, Gather(cache, idx), zero)
	}
	g.Compile(outputs...)
	return g, nil
}

// cacheDims is the layout of one layer's cache of batch rows and length
// tokens: keys [B,kvHeads,T,headDim], values [B,kvHeads,headDim,T]. With
// the cache row and KV head leading and the contracted axis last, both
// attention products (q·kᵀ contracts headDim, p·v contracts T) read the
// cache in the [batch, cross, contracting] order of the pure-Go backend's
// DotGeneral, which otherwise transposes a copy of the whole cache on every
// decode step.
func cacheDims(c Config, batch, length int, values bool) []int {
	if values {
		return []int{batch, c.NumKVHeads, c.HeadDim, length}
	}
	return []int{batch, c.NumKVHeads, length, c.HeadDim}
}
