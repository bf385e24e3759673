package gomlx

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	mlbackends "github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL reads best unqualified
	"github.com/gomlx/gomlx/core/tensors"
)

// The split step (the pure-Go backend).
//
// On the pure-Go backend a step (a prefill chunk or a decode step) is not
// one graph: graphs compute the matrix products, norms and residuals, and
// tally's own kernels (attend.go) compute, between them, each layer's
// attention and its MLP's activation, the two elementwise-heavy parts
// that the backend runs one node at a time on one core, Exp in float64.
// The first graph embeds the tokens and projects layer 0's queries, keys
// and values; per layer, one graph takes the attention output through
// the output projection, residual, norm and the gate and up projections,
// and (after silu(gate)·up) another takes the down projection and
// residual and projects the next layer's queries, keys and values, or,
// after the last layer, the logits (prefill) or the next tokens (decode).
// Each graph is compiled once per step shape and run with each layer's
// weights. The KV cache is held by tally (kvLayout), RoPE is applied as
// keys are written and queries read, and no graph holds attention scores:
// a prefill chunk costs memory in proportion to its tokens, not to tokens
// × keys.
//
// The graph parts compute as the one-graph step did (the same products,
// laid out for batch invariance); attention's result for a query row
// depends only on that row's own tokens (see attend.go), so a sample's
// logits still do not depend on its batch or on how its prompt is
// chunked. XLA keeps the one-graph step (buildStep).

// splitMaxTokens caps the tokens of one prefill call (rows × chunk) on
// the split step: longer chunks add activation memory without making the
// products faster.
const splitMaxTokens = maxPlanChunk

// splitPart names the graphs of the split step.
type splitPart int

const (
	splitFirst splitPart = iota // tokens → x, q, k, v of layer 0
	splitPost                   // x, attention of layer l → x, gate, up of layer l
	splitPre                    // x, activation of layer l → x, q, k, v of layer l+1
	splitLast                   // x, activation of the last layer → logits or next ids
)

// splitOut is what the last graph returns.
type splitOut int

const (
	outLast   splitOut = iota // prefill: the logits of each row's last token [R,V]
	outAll                    // every position's logits [R,C,V]
	outArgmax                 // decode: each row's next id [R] int32
)

// splitGraph is a compiled graph of the split step and the weights it
// reads, in the order of its parameters.
type splitGraph struct {
	g       *Graph
	weights []weightRef
}

// weightRef is a weight a split graph reads: the offset of its spec in
// one of the graph's weight ranges (splitModel.ranges), and whether the
// graph reads it as panels.
type weightRef struct {
	part, offset int
	panels       bool
}

// splitKey identifies one compiled graph of the split step.
type splitKey struct {
	part  splitPart
	rows  int
	chunk int
	out   splitOut // splitLast only
}

func (k splitKey) String() string {
	return fmt.Sprintf("split%d_r%d_c%d_o%d", k.part, k.rows, k.chunk, k.out)
}

// splitModel is a model's split step: its graphs and the weights each
// part takes.
type splitModel struct {
	graphs map[splitKey]*splitGraph
	kern   *stepKernels
	// specs are the weights in canonical order (weightSpecs); in[l],
	// post[l] and down[l] the index ranges of layer l's specs: its input
	// norm and q/k/v; its output projection, post-attention norm, gate
	// and up; its down projection.
	specs          []weightSpec
	in, post, down [][2]int
	head           [2]int // the final norm and the LM head (with its panels)
	tiedHead       bool   // the LM head is the embedding (held once)
	// form says of each weight whether it is held as panels ([P, panel,
	// out]) now; flips are the graphs that reshape a weight between its
	// two shapes in place (see weight).
	form      []bool
	flips     map[string]*Graph
	compiling time.Duration // spent compiling graphs so far
	scale     float32
	cos, ssin []float32 // the current step's RoPE tables
}

// useSplit reports whether m runs the split step: on the pure-Go backend.
func (m *Model) useSplit() bool { return m.lay.inv.on }

