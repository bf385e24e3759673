package gomlx

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/dtypes/float16"
)

func TestHalfDType(t *testing.T) {
	mat := func(dt string) TensorInfo { return TensorInfo{DType: dt, Shape: []int{4, 4}} }
	vec := func(dt string) TensorInfo { return TensorInfo{DType: dt, Shape: []int{4}} }
	for _, tc := range []struct {
		name    string
		tensors map[string]TensorInfo
		want    dtypes.DType
	}{
		{"f32", map[string]TensorInfo{"a": mat("F32"), "n": vec("F32")}, dtypes.InvalidDType},
		{"f16", map[string]TensorInfo{"a": mat("F16"), "b": mat("F16"), "n": vec("F32")}, dtypes.Float16},
		{"bf16", map[string]TensorInfo{"a": mat("BF16"), "n": vec("BF16")}, dtypes.BFloat16},
		{"mixed", map[string]TensorInfo{"a": mat("BF16"), "b": mat("F32")}, dtypes.InvalidDType},
		{"f16 and bf16", map[string]TensorInfo{"a": mat("BF16"), "b": mat("F16")}, dtypes.InvalidDType},
	} {
		if got := halfDType(&WeightIndex{Tensors: tc.tensors}); got != tc.want {
			t.Errorf("%s: halfDType = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestResolveProducts: each --dtype mode gives its products' dtype on each
// device; auto keeps the checkpoint's (a float16 file widened to float32 on
// the pure-Go backend, saying so), float16 on the pure-Go backend says it is
// slow.
func TestResolveProducts(t *testing.T) {
	for _, tc := range []struct {
		mode   DType
		file   dtypes.DType
		device string
		want   dtypes.DType
		note   bool
	}{
		{DTypeAuto, dtypes.InvalidDType, "", dtypes.InvalidDType, false},
		{"", dtypes.BFloat16, "", dtypes.BFloat16, false},
		{DTypeAuto, dtypes.BFloat16, "cuda", dtypes.BFloat16, false},
		{DTypeAuto, dtypes.Float16, "cpu", dtypes.InvalidDType, true},
		{DTypeAuto, dtypes.Float16, "", dtypes.InvalidDType, true},
		{DTypeAuto, dtypes.Float16, "xla", dtypes.Float16, false},
		{DTypeAuto, dtypes.Float16, "CUDA", dtypes.Float16, false},
		{DTypeFloat32, dtypes.BFloat16, "", dtypes.InvalidDType, false},
		{DTypeFloat32, dtypes.Float16, "cuda", dtypes.InvalidDType, false},
		{DTypeBFloat16, dtypes.InvalidDType, "", dtypes.BFloat16, false},
		{DTypeBFloat16, dtypes.Float16, "xla", dtypes.BFloat16, false},
		{DTypeFloat16, dtypes.InvalidDType, "", dtypes.Float16, true},
		{DTypeFloat16, dtypes.BFloat16, "cuda", dtypes.Float16, false},
	} {
		got, note := resolveProducts(tc.mode, tc.file, tc.device)
		if got != tc.want || (note != "") != tc.note {
			t.Errorf("resolveProducts(%q, %v, %q) = %v, %q; want %v, note %v", tc.mode, tc.file, tc.device, got, note, tc.want, tc.note)
		}
	}
}

// TestHalfWeights checks that a model held in F16 or BF16 (its matrices
// exactly representable, as when read from such a file) gives the logits
// of the same weights held in float32, within the rounding of activations
// to the weights' dtype before each matrix product.
func TestHalfWeights(t *testing.T) {
	cfg := Config{
		ModelType: "llama", VocabSize: 256, HiddenSize: 64, IntermediateSize: 176,
		NumLayers: 2, NumHeads: 4, NumKVHeads: 2, HeadDim: 16, MaxPositionEmbeddings: 256,
		RMSNormEps: 1e-5, RopeTheta: 10000, Rope: RopeScaling{Type: "default"}, SlidingWindow: make([]int, 2),
		HiddenAct: "silu", BOSTokenID: -1,
	}
	prompt := []int{3, 14, 15, 92, 65, 35, 89, 79, 32, 38, 46, 26, 43, 38, 32, 79, 50, 28, 84, 19}
	for _, tc := range []struct {
		dt    dtypes.DType
		mode  DType
		round func(float32) float32
		tol   float64
	}{
		{dtypes.Float16, DTypeFloat16, func(x float32) float32 { return float16.FromFloat32(x).Float32() }, 5e-3},
		{dtypes.BFloat16, DTypeAuto, func(x float32) float32 { return bfloat16.FromFloat32(x).Float32() }, 3e-2},
	} {
		t.Run(tc.dt.String(), func(t *testing.T) {
			host := randomWeights(cfg, 5)
			for i, s := range weightSpecs(cfg, layout{}) {
				if s.matrix {
					for j, x := range host[i] {
						host[i][j] = tc.round(x)
					}
				}
			}
			copyHost := make([][]float32, len(host))
			for i := range host {
				copyHost[i] = slices.Clone(host[i])
			}
			m32, err := newModel(cfg, layout{}, copyHost, nil, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer m32.Close()
			mh, err := newModel(cfg, layout{half: tc.dt}, host, nil, Options{DType: tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			defer mh.Close()
			if got := mh.weights[0].DType(); got != tc.dt {
				t.Fatalf("embedding held as %v, want %v", got, tc.dt)
			}
			want, err := m32.Logits(context.Background(), prompt)
			if err != nil {
				t.Fatal(err)
			}
			got, err := mh.Logits(context.Background(), prompt)
			if err != nil {
				t.Fatal(err)
			}
			var d, w float64
			for i := range want {
				d = math.Max(d, math.Abs(float64(got[i]-want[i])))
				w = math.Max(w, math.Abs(float64(want[i])))
			}
			t.Logf("max rel err %.3g", d/w)
			if d/w >= tc.tol {
				t.Errorf("logits of %v weights: rel err %.3g ≥ %g", tc.dt, d/w, tc.tol)
			}
		})
	}
}
