// Package demotrain trains tally's embedded demo model: a tiny
// Llama-architecture transformer, with its byte-level BPE tokenizer, on
// the synthetic DROP-style questions of tally/internal/demodata, with
// gomlx's autodiff and Adam optimiser on its pure-Go backend. The trained
// model is exported in the Hugging Face layout (config.json,
// model.safetensors, tokenizer.json) that the native backend's ordinary
// loader reads.
//
// Training is deterministic: the same Hyper (seed included) gives the same
// tokenizer and the same weights.
package demotrain

import (
	"fmt"
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL reads best unqualified
	"github.com/gomlx/gomlx/ml/model"

	"tally/backends/gomlx"
)

// varPath is the store path of a model variable.
func varPath(name string) string { return "/demo/" + name }

// layerVar names the variable of one decoder block.
func layerVar(l int, name string) string { return fmt.Sprintf("layer%d_%s", l, name) }

// forward builds the model's logits [B,T,V] for tokens [B,T] with the same
// operations, in the same order, as the native backend's graph (RMSNorm,
// rotate-half RoPE, causal softmax attention, SiLU-gated MLP), reading the
// variables of store. K/V heads equal the query heads (no grouping).
func forward(store *model.Store, c gomlx.Config, invFreq []float32, tokens *Node) *Node {
	g := tokens.Graph()
	v := func(name string) *Node {
		vr := store.GetVariable(varPath(name))
		if vr == nil {
			panic(fmt.Sprintf("demo model variable %s missing", name))
		}
		return vr.ValueGraph(g)
	}
	B, T := tokens.Shape().Dimensions[0], tokens.Shape().Dimensions[1]
	H, hd := c.NumHeads, c.HeadDim
	half := hd / 2

	posF := ConvertDType(Iota(g, shapes.Make(dtypes.Int32, T), 0), dtypes.Float32)
	freqs := Mul(Reshape(posF, T, 1), Reshape(Const(g, invFreq), 1, half)) // [T,hd/2]
	cos := Reshape(Cos(freqs), 1, T, 1, half)
	sin := Reshape(Sin(freqs), 1, T, 1, half)
	rope := func(x *Node) *Node {
		x1 := Slice(x, AxisRange(), AxisRange(), AxisRange(), AxisRange(0, half))
		x2 := Slice(x, AxisRange(), AxisRange(), AxisRange(), AxisRange(half, hd))
		return Concatenate([]*Node{
			Sub(Mul(x1, cos), Mul(x2, sin)),
			Add(Mul(x2, cos), Mul(x1, sin)),
		}, -1)
	}
	rms := func(x, w *Node) *Node {
		m := ReduceAndKeep(Mul(x, x), ReduceMean, -1)
		// 1/√ rather than Rsqrt, which has no gradient in gomlx.
		return Mul(ExpandLeftToRank(w, x.Rank()), Div(x, Sqrt(AddScalar(m, c.RMSNormEps))))
	}
	linear := func(x, w *Node) *Node { return DotGeneral(x, []int{x.Rank() - 1}, nil, w, []int{1}, nil) }
	qpos := Iota(g, shapes.Make(dtypes.Int32, T, T), 0)
	kpos := Iota(g, shapes.Make(dtypes.Int32, T, T), 1)
	causal := BroadcastToDims(Reshape(LessOrEqual(kpos, qpos), 1, 1, T, T), B, H, T, T)
	negInf := Scalar(g, dtypes.Float32, -1e30)
	scale := 1 / math.Sqrt(float64(hd))

	x := Gather(v("embed"), ExpandAxes(tokens, -1)) // [B,T,D]
	for l := range c.NumLayers {
		h := rms(x, v(layerVar(l, "in_norm")))
		qkv := linear(h, v(layerVar(l, "qkv"))) // [B,T,3·H·hd]
		qd := H * hd
		q := rope(Reshape(Slice(qkv, AxisRange(), AxisRange(), AxisRange(0, qd)), B, T, H, hd))
		k := rope(Reshape(Slice(qkv, AxisRange(), AxisRange(), AxisRange(qd, 2*qd)), B, T, H, hd))
		vv := Reshape(Slice(qkv, AxisRange(), AxisRange(), AxisRange(2*qd, 3*qd)), B, T, H, hd)
		scores := DotGeneral(q, []int{3}, []int{0, 2}, k, []int{3}, []int{0, 2}) // [B,H,T,T]
		scores = Where(causal, MulScalar(scores, scale), negInf)
		probs := Softmax(scores, -1)
		att := DotGeneral(probs, []int{3}, []int{0, 1}, vv, []int{1}, []int{0, 2}) // [B,H,T,hd]
		att = Reshape(TransposeAllAxes(att, 0, 2, 1, 3), B, T, qd)
		x = Add(x, linear(att, v(layerVar(l, "o"))))

		h = rms(x, v(layerVar(l, "post_norm")))
		gu := linear(h, v(layerVar(l, "gate_up")))
		in := c.IntermediateSize
		gate := Slice(gu, AxisRange(), AxisRange(), AxisRange(0, in))
		up := Slice(gu, AxisRange(), AxisRange(), AxisRange(in, 2*in))
		x = Add(x, linear(Mul(Mul(gate, Logistic(gate)), up), v(layerVar(l, "down"))))
	}
	return linear(rms(x, v("final_norm")), v("lm_head"))
}

// weightedNLL is the mean negative log-likelihood of targets [B,T] under
// logits [B,T,V], weighted per position by weights [B,T].
func weightedNLL(logits, targets, weights *Node) *Node {
	V := logits.Shape().Dimensions[2]
	logp := LogSoftmax(logits, -1)
	nll := Neg(ReduceSum(Mul(logp, OneHot(targets, V, dtypes.Float32)), -1))
	return Div(ReduceAllSum(Mul(nll, weights)), ReduceAllSum(weights))
}
