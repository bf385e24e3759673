package gomlx

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/dtypes/float16"
	"github.com/gomlx/compute/shapes"
	. "github.com/gomlx/gomlx/core/graph" //nolint:revive // graph DSL reads best unqualified
	"github.com/gomlx/gomlx/core/tensors"
)

// normals draws n values 0.5·N(0,1).
func normals(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(0.5 * rng.NormFloat64())
	}
	return x
}

// halfTensor holds x in dtype dt (float32, bfloat16 or float16) with dims.
func halfTensor(x []float32, dt dtypes.DType, dims ...int) *tensors.Tensor {
	switch dt {
	case dtypes.BFloat16:
		return tensors.FromFlatDataAndDimensions(bfloat16.FromFloat32s(x...), dims...)
	case dtypes.Float16:
		return tensors.FromFlatDataAndDimensions(float16.FromFloat32s(x...), dims...)
	}
	return tensors.FromFlatDataAndDimensions(x, dims...)
}

// runGraph builds, runs and frees a one-output graph over the inputs.
func runGraph(t *testing.T, build func(g *Graph) *Node, inputs ...*tensors.Tensor) []float32 {
	t.Helper()
	backend, err := newDevice("")
	if err != nil {
		t.Fatal(err)
	}
	defer backend.Finalize()
	g := NewGraph(backend, "rowdot")
	defer g.Finalize()
	g.Compile(build(g))
	args := make([]any, len(inputs))
	for i, x := range inputs {
		args[i] = x
	}
	out := g.Run(args...)
	flat, err := tensors.CopyFlatData[float32](out[0])
	if err != nil {
		t.Fatal(err)
	}
	return flat
}

// sameRows reports the first row of got ([rows, n]) whose bits differ from
// want's same row, or -1.
func sameRows(got, want []float32, rows, n int) int {
	for r := range rows {
		for j := range n {
			if math.Float32bits(got[r*n+j]) != math.Float32bits(want[r*n+j]) {
				return r
			}
		}
	}
	return -1
}