// newSplitModel prepares the split step of m.
func newSplitModel(m *Model) (*splitModel, error) {
	c := m.cfg
	s := &splitModel{graphs: map[splitKey]*splitGraph{}, kern: stepKernelsFor(kernelFamily()),
		specs: weightSpecs(c, m.lay), scale: float32(1 / math.Sqrt(float64(c.HeadDim)))}
	checkStepKernels(s.kern)
	L := c.NumLayers
	s.in, s.post, s.down = make([][2]int, L), make([][2]int, L), make([][2]int, L)
	for l := range L {
		s.in[l], s.post[l], s.down[l] = [2]int{-1, -1}, [2]int{-1, -1}, [2]int{-1, -1}
	}
	s.head = [2]int{-1, -1}
	extend := func(r *[2]int, i int) {
		if r[0] < 0 {
			r[0] = i
		}
		r[1] = i + 1
	}
	for i, sp := range s.specs {
		var l int
		if _, err := fmt.Sscanf(sp.name, "model.layers.%d.", &l); err == nil && l >= 0 && l < L {
			switch {
			case strings.Contains(sp.name, ".mlp.down_proj.") || s.down[l][0] >= 0:
				extend(&s.down[l], i)
			case strings.Contains(sp.name, ".self_attn.o_proj.") || s.post[l][0] >= 0:
				extend(&s.post[l], i)
			default:
				extend(&s.in[l], i)
			}
			continue
		}
		if sp.name == "model.norm.weight" || strings.HasPrefix(sp.name, "lm_head.") {
			extend(&s.head, i)
		}
	}
	for l := range L {
		if s.in[l][0] < 0 || s.post[l][0] < 0 || s.down[l][0] < 0 || s.in[l][1] != s.post[l][0] || s.post[l][1] != s.down[l][0] {
			return nil, fmt.Errorf("internal: layer %d's weights are not in canonical order", l)
		}
	}
	if s.head[0] < 0 || s.specs[0].name != "model.embed_tokens.weight" {
		return nil, errors.New("internal: no embedding or final norm")
	}
	s.tiedHead = s.head[1]-s.head[0] == 1
	s.form = make([]bool, len(s.specs))
	s.flips = map[string]*Graph{}
	return s, nil
}

// ranges are the index ranges of the weights a graph of part reads at
// layer l, in the order of its parameters.
func (s *splitModel) ranges(part splitPart, l int) [][2]int {
	switch part {
	case splitFirst:
		return [][2]int{{0, 1}, s.in[0]}
	case splitPost:
		return [][2]int{s.post[l]}
	case splitPre:
		return [][2]int{s.down[l], s.in[l+1]}
	}
	r := [][2]int{s.down[len(s.down)-1], s.head}
	if s.tiedHead {
		r = append(r, [2]int{0, 1}) // the embedding, as the LM head
	}
	return r
}

// close releases the split step's graphs.
func (s *splitModel) close() {
	for _, g := range s.graphs {
		g.g.Finalize()
	}
	for _, g := range s.flips {
		g.Finalize()
	}
	s.graphs, s.flips = nil, nil
}

// graphRefs collects what params creates for a graph: the weights it
// reads (in the order of its parameters), and the flat shapes given to
// matrices read as panels, which no product may read (a reshape of a
// buffer the step does not own is a copy of it on every step).
type graphRefs struct {
	weights []weightRef
	unread  []*Node
	names   []string // unread's weights
}

// reached returns the index of a node of nodes that outputs depend on,
// or -1.
func reached(outputs, nodes []*Node) int {
	if len(nodes) == 0 {
		return -1
	}
	want := map[*Node]int{}
	for i, n := range nodes {
		want[n] = i
	}
	seen := map[*Node]bool{}
	stack := slices.Clone(outputs)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[n] {
			continue
		}
		seen[n] = true
		if i, ok := want[n]; ok {
			return i
		}
		stack = append(stack, n.Inputs()...)
	}
	return -1
}

// partNodes are the weights of a split graph that belong to no layer.
type partNodes struct {
	embed, norm *Node
	head        matrix
}

