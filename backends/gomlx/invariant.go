package gomlx

import (
	"fmt"
	"strings"

	mlbackends "github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL reads best unqualified
)

// Batch invariance on the pure-Go backend.
//
// A sample's logits must not depend on what shares its batch. gomlx/compute
// v0.1.3 computes each matrix product with one of two kernels, picked by
// the size of the whole product (dot/matmul's routers: the "small" kernel
// below noSIMDSmallMatMulSizeThreshold, 4Mi multiply-adds, counting the
// batch axis on AVX-512 and the portable kernels but not on AVX2; the
// packed "large" kernel above it), and the two sum in different orders.
// The rows of a product are the tokens of every sample in the call, so
// the kernel, and the last bits of every sample's logits, changed with the
// batch. Measured on the fixtures (TestBatchInvariance, before this
// change): the last prompt logits of a prompt alone and in a batch of 8
// differed by up to 8e-6 in float32, and in bfloat16 greedy tokens parted.
//
// What the kernels do (TestRowDotInvariant checks it on every kernel
// family, in float32, bfloat16 and float16):
//   - the large kernel sums each output over the contraction in panels of
//     PanelContractingSize values (128 on AVX-512 and AVX2, 512 on the
//     portable kernels), one multiply-add after another within a panel,
//     then adds the panels in order; a row's result does not depend on
//     how many rows the product has;
//   - the small kernel, for the "non-transposed" layout ([M,K]·[K,N]),
//     sums the whole contraction one multiply-add after another, and so
//     equals the large kernel when K fits one panel, provided N is wide
//     enough for its vector loop (N > 16 in float32 and N > 32 in bfloat16
//     and float16 on AVX-512, where narrower products go to another
//     kernel, and a multiple of its vector width); the portable small
//     kernel sums rows in tiles of 3 and the last M mod 3 rows in another
//     order, so there M must be a multiple of 3;
//   - the small kernel for the "transposed" layout ([M,K]·[N,K]) sums
//     along vector lanes and never equals the large kernel.
//
// So on the pure-Go backend (invariance.on) every product that can run
// either kernel is written in the non-transposed layout (rowDot): when
// the product is large at its row count, as one product, whose large
// kernel sums panels in order; when it is small, with its contraction
// split into panels, one product per panel (batched over the panels,
// where each kernel sums a panel in order) summed in order by ReduceSum,
// which adds them one after another as the large kernel does. Small
// weight matrices are held [in, out], padded to widths the kernels agree
// on (weightDims), and, when their contraction splits, read as panels
// too (see matrix: the split step holds the one buffer in the shape the
// graph at hand reads); the attention keys are counted in steps that
// keep panels whole (keyCount); a narrow value head is padded
// (valueWidth); the portable kernels' products get rows in multiples of
// 3. Weights that are large for any row count (K·N ≥ 4Mi) are multiplied
// as before. XLA (invariance.on false) computes as before.

const (
	// smallProduct is gomlx/compute v0.1.3's noSIMDSmallMatMulSizeThreshold:
	// a product of fewer multiply-adds runs the small kernel.
	smallProduct = 4 << 20
	// simdPanel and goPanel are the large kernels' PanelContractingSize
	// for float32, bfloat16 and float16: AVX-512 and AVX2 (simdPanel), the
	// portable Go kernels (goPanel).
	simdPanel = 128
	goPanel   = 512
)

// invariance says how the graph lays out its matrix products so that each
// row's result does not depend on the other rows of the product (see the
// comment above). The zero value (XLA) leaves the products as they were.
type invariance struct {
	// on is true on the pure-Go backend.
	on bool
	// panel is the large kernel's contraction panel of this kernel
	// family: simdPanel or goPanel.
	panel int
	// rows is what the rows of a product are padded to a multiple of: 3
	// on the portable kernels, 1 on AVX-512 and AVX2.
	rows int
	// batchCounts is true when the kernel choice counts the batch axis
	// (AVX-512 and the portable kernels), false on AVX2.
	batchCounts bool
}

// newInvariance returns the product layout for device ("" or "cpu": the
// pure-Go backend with this machine's kernel family; XLA: off).
func newInvariance(device string) invariance {
	if isXLA(device) {
		return invariance{}
	}
	family := kernelFamily()
	switch {
	case family == "avx512":
		return invariance{on: true, panel: simdPanel, rows: 1, batchCounts: true}
	case family == "avx2":
		return invariance{on: true, panel: simdPanel, rows: 1}
	case strings.HasPrefix(family, "go-"):
		return invariance{on: true, panel: goPanel, rows: 3, batchCounts: true}
	}
	panic(fmt.Sprintf("unknown kernel family %q", family))
}

// smallMatrix reports whether a k×n weight matrix can run the small
// kernel (some row count keeps its product under smallProduct): such a
// matrix is held as weightDims says and multiplied by rowDot.
func (v invariance) smallMatrix(k, n int) bool {
	return v.on && k*n < smallProduct
}

// contraction is the length a contraction of k values is padded to: k
// when it fits one panel, else a whole number of panels.
func (v invariance) contraction(k int) int {
	if k <= v.panel {
		return k
	}
	return roundUp(k, v.panel)
}

// splits reports whether a k×n weight matrix is small and its
// contraction longer than one panel: rowDot then splits it into panels
// when its rows are few, and reads it as panels (see matrix).
func (v invariance) splits(k, n int) bool {
	return v.smallMatrix(k, n) && k > v.panel
}