// TestRowDotInvariant: on the pure-Go backend, each row of a weight
// product (linear, with the weight held as the model holds it) and of an
// attention-shaped batched product (rowDot on [B,M,K]·[B,K,N]) is bit for
// bit the same whatever the number of rows and batch entries, in float32,
// bfloat16 and float16: the rows of a product are the tokens of every
// sample in a call, and the kernel gomlx/compute picks changes with their
// count (see invariance). The shapes cover the fixtures' and common
// models' (contractions within one panel, padded to one, split into many;
// widths the kernels agree on and padded ones; matrices that are large
// for any row count, whose large kernel must not depend on the rows
// either). It runs on this machine's kernel family;
// TestRowDotInvariantFamilies runs it on the others.
func TestRowDotInvariant(t *testing.T) {
	inv := newInvariance("")
	rng := rand.New(rand.NewPCG(3, 4))
	rowCounts := []int{1, 2, 3, 4, 5, 7, 8, 9, 33, 64}
	for _, dt := range []dtypes.DType{dtypes.Float32, dtypes.BFloat16, dtypes.Float16} {
		half := dt
		if dt == dtypes.Float32 {
			half = dtypes.InvalidDType
		}
		lay := layout{half: half, inv: inv}
		for _, kn := range [][2]int{{64, 64}, {64, 32}, {64, 16}, {16, 176}, {176, 64}, {192, 64}, {64, 800},
			{1024, 256}, {1024, 1024}, {2048, 512}, {2048, 2048}} {
			k, n := kn[0], kn[1]
			t.Run(fmt.Sprintf("%s/linear/%dx%d", dt, k, n), func(t *testing.T) {
				w := normals(rng, n*k) // [out, in], as in the file
				spec := weightSpec{dims: []int{n, k}, matrix: true, inOut: true}
				dims := spec.graphDims(lay)
				held := padMatrix(transpose(w, n, k), k, n, dims[0], dims[1])
				spec.panels = true
				pdims := spec.graphDims(lay)
				maxRows := rowCounts[len(rowCounts)-1]
				if !inv.smallMatrix(k, n) {
					maxRows = 9 // large whatever the rows
				} else if r := smallProduct/(dims[0]*dims[1]) + 2; r > maxRows && r < 4096 {
					maxRows = r // past the small kernel's threshold
				}
				x := normals(rng, maxRows*k)
				product := func(m int) []float32 {
					inputs := []*tensors.Tensor{tensors.FromFlatDataAndDimensions(x[:m*k], m, k), halfTensor(held, dt, dims...)}
					if inv.splits(k, n) {
						inputs = append(inputs, halfTensor(held, dt, pdims...))
					}
					return runGraph(t, func(g *Graph) *Node {
						xp := Parameter(g, "x", shapes.Make(dtypes.Float32, m, k))
						w := matrix{flat: Parameter(g, "w", shapes.Make(dt, dims...))}
						if inv.splits(k, n) {
							w.panels = Parameter(g, "wp", shapes.Make(dt, pdims...))
						}
						return linear(lay, xp, w, nil, true, n)
					}, inputs...)
				}
				want := product(maxRows)
				for _, m := range append(rowCounts, maxRows-1) {
					if m > maxRows {
						continue
					}
					if r := sameRows(product(m), want, m, n); r >= 0 {
						t.Errorf("row %d of %d differs from the same row of %d", r, m, maxRows)
					}
				}
			})
		}
	}
	for _, kn := range [][2]int{{32, 32}, {96, 64}, {128, 128}, {64, 48}, {384, 64}, {1024, 32}, {2048, 128}} {
		k, n := kn[0], kn[1]
		k = inv.keyCount(k, 1<<20)
		t.Run(fmt.Sprintf("attention/%dx%d", k, n), func(t *testing.T) {
			const maxB, maxRows = 8, 18
			lhs, rhs := normals(rng, maxB*maxRows*k), normals(rng, maxB*k*n)
			product := func(b, m int) []float32 {
				l := make([]float32, 0, b*m*k)
				for i := range b {
					l = append(l, lhs[i*maxRows*k:i*maxRows*k+m*k]...)
				}
				return runGraph(t, func(g *Graph) *Node {
					lp := Parameter(g, "l", shapes.Make(dtypes.Float32, b, m, k))
					rp := Parameter(g, "r", shapes.Make(dtypes.Float32, b, k, n))
					y := inv.rowDot(inv.padRows(lp, 1), n, func() *Node { return rp },
						func() *Node { return Reshape(rp, b, k/inv.panel, inv.panel, n) })
					return Slice(y, AxisRange(0, 1), AxisRange(0, 1)) // entry 0, row 0
				}, tensors.FromFlatDataAndDimensions(l, b, m, k), tensors.FromFlatDataAndDimensions(rhs[:b*k*n], b, k, n))
			}
			want := product(1, 1)
			for _, b := range []int{1, 2, 8} {
				for _, m := range []int{1, 2, 4, 9, 18} {
					if sameRows(product(b, m), want, 1, n) >= 0 {
						t.Errorf("row 0 of entry 0 differs with %d entries of %d rows from 1 entry of 1 row", b, m)
					}
				}
			}
		})
	}
}

// TestRowDotInvariantFamilies runs TestRowDotInvariant on the kernel
// families other than this machine's (gomlx/compute reads
// GOMLX_SIMD_AVX512 and GOMLX_SIMD_AVX2 when it starts: each runs in its
// own test process).
func TestRowDotInvariantFamilies(t *testing.T) {
	if os.Getenv("TALLY_ROWDOT_FAMILY") != "" {
		t.Skip("in a family's own process")
	}
	for _, env := range [][]string{
		{"GOMLX_SIMD_AVX512=false"},
		{"GOMLX_SIMD_AVX512=false", "GOMLX_SIMD_AVX2=false"},
	} {
		t.Run(strings.Join(env, ","), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestRowDotInvariant$", "-test.v")
			cmd.Env = append(append(os.Environ(), env...), "TALLY_ROWDOT_FAMILY=1")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v under %s:\n%s", err, strings.Join(env, " "), out)
			}
			if !strings.Contains(string(out), "--- PASS: TestRowDotInvariant ") {
				t.Fatalf("TestRowDotInvariant did not run under %s:\n%s", strings.Join(env, " "), out)
			}
		})
	}
}