// params creates the parameters of the weights in range r, the part-th
// of the graph's (see ranges), and assigns them to lp (layer weights, by
// name) or the returned nodes, recording each in refs. A matrix held a
// second time as panels under the one-graph step is held once here, and
// read in the shape its product with rows rows uses (rowDot: panels when
// small); a graph reading it as panels also gets the flat shape as a
// reshape of them, which no product may run (rowDot reads only the shape
// it multiplies by, and unused nodes are not executed; build checks it).
func (s *splitModel) params(g *Graph, lay layout, r [2]int, part, rows int, lp *layerParams, refs *graphRefs) (nodes partNodes) {
	for i := r[0]; i < r[1]; i++ {
		sp := s.specs[i]
		if sp.panels {
			continue // with its matrix, before
		}
		ref := weightRef{part: part, offset: i - r[0]}
		fd := sp.graphDims(lay)
		var n *Node
		var mat matrix
		if i+1 < len(s.specs) && s.specs[i+1].panels {
			ref.panels = lay.inv.usesPanels(1, roundUp(rows, max(lay.inv.rows, 1)), fd[0], fd[1])
		}
		if ref.panels {
			pd := s.specs[i+1].graphDims(lay)
			mat.panels = Parameter(g, sp.name+" (panels)", shapes.Make(sp.dtype(lay), pd...))
			mat.flat = Reshape(mat.panels, fd...)
			refs.unread, refs.names = append(refs.unread, mat.flat), append(refs.names, sp.name)
		} else {
			n = Parameter(g, sp.name, shapes.Make(sp.dtype(lay), fd...))
			mat.flat = n
		}
		refs.weights = append(refs.weights, ref)
		name := sp.name
		if rest, ok := strings.CutPrefix(name, "model.layers."); ok {
			_, name, _ = strings.Cut(rest, ".")
		}
		switch name {
		case "model.embed_tokens.weight":
			nodes.embed = n
		case "model.norm.weight":
			nodes.norm = n
		case "lm_head.weight":
			nodes.head = mat
		case "input_layernorm.weight":
			lp.inNorm = n
		case "post_attention_layernorm.weight":
			lp.postNorm = n
		case "self_attn.q_proj.weight":
			lp.q = mat
		case "self_attn.k_proj.weight":
			lp.k = mat
		case "self_attn.v_proj.weight":
			lp.v = mat
		case "self_attn.o_proj.weight":
			lp.o = mat
		case "mlp.gate_proj.weight":
			lp.gate = mat
		case "mlp.up_proj.weight":
			lp.up = mat
		case "mlp.down_proj.weight":
			lp.down = mat
		case "self_attn.q_proj.bias":
			lp.qBias = n
		case "self_attn.k_proj.bias":
			lp.kBias = n
		case "self_attn.v_proj.bias":
			lp.vBias = n
		case "self_attn.o_proj.bias":
			lp.oBias = n
		case "mlp.gate_proj.bias":
			lp.gateBias = n
		case "mlp.up_proj.bias":
			lp.upBias = n
		case "mlp.down_proj.bias":
			lp.downBias = n
		default:
			panic(fmt.Sprintf("split step: unknown weight %s", sp.name))
		}
	}
	return nodes
}

// weight returns weight i (an index of Model.weights) held in the shape a
// graph reads it in: flat, or as panels. A matrix the split step holds
// once is reshaped in place when the graph reads the other shape: a graph
// that takes its buffer (donated) and returns it reshaped, which the
// pure-Go backend does without copying it.
func (m *Model) weight(i int, panels bool) (*tensors.Tensor, error) {
	s := m.sp
	t := m.weights[i]
	if t == nil {
		return nil, fmt.Errorf("internal: weight %s not held", s.specs[i].name)
	}
	if s.form[i] == panels {
		return t, nil
	}
	to := s.specs[i].graphDims(m.lay)
	if panels {
		to = s.specs[i+1].graphDims(m.lay)
	}
	from := t.Shape()
	key := fmt.Sprint(from, to)
	g, ok := s.flips[key]
	if !ok {
		var err error
		if g, err = buildReshape(m.backend, from, to); err != nil {
			return nil, err
		}
		s.flips[key] = g
		m.stats.Compilations++
	}
	d, err := DonateTensorBuffer(t, m.backend, 0)
	if err != nil {
		return nil, fmt.Errorf("reshape weight %s: %w", s.specs[i].name, err)
	}
	m.weights[i] = nil
	out := g.Run(d)[0]
	m.weights[i], s.form[i] = out, panels
	return out, nil
}