// weightCols is the width a small weight matrix of n columns is held in:
// a multiple of 32 of at least 64, so that the small kernel's vector loop
// covers every column in float32, bfloat16 and float16.
func weightCols(n int) int {
	return max(64, roundUp(n, 32))
}

// weightDims is the [in, out] shape a small k×n weight matrix is held in
// (zeros in the padding).
func (v invariance) weightDims(k, n int) (kp, np int) {
	return v.contraction(k), weightCols(n)
}

// keyCount is the number of cache positions attention reads for k: k
// rounded up to a multiple of 32 (the scores' product columns, float32)
// and, past one panel, to whole panels (the values' contraction), at most
// length (a cache length: a power of two of at least 64, or a multiple of
// 1024). Unchanged off the pure-Go backend.
func (v invariance) keyCount(k, length int) int {
	if !v.on {
		return k
	}
	if k <= v.panel {
		return min(roundUp(k, 32), length)
	}
	return min(roundUp(k, v.panel), length)
}

// valueWidth is the width the value cache holds each head's hd values in
// (the columns of the attention's value product, float32): hd when it is
// a multiple of 16 above 16, else padded to one.
func (v invariance) valueWidth(hd int) int {
	if !v.on || (hd%16 == 0 && hd > 16) {
		return hd
	}
	return max(32, roundUp(hd, 16))
}

// keyWidth is the width the key cache holds each head's hd values in (the
// contraction of the attention scores): hd, or whole panels past one.
func (v invariance) keyWidth(hd int) int {
	if !v.on {
		return hd
	}
	return v.contraction(hd)
}

// padRows pads axis (the rows of a product) of x with zeros to a
// multiple of v.rows.
func (v invariance) padRows(x *Node, axis int) *Node {
	n := x.Shape().Dim(axis)
	if v.rows <= 1 || n%v.rows == 0 {
		return x
	}
	return padAxis(x, axis, roundUp(n, v.rows))
}

// padAxis pads axis of x with zeros at its end to n.
func padAxis(x *Node, axis, n int) *Node {
	if axis < 0 {
		axis += x.Rank()
	}
	extra := n - x.Shape().Dim(axis)
	if extra == 0 {
		return x
	}
	cfg := make([]mlbackends.PadAxis, x.Rank())
	cfg[axis].End = extra
	return Pad(x, ScalarZero(x.Graph(), x.DType()), cfg...)
}

// large reports whether this kernel family runs a [batch×]m×k·k×n
// product with its large kernel.
func (v invariance) large(batch, m, k, n int) bool {
	if v.batchCounts {
		return batch*m*k*n >= smallProduct
	}
	return m*k*n >= smallProduct
}

// usesPanels reports whether rowDot multiplies a [batch×]m×k·k×n product
// by panels (its contraction split, the right operand read as panels):
// when the contraction is longer than one panel and the product is small.
func (v invariance) usesPanels(batch, m, k, n int) bool {
	return k > v.panel && !v.large(batch, m, k, n)
}

// rowDot returns lhs·rhs in float32, for lhs [M,K] and rhs [K,N], or lhs
// [B,M,K] and rhs [B,K,N] (B a batch axis): half-precision operands
// accumulate in float32. Each row's result depends only on that row of
// lhs (and on rhs), whatever M and B, when the caller meets the layout's
// rules: K at most one panel or a whole number of panels, N a width the
// kernels agree on (weightCols; keyCount's or valueWidth's in float32),
// and M a multiple of v.rows. rhs returns the right operand as above,
// panels the same values as [P,panel,N] (or [B,P,panel,N]); only the one
// the product uses is called, so that neither is built (a reshape of a
// buffer the step does not own is a copy) when not needed.
func (v invariance) rowDot(lhs *Node, n int, rhs, panels func() *Node) *Node {
	batched := lhs.Rank() == 3
	b := 1
	if batched {
		b = lhs.Shape().Dim(0)
	}
	m, k := lhs.Shape().Dim(-2), lhs.Shape().Dim(-1)
	if !v.usesPanels(b, m, k, n) {
		if batched {
			return dotF32(lhs, []int{2}, []int{0}, rhs(), []int{1}, []int{0})
		}
		return dotF32(lhs, []int{1}, nil, rhs(), []int{0}, nil)
	}
	if k%v.panel != 0 {
		panic(fmt.Sprintf("rowDot: contraction %d is not a whole number of %d-panels", k, v.panel))
	}
	p := k / v.panel
	if !batched {
		l := TransposeAllAxes(Reshape(lhs, m, p, v.panel), 1, 0, 2) // [P,M,panel]
		return ReduceSum(dotF32(l, []int{2}, []int{0}, panels(), []int{1}, []int{0}), 0)
	}
	l := TransposeAllAxes(Reshape(lhs, b, m, p, v.panel), 0, 2, 1, 3) // [B,P,M,panel]
	return ReduceSum(dotF32(l, []int{3}, []int{0, 1}, panels(), []int{2}, []int{0, 1}), 1)
}

// dotF32 is DotGeneral with a float32 result: half-precision operands
// accumulate in float32.
func dotF32(lhs *Node, lc, lb []int, rhs *Node, rc, rb []int) *Node {
	if lhs.DType() == dtypes.Float32 {
		return DotGeneral(lhs, lc, lb, rhs, rc, rb)
	}
	return Dot(lhs, rhs).WithAccumulatorDType(dtypes.Float32).WithOutputDType(dtypes.Float32).General(lc, lb, rc, rb)
}
