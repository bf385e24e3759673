package gomlx

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/dtypes/float16"
)

// TestHoldOnCores: the weight conversions that run on every core give
// what the one-core loops give, for shapes that split unevenly.
func TestHoldOnCores(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, sh := range []struct{ rows, cols int }{{1, 1}, {3, 5}, {33, 65}, {515, 1029}, {2048, 96}} {
		x := make([]float32, sh.rows*sh.cols)
		for i := range x {
			x[i] = r.Float32()*2 - 1
		}
		want := make([]float32, len(x))
		for i := range sh.rows {
			for j := range sh.cols {
				want[j*sh.rows+i] = x[i*sh.cols+j]
			}
		}
		if got := transpose(x, sh.rows, sh.cols); !slices.Equal(got, want) {
			t.Errorf("transpose %dx%d differs", sh.rows, sh.cols)
		}
		if !slices.Equal(toHalf(x, bfloat16.FromFloat32), bfloat16.FromFloat32s(x...)) {
			t.Errorf("bfloat16 %dx%d differs", sh.rows, sh.cols)
		}
		if !slices.Equal(toHalf(x, float16.FromFloat32), float16.FromFloat32s(x...)) {
			t.Errorf("float16 %dx%d differs", sh.rows, sh.cols)
		}
	}
}

// BenchmarkHoldWeight: transposing and rounding to bf16 one
// Llama-3.1-8B MLP matrix (4096×14336), the loader's work per matrix.
func BenchmarkHoldWeight(b *testing.B) {
	const rows, cols = 4096, 14336
	x := make([]float32, rows*cols)
	for i := range x {
		x[i] = float32(i%977) / 977
	}
	b.SetBytes(int64(len(x) * 4))
	for b.Loop() {
		toHalf(transpose(x, rows, cols), bfloat16.FromFloat32)
	}
}