// buildReshape compiles the graph that reshapes a tensor of shape from to
// dims to.
func buildReshape(backend mlbackends.Backend, from shapes.Shape, to []int) (g *Graph, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("build reshape %s -> %v: %v", from, to, r)
		}
	}()
	g = NewGraph(backend, fmt.Sprintf("reshape_%v_%v", from.Dimensions, to))
	g.Compile(Reshape(Parameter(g, "w", from), to...))
	return g, nil
}

// qkv is layer lp's queries, keys and values of x [R,C,D] ([R,C,H·hd],
// [R,C,kvH·hd] twice), before RoPE.
func qkv(c Config, lay layout, x *Node, lp *layerParams) (q, k, v *Node) {
	h := rmsNorm(x, lp.inNorm, c.RMSNormEps)
	qDim, kvDim := c.NumHeads*c.HeadDim, c.NumKVHeads*c.HeadDim
	return linear(lay, h, lp.q, lp.qBias, projInOut, qDim),
		linear(lay, h, lp.k, lp.kBias, projInOut, kvDim),
		linear(lay, h, lp.v, lp.vBias, projInOut, kvDim)
}

// postAttention is x plus layer lp's output projection of its attention
// att, and the gate and up projections of its post-attention norm.
func postAttention(c Config, lay layout, x, att *Node, lp *layerParams) (xOut, gate, up *Node) {
	x = Add(x, linear(lay, att, lp.o, lp.oBias, projInOut, c.HiddenSize))
	h := rmsNorm(x, lp.postNorm, c.RMSNormEps)
	return x, linear(lay, h, lp.gate, lp.gateBias, projInOut, c.IntermediateSize),
		linear(lay, h, lp.up, lp.upBias, projInOut, c.IntermediateSize)
}

// afterMLP is x plus layer lp's down projection of its MLP's activation
// act (silu(gate)·up).
func afterMLP(c Config, lay layout, x, act *Node, lp *layerParams) *Node {
	return Add(x, linear(lay, act, lp.down, lp.downBias, projInOut, c.HiddenSize))
}

