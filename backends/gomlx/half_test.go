package gomlx

import (
	"context"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/dtypes/float16"

	"tally/backends"
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

// TestKernelFamily: the kernel family, and its description, are a pure
// function of the binary's and the CPU's features and the environment
// variables that turn kernels off (gomlx/compute v0.1.3's rules), so
// every kind of machine is checked on any one.
func TestKernelFamily(t *testing.T) {
	for _, tc := range []struct {
		name    string
		f       cpuFeatures
		family  string
		kernels string
	}{
		{"AVX-512 CPU", cpuFeatures{Arch: "amd64", SIMD: true, AVX512: true, AVX2: true}, "avx512", "AVX-512"},
		{"AVX2-only CPU", cpuFeatures{Arch: "amd64", SIMD: true, AVX2: true}, "avx2", "AVX2"},
		{"AVX-512 off", cpuFeatures{Arch: "amd64", SIMD: true, AVX512: true, AVX2: true, NoAVX512: true}, "avx2", "AVX2"},
		{"AVX2 off, AVX-512 on", cpuFeatures{Arch: "amd64", SIMD: true, AVX512: true, AVX2: true, NoAVX2: true}, "avx512", "AVX-512"},
		{"both off", cpuFeatures{Arch: "amd64", SIMD: true, AVX512: true, AVX2: true, NoAVX512: true, NoAVX2: true}, "go-amd64", "portable Go kernels (SIMD off: GOMLX_SIMD_AVX512/GOMLX_SIMD_AVX2)"},
		{"matmul off", cpuFeatures{Arch: "amd64", SIMD: true, AVX512: true, AVX2: true, NoMatMul: true}, "go-amd64", "portable Go kernels (SIMD off: GOMLX_DOT_MATMUL)"},
		{"no SIMD CPU", cpuFeatures{Arch: "amd64", SIMD: true}, "go-amd64", "portable Go kernels (this CPU has neither AVX2 nor AVX-512)"},
		{"built without simd", cpuFeatures{Arch: "amd64", AVX512: true, AVX2: true}, "go-amd64", "portable Go kernels (built without GOEXPERIMENT=simd: no AVX2/AVX-512)"},
		{"arm64", cpuFeatures{Arch: "arm64"}, "go-arm64", "portable Go kernels (no SIMD kernels for arm64)"},
	} {
		if got := tc.f.family(); got != tc.family {
			t.Errorf("%s: family %q, want %q", tc.name, got, tc.family)
		}
		if got := tc.f.kernels(); got != tc.kernels {
			t.Errorf("%s: kernels %q, want %q", tc.name, got, tc.kernels)
		}
	}
	if got, want := kernelFamily(), detectFeatures().family(); got != want {
		t.Errorf("kernelFamily() = %q, detectFeatures().family() = %q", got, want)
	}
	for _, v := range []string{"0", "false", "F", "no", "OFF", "disabled"} {
		if !envFalse(v) {
			t.Errorf("envFalse(%q) = false", v)
		}
	}
	for _, v := range []string{"", "1", "true", "on", "maybe"} {
		if envFalse(v) {
			t.Errorf("envFalse(%q) = true", v)
		}
	}
}

// TestResolveProducts: the --dtype rule on each kernel family. auto keeps
// a half-precision checkpoint's dtype only where its products are at least
// as fast as float32 (bfloat16 on AVX-512; both on XLA) and otherwise
// computes in float32, exactly widened, saying why; a forced half mode
// always computes in its dtype, saying when that is the slow way; float32
// is float32 everywhere.
func TestResolveProducts(t *testing.T) {
	const (
		f32  = dtypes.InvalidDType
		bf16 = dtypes.BFloat16
		f16  = dtypes.Float16
	)
	type want struct {
		products dtypes.DType
		note     string // a part of the note; "" for none
	}
	families := []string{"avx512", "avx2", "go-amd64", "go-arm64", "xla"}
	for _, tc := range []struct {
		mode DType
		file dtypes.DType
		want map[string]want // by family
	}{
		{DTypeAuto, f32, map[string]want{"avx512": {f32, ""}, "avx2": {f32, ""}, "go-amd64": {f32, ""}, "go-arm64": {f32, ""}, "xla": {f32, ""}}},
		{DTypeAuto, bf16, map[string]want{
			"avx512":   {bf16, ""},
			"avx2":     {f32, "the bfloat16 checkpoint's products run in float32, exactly widened: bfloat16 products are slower than float32 on the AVX2 kernels; --dtype bfloat16 runs them anyway"},
			"go-amd64": {f32, "bfloat16 products are slower than float32 on the portable Go kernels; --dtype bfloat16"},
			"go-arm64": {f32, "bfloat16 products are slower than float32 on the portable Go kernels; --dtype bfloat16"},
			"xla":      {bf16, ""},
		}},
		{"", bf16, map[string]want{"avx512": {bf16, ""}, "avx2": {f32, "exactly widened"}, "go-amd64": {f32, "exactly widened"}, "go-arm64": {f32, "exactly widened"}, "xla": {bf16, ""}}},
		{DTypeAuto, f16, map[string]want{
			"avx512":   {f32, "the float16 checkpoint's products run in float32, exactly widened: float16 products are slower than float32 on the AVX-512 kernels; --dtype float16 runs them anyway"},
			"avx2":     {f32, "float16 products are slower than float32 on the AVX2 kernels; --dtype float16"},
			"go-amd64": {f32, "float16 products are slower than float32 on the portable Go kernels; --dtype float16"},
			"go-arm64": {f32, "exactly widened"},
			"xla":      {f16, ""},
		}},
		{DTypeFloat32, bf16, map[string]want{"avx512": {f32, ""}, "avx2": {f32, ""}, "go-amd64": {f32, ""}, "go-arm64": {f32, ""}, "xla": {f32, ""}}},
		{DTypeFloat32, f16, map[string]want{"avx512": {f32, ""}, "avx2": {f32, ""}, "go-amd64": {f32, ""}, "go-arm64": {f32, ""}, "xla": {f32, ""}}},
		{DTypeBFloat16, f32, map[string]want{
			"avx512":   {bf16, ""},
			"avx2":     {bf16, "bfloat16 products are slower than float32 on the AVX2 kernels"},
			"go-amd64": {bf16, "bfloat16 products are slower than float32 on the portable Go kernels"},
			"go-arm64": {bf16, "slower than float32"},
			"xla":      {bf16, ""},
		}},
		{DTypeBFloat16, f16, map[string]want{"avx512": {bf16, ""}, "avx2": {bf16, "slower"}, "go-amd64": {bf16, "slower"}, "go-arm64": {bf16, "slower"}, "xla": {bf16, ""}}},
		{DTypeFloat16, f32, map[string]want{
			"avx512":   {f16, "float16 products are slower than float32 on the AVX-512 kernels"},
			"avx2":     {f16, "float16 products are slower than float32 on the AVX2 kernels"},
			"go-amd64": {f16, "float16 products are slower than float32 on the portable Go kernels"},
			"go-arm64": {f16, "slower than float32"},
			"xla":      {f16, ""},
		}},
		{DTypeFloat16, bf16, map[string]want{"avx512": {f16, "slower"}, "avx2": {f16, "slower"}, "go-amd64": {f16, "slower"}, "go-arm64": {f16, "slower"}, "xla": {f16, ""}}},
	} {
		for _, family := range families {
			w, ok := tc.want[family]
			if !ok {
				t.Fatalf("--dtype %q on %v: no case for %s", tc.mode, tc.file, family)
			}
			got, note := resolveProducts(tc.mode, tc.file, family)
			if got != w.products || (note == "") != (w.note == "") || !strings.Contains(note, w.note) {
				t.Errorf("resolveProducts(%q, %v, %q) = %v, %q; want %v, a note with %q", tc.mode, tc.file, family, got, note, w.products, w.note)
			}
		}
	}
	if got := productsFamily("cuda"); got != "xla" {
		t.Errorf("productsFamily(cuda) = %q", got)
	}
	for _, d := range []string{"", "cpu"} {
		if got := productsFamily(d); got != kernelFamily() {
			t.Errorf("productsFamily(%q) = %q, want this machine's %q", d, got, kernelFamily())
		}
	}
}

// halfDemo writes the demo model with every tensor in dtype ("BF16" or
// "F16", each value rounded to nearest even) to a new folder: a
// half-precision checkpoint that needs nothing outside the repository.
func halfDemo(t *testing.T, dtype string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"config.json", "model.safetensors", "tokenizer.json"} {
		data, err := demoFiles.ReadFile("demomodel/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := OpenWeights(dir)
	if err != nil {
		t.Fatal(err)
	}
	ts := map[string]rawTensor{}
	for name, info := range w.Tensors {
		x, err := w.Read(name, info.Shape...)
		if err != nil {
			t.Fatal(err)
		}
		var b []byte
		for _, v := range x {
			h := uint16(bfloat16.FromFloat32(v))
			if dtype == "F16" {
				h = uint16(float16.FromFloat32(v))
			}
			b = binary.LittleEndian.AppendUint16(b, h)
		}
		ts[name] = rawTensor{dtype, info.Shape, b}
	}
	writeSafetensors(t, filepath.Join(dir, "model.safetensors"), ts)
	return dir
}

// TestAutoProducts: on this machine's kernels, auto on a BF16 and on an
// F16 checkpoint computes in what resolveProducts decides for its family
// (so the rule runs where it is decided), says so in the native: line,
// and is the same model as the --dtype it resolved to: the same
// fingerprint (so a store's generations made at one are reused by the
// other) and the same logits, bit for bit.
func TestAutoProducts(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		file string
		half dtypes.DType
		mode DType
	}{
		{"BF16", dtypes.BFloat16, DTypeBFloat16},
		{"F16", dtypes.Float16, DTypeFloat16},
	} {
		t.Run(tc.file, func(t *testing.T) {
			dir := halfDemo(t, tc.file)
			open := func(mode DType, log io.Writer) *Model {
				m, err := Open(ctx, dir, Options{DType: mode, FingerprintCache: "-", Log: log})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { m.Close() })
				return m
			}
			var log strings.Builder
			auto := open(DTypeAuto, &log)
			want, resolved, note := productsName(tc.half), tc.mode, false
			if !fastProducts(tc.half, kernelFamily()) {
				want, resolved, note = "float32", DTypeFloat32, true
			}
			if got := auto.Arithmetic().Products; got != want {
				t.Errorf("auto on a %s checkpoint with %s kernels computes in %s, want %s", tc.file, kernelFamily(), got, want)
			}
			same := open(resolved, nil)
			fpAuto, err := auto.Fingerprint(ctx)
			if err != nil {
				t.Fatal(err)
			}
			fpSame, err := same.Fingerprint(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if fpAuto != fpSame || !strings.HasPrefix(fpAuto, cpuArith(want)+":sha256:") {
				t.Errorf("auto's fingerprint %s, --dtype %s's %s", fpAuto, resolved, fpSame)
			}
			ids := []int{1, 40, 41, 42, 100, 7, 300}
			la, err := auto.Logits(ctx, ids)
			if err != nil {
				t.Fatal(err)
			}
			ls, err := same.Logits(ctx, ids)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(la, ls) {
				t.Errorf("auto's logits differ from --dtype %s's", resolved)
			}
			if err := auto.Generate(ctx, []backends.Request{{PromptIDs: ids, MaxTokens: 1}}, func(backends.Event) bool { return true }); err != nil {
				t.Fatal(err)
			}
			line := "native: " + auto.Kernels() + ", products in " + want
			if note {
				line += " (the " + productsName(tc.half) + " checkpoint's products run in float32, exactly widened: "
			} else {
				line += "\n"
			}
			if !strings.HasPrefix(log.String(), line) {
				t.Errorf("auto logged %q, want it to begin %q", log.String(), line)
			}
		})
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
		{dtypes.BFloat16, DTypeBFloat16, func(x float32) float32 { return bfloat16.FromFloat32(x).Float32() }, 3e-2},
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
