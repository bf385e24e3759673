package gomlx

import (
	"math/rand/v2"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL reads best unqualified
	"github.com/gomlx/gomlx/core/tensors"
)

// TestRopeExact checks that rope (halves exchanged by a permutation
// product) gives bit for bit what the textbook rotate-half formula gives
// with the halves sliced out, for several head sizes.
func TestRopeExact(t *testing.T) {
	be, err := newDevice("cpu")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ rows, chunk, heads, hd int }{{1, 1, 4, 64}, {2, 7, 3, 32}, {1, 33, 2, 128}, {3, 5, 1, 8}} {
		g := NewGraph(be, "rope")
		x := Parameter(g, "x", shapes.Make(dtypes.Float32, tc.rows, tc.chunk, tc.heads, tc.hd))
		freqs := Parameter(g, "freqs", shapes.Make(dtypes.Float32, tc.rows, tc.chunk, tc.hd/2))
		got := rope(x, newRopeTables(freqs, tc.hd))
		cos, sin := ExpandAxes(Cos(freqs), 2), ExpandAxes(Sin(freqs), 2)
		half := tc.hd / 2
		x1 := Slice(x, AxisRange(), AxisRange(), AxisRange(), AxisRange(0, half))
		x2 := Slice(x, AxisRange(), AxisRange(), AxisRange(), AxisRange(half, tc.hd))
		want := Concatenate([]*Node{Sub(Mul(x1, cos), Mul(x2, sin)), Add(Mul(x2, cos), Mul(x1, sin))}, -1)
		g.Compile(got, want)
		xs := make([]float32, tc.rows*tc.chunk*tc.heads*tc.hd)
		for i := range xs {
			xs[i] = float32(rng.NormFloat64() * 3)
		}
		fs := make([]float32, tc.rows*tc.chunk*tc.hd/2)
		for i := range fs {
			fs[i] = float32(rng.Float64() * 5000)
		}
		out := g.Run(tensors.FromFlatDataAndDimensions(xs, tc.rows, tc.chunk, tc.heads, tc.hd),
			tensors.FromFlatDataAndDimensions(fs, tc.rows, tc.chunk, tc.hd/2))
		a, b := tensors.MustCopyFlatData[float32](out[0]), tensors.MustCopyFlatData[float32](out[1])
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%+v: element %d: %v, want %v", tc, i, a[i], b[i])
			}
		}
		g.Finalize()
	}
}