// build compiles the graph of k.
func (s *splitModel) build(backend mlbackends.Backend, c Config, lay layout, k splitKey) (sg *splitGraph, err error) {
	var g *Graph
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("build graph %s: %v", k, r)
			if g != nil {
				g.Finalize()
			}
			sg = nil
		}
	}()
	g = NewGraph(backend, k.String())
	R, C, D := k.rows, k.chunk, c.HiddenSize
	act := func(name string, dims ...int) *Node { return Parameter(g, name, shapes.Make(dtypes.Float32, dims...)) }
	var outputs []*Node
	var refs graphRefs
	rs := s.ranges(k.part, 0)
	switch k.part {
	case splitFirst:
		var lp layerParams
		embed := s.params(g, lay, rs[0], 0, R*C, nil, &refs).embed
		s.params(g, lay, rs[1], 1, R*C, &lp, &refs)
		tokens := Parameter(g, "tokens", shapes.Make(dtypes.Int32, R, C))
		x := Gather(embed, ExpandAxes(tokens, -1)) // [R,C,D]
		if x.DType() != dtypes.Float32 {
			x = ConvertDType(x, dtypes.Float32)
		}
		q, kk, v := qkv(c, lay, x, &lp)
		outputs = []*Node{x, q, kk, v}
	case splitPost:
		var lp layerParams
		s.params(g, lay, rs[0], 0, R*C, &lp, &refs)
		x, gate, up := postAttention(c, lay, act("x", R, C, D), act("attention", R, C, c.NumHeads*c.HeadDim), &lp)
		outputs = []*Node{x, gate, up}
	case splitPre:
		var cur, next layerParams
		s.params(g, lay, rs[0], 0, R*C, &cur, &refs)
		s.params(g, lay, rs[1], 1, R*C, &next, &refs)
		x := afterMLP(c, lay, act("x", R, C, D), act("activation", R, C, c.IntermediateSize), &cur)
		q, kk, v := qkv(c, lay, x, &next)
		outputs = []*Node{x, q, kk, v}
	case splitLast:
		var lp layerParams
		headRows := R
		if k.out == outAll {
			headRows = R * C
		}
		s.params(g, lay, rs[0], 0, R*C, &lp, &refs)
		nodes := s.params(g, lay, rs[1], 1, headRows, nil, &refs)
		norm, head := nodes.norm, nodes.head
		if s.tiedHead {
			head = matrix{flat: s.params(g, lay, rs[2], 2, headRows, nil, &refs).embed}
		}
		x := afterMLP(c, lay, act("x", R, C, D), act("activation", R, C, c.IntermediateSize), &lp)
		inOut := lay.headInOut(c)
		switch k.out {
		case outAll:
			outputs = []*Node{linear(lay, rmsNorm(x, norm, c.RMSNormEps), head, nil, inOut, c.VocabSize)}
		case outArgmax:
			logits := linear(lay, rmsNorm(Reshape(x, R, D), norm, c.RMSNormEps), head, nil, inOut, c.VocabSize)
			outputs = []*Node{greedyIDs(logits)}
		default:
			last := Parameter(g, "last", shapes.Make(dtypes.Int32, R))
			sel := OneHot(last, C, dtypes.Float32)                              // [R,C]
			hLast := DotGeneral(sel, []int{1}, []int{0}, x, []int{1}, []int{0}) // [R,D]
			outputs = []*Node{linear(lay, rmsNorm(hLast, norm, c.RMSNormEps), head, nil, inOut, c.VocabSize)}
		}
	}
	if i := reached(outputs, refs.unread); i >= 0 {
		panic(fmt.Sprintf("internal: the graph reads %s flat, as a copy of its panels", refs.names[i]))
	}
	sg = &splitGraph{weights: refs.weights}
	g.Compile(outputs...)
	sg.g = g
	return sg, nil
}

// splitGraph returns the compiled graph of k, compiling it on first use.
func (m *Model) splitGraph(k splitKey) (*splitGraph, error) {
	if m.closed {
		return nil, errors.New("model is closed")
	}
	s := m.sp
	if g, ok := s.graphs[k]; ok {
		return g, nil
	}
	t0 := time.Now()
	g, err := s.build(m.backend, m.cfg, m.lay, k)
	if err != nil {
		return nil, err
	}
	s.compiling += time.Since(t0)
	s.graphs[k] = g
	m.stats.Compilations++
	return g, nil
}

// newSplitCache allocates zeroed K/V caches of batch rows and length
// tokens (a multiple of kvBlock) in kvLayout, one key and one value
// tensor per layer.
func (m *Model) newSplitCache(batch, length int) []*tensors.Tensor {
	l := newKVLayout(m.cfg, batch, length)
	out := make([]*tensors.Tensor, 2*m.cfg.NumLayers)
	for i := range out {
		n := l.keySize()
		if i%2 == 1 {
			n = l.valueSize()
		}
		out[i] = tensors.FromShape(shapesF32(n))
	}
	return out
}

// flat returns the float32 values of t: a cache tensor (held locally) or
// a graph output (a buffer the pure-Go backend shares), in place.
func flat(t *tensors.Tensor) []float32 {
	var out []float32
	tensors.MustMutableFlatData(t, func(f []float32) { out = f })
	return out
}

// constFlat returns the float32 values of t in place without
// invalidating its device buffer (a graph output).
func constFlat(t *tensors.Tensor) []float32 {
	var out []float32
	tensors.MustConstFlatData(t, func(f []float32) { out = f })
	return out
}

// splitStep runs one step of R rows of C tokens: tokens [R·C], rows the
// rows' cache slots and positions, last (outLast only) each row's last
// token. It returns the last graph's output.
func (m *Model) splitStep(cache []*tensors.Tensor, batch, length int, rows []stepRow, tokens []int32, C int, out splitOut, last []int32) (res *tensors.Tensor, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("run split step: %v", r)
		}
	}()
	c, s := m.cfg, m.sp
	R, hd, L := len(rows), c.HeadDim, c.NumLayers
	if n := R * C * hd; cap(s.cos) < n {
		s.cos, s.ssin = make([]float32, n), make([]float32, n)
	}
	s.cos, s.ssin = s.cos[:R*C*hd], s.ssin[:R*C*hd]
	fillRope(rows, C, m.invFreq, s.cos, s.ssin)
	att, err := tensors.FromShapeForBackend(m.backend, 0, shapesF32(R, C, c.NumHeads*hd))
	if err != nil {
		return nil, fmt.Errorf("attention buffer: %w", err)
	}
	defer func() { _ = att.FinalizeAll() }()
	act, err := tensors.FromShapeForBackend(m.backend, 0, shapesF32(R, C, c.IntermediateSize))
	if err != nil {
		return nil, fmt.Errorf("activation buffer: %w", err)
	}
	defer func() { _ = act.FinalizeAll() }()
	attFlat, actFlat := flat(att), flat(act)
	run := func(k splitKey, l int, extra ...any) ([]*tensors.Tensor, error) {
		g, err := m.splitGraph(k)
		if err != nil {
			return nil, err
		}
		rs := s.ranges(k.part, l)
		args := make([]any, 0, len(g.weights)+len(extra))
		for _, w := range g.weights {
			t, err := m.weight(rs[w.part][0]+w.offset, w.panels)
			if err != nil {
				return nil, err
			}
			args = append(args, t)
		}
		return g.g.Run(append(args, extra...)...), nil
	}
	donate := func(x *tensors.Tensor) (any, error) {
		d, err := DonateTensorBuffer(x, m.backend, 0)
		if err != nil {
			return nil, fmt.Errorf("donate activations: %w", err)
		}
		return d, nil
	}
	tok := tensors.FromFlatDataAndDimensions(tokens, R, C)
	outs, err := run(splitKey{part: splitFirst, rows: R, chunk: C}, 0, tok)
	_ = tok.FinalizeAll()
	if err != nil {
		return nil, err
	}
	lay := newKVLayout(c, batch, length)
	for l := range L {
		x, q, k, v := outs[0], outs[1], outs[2], outs[3]
		a := &attnStep{kern: s.kern, lay: lay, keys: flat(cache[2*l]), values: flat(cache[2*l+1]),
			heads: c.NumHeads, chunk: C, window: c.SlidingWindow[l], scale: s.scale, rows: rows, cos: s.cos, ssin: s.ssin}
		a.write(constFlat(k), constFlat(v))
		a.run(constFlat(q), attFlat)
		for _, t := range outs[1:] {
			_ = t.FinalizeAll()
		}
		xd, err := donate(x)
		if err != nil {
			return nil, err
		}
		if outs, err = run(splitKey{part: splitPost, rows: R, chunk: C}, l, xd, att); err != nil {
			return nil, err
		}
		x, gate, up := outs[0], outs[1], outs[2]
		s.kern.siluOnCores(constFlat(gate), constFlat(up), actFlat)
		_, _ = gate.FinalizeAll(), up.FinalizeAll()
		if xd, err = donate(x); err != nil {
			return nil, err
		}
		if l < L-1 {
			if outs, err = run(splitKey{part: splitPre, rows: R, chunk: C}, l, xd, act); err != nil {
				return nil, err
			}
			continue
		}
		var extra []any
		var lastT *tensors.Tensor
		if out == outLast {
			lastT = tensors.FromFlatDataAndDimensions(last, R)
			extra = append(extra, lastT)
		}
		outs, err = run(splitKey{part: splitLast, rows: R, chunk: C, out: out}, l, append([]any{xd, act}, extra...)...)
		if lastT != nil {
			_ = lastT.FinalizeAll()
		}
		if err != nil {
			return nil, err
		}
	}
	return outs[0], nil
}

// prefillSplit is prefill on the split step: rows are prefilled in calls
// of at most splitMaxTokens tokens (rows × chunk) and, when budget is
// set, of at most budget attention scores (rows × heads × chunk × keys,
// Options.PrefillBudget's unit), or in one call for all.
func (m *Model) prefillSplit(ctx context.Context, cache []*tensors.Tensor, batch, length int, rows []*prefillRow, all bool, budget int) error {
	H, V := m.cfg.NumHeads, m.cfg.VocabSize
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("prefill: %w", err)
		}
		active := unfinished(rows)
		if len(active) == 0 {
			return nil
		}
		R := batchBucket(len(active), batch)
		limit := 0
		chunk := func() int { return active[0].chunk(limit) }
		keys := func(C int) int {
			d := 0
			for _, r := range active[:min(R, len(active))] {
				d = max(d, r.done)
			}
			return min(d+C, length)
		}
		C := chunk()
		over := func() bool { return R*C > splitMaxTokens || (budget > 0 && R*H*C*keys(C) > budget) }
		if !all {
			for C > 256 && over() {
				limit = pow2AtLeast(C) / 2
				C = chunk()
			}
			for R > 1 && over() {
				R /= 2
			}
			for C > minChunk && over() {
				limit = pow2AtLeast(C) / 2
				C = chunk()
			}
		}
		group := active[:min(R, len(active))]
		tokens := make([]int32, R*C)
		last := make([]int32, R)
		srows := make([]stepRow, R)
		for i, r := range group {
			n := min(C, r.remaining())
			srows[i] = stepRow{slot: r.slot, pos0: r.done, n: n}
			for j := range n {
				tokens[i*C+j] = int32(r.ids[r.done+j])
			}
			last[i] = int32(n - 1)
			m.stats.PrefillTokens += n
		}
		out := outLast
		if all {
			out = outAll
		}
		res, secs, err := m.timedSplitStep(cache, batch, length, srows, tokens, C, out, last)
		if err != nil {
			return err
		}
		m.stats.PrefillCalls++
		m.stats.PrefillSeconds += secs
		logits, err := tensors.CopyFlatData[float32](res)
		_ = res.FinalizeAll()
		if err != nil {
			return fmt.Errorf("read logits: %w", err)
		}
		for i, r := range group {
			n := srows[i].n
			r.done += n
			if r.done < len(r.ids) {
				continue
			}
			if all {
				r.all = make([][]float32, n)
				for j := range n {
					r.all[j] = logits[(i*C+j)*V : (i*C+j+1)*V]
				}
				r.logits = r.all[n-1]
			} else {
				r.logits = logits[i*V : (i+1)*V]
			}
		}
	}
}

// timedSplitStep is splitStep, also returning the seconds it took less
// those spent compiling its graphs (Stats times prefill and decode apart
// from compilation, as the one-graph step does: plan's estimates read
// them).
func (m *Model) timedSplitStep(cache []*tensors.Tensor, batch, length int, rows []stepRow, tokens []int32, C int, out splitOut, last []int32) (*tensors.Tensor, float64, error) {
	t0, c0 := time.Now(), m.sp.compiling
	res, err := m.splitStep(cache, batch, length, rows, tokens, C, out, last)
	return res, (time.Since(t0) - (m.sp.compiling - c0)).Seconds(), err
}

// decodeSplit is decodeStep on the split step.
func (m *Model) decodeSplit(cache []*tensors.Tensor, batch, length int, tokens, positions []int32, valid []bool) ([]int32, error) {
	rows := make([]stepRow, batch)
	for i := range rows {
		rows[i] = stepRow{slot: i, pos0: int(positions[i])}
		if valid[i] {
			rows[i].n = 1
		}
	}
	res, secs, err := m.timedSplitStep(cache, batch, length, rows, tokens, 1, outArgmax, nil)
	if err != nil {
		return nil, err
	}
	m.stats.DecodeSteps++
	m.stats.DecodeSeconds += secs
	ids, err := tensors.CopyFlatData[int32](res)
	_ = res.FinalizeAll()
	if err != nil {
		return nil, fmt.Errorf("read ids: %w", err)
	}
	return ids, nil
}

// copySplitRows is copyRows on the split step's caches: row b takes
// positions below keep[b] from row src[b] (every row read as it was
// before the call), and the rest of the block holding keep[b] is zeroed.
func (m *Model) copySplitRows(cache []*tensors.Tensor, batch, length int, src, keep []int32) error {
	lay := newKVLayout(m.cfg, batch, length)
	var dsts []int
	for b := range batch {
		if int(src[b]) != b || int(keep[b]) < length {
			if src[b] < 0 || int(src[b]) >= batch || keep[b] < 0 || int(keep[b]) > length {
				return fmt.Errorf("share prefix: bad copy of row %d from %d, %d positions", b, src[b], keep[b])
			}
			dsts = append(dsts, b)
		}
	}
	for l := range m.cfg.NumLayers {
		keys, values := flat(cache[2*l]), flat(cache[2*l+1])
		// Rows whose source is also overwritten here read a snapshot.
		snap := map[int][2][]float32{}
		for _, b := range dsts {
			s := int(src[b])
			if s == b || !containsInt(dsts, s) {
				continue
			}
			if _, ok := snap[s]; !ok {
				kb, vb := lay.keyBlock(s, 0, 0), lay.valueAt(s, 0, 0)
				rowK, rowV := lay.heads*lay.length*lay.hd, lay.heads*lay.length*lay.hdV
				snap[s] = [2][]float32{append([]float32(nil), keys[kb:kb+rowK]...), append([]float32(nil), values[vb:vb+rowV]...)}
			}
		}
		for _, b := range dsts {
			s, n := int(src[b]), int(keep[b])
			srcK, srcV, sb := keys, values, s
			if sn, ok := snap[s]; ok {
				srcK, srcV, sb = sn[0], sn[1], 0
			}
			lay.copyRow(keys, values, b, srcK, srcV, sb, n)
		}
	}
	m.stats.PrefixCopies++
	return nil
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// copyRow sets positions [0, n) of row b of keys and values to those of
// row sb of srcK and srcV (laid out as l, but for one row when they are a
// snapshot: sb 0), and zeroes the rest of the block holding position n.
func (l kvLayout) copyRow(keys, values []float32, b int, srcK, srcV []float32, sb, n int) {
	if n > 0 && (b != sb || &srcK[0] != &keys[0]) {
		for h := range l.heads {
			whole := n / kvBlock * kvBlock
			copy(keys[l.keyBlock(b, h, 0):l.keyBlock(b, h, 0)+whole*l.hd], srcK[l.keyBlock(sb, h, 0):])
			if whole < n {
				blk := n / kvBlock
				dst, from := l.keyBlock(b, h, blk), l.keyBlock(sb, h, blk)
				for d := range l.hd {
					copy(keys[dst+d*kvBlock:dst+d*kvBlock+n-whole], srcK[from+d*kvBlock:])
				}
			}
			copy(values[l.valueAt(b, h, 0):l.valueAt(b, h, n)], srcV[l.valueAt(sb, h, 0):])
		}
	}
	l.clearTail(keys, values, b, n)
}

// splitKVBytesPerToken is one cached token's keys and values over all
// layers in kvLayout, in bytes.
func splitKVBytesPerToken(c Config) int64 {
	l := newKVLayout(c, 1, kvBlock)
	return int64(c.NumLayers) * int64(c.NumKVHeads) * int64(l.hd+l.hdV) * 4
}
