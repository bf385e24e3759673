package gomlx

import (
	"fmt"
	"strconv"
	"strings"

	mlbackends "github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
)

// NumericsVersion is the version of the native engine's arithmetic. Every
// change that alters logits (an op computed differently, another order of
// summation, another rounding, a gomlx/compute upgrade whose kernels round
// differently) bumps it: it is part of every native fingerprint, so
// generations stored under the old arithmetic are never reused as if the
// new engine had made them. TestNumericsGolden pins a checksum of each
// fixture model's logits in each --dtype mode and fails, saying to bump
// this constant, when they change under the same version.
//
// Version 1 is the first fingerprint that names the arithmetic; older
// fingerprints ("gomlx:float32:sha256:…") have none. Version 2 makes the
// pure-Go backend's products batch-invariant (see invariance): small
// weight matrices are multiplied in whole panels of their contraction and
// the attention reads caches laid out for it, which changes the last bits
// of the logits (XLA computes as in version 1). Version 3 computes the
// pure-Go backend's attention and MLP activation with tally's own float32
// kernels between graph calls (the split step: split.go, attend.go):
// another order of summation in attention, exp and silu in float32. XLA
// computes as in versions 1 and 2, and its fingerprints keep saying 2
// (xlaNumerics), so that no GPU generation is made again for a change
// that did not touch it.
const NumericsVersion = 3

// xlaNumerics is the numerics version XLA's fingerprints name: the last
// version that changed what XLA computes (2 named it first; XLA has
// computed the same since 1).
const xlaNumerics = 2

// numericsVersion is the numerics version of a model on device (see
// newDevice): xlaNumerics on XLA, NumericsVersion on the pure-Go backend.
func numericsVersion(device string) int {
	if isXLA(device) {
		return xlaNumerics
	}
	return NumericsVersion
}

// DType is the arithmetic of a native model's matrix products, as --dtype
// names it (lm-evaluation-harness's dtype, vLLM's --dtype).
type DType string

// The --dtype modes.
const (
	// DTypeAuto computes the products in the checkpoint's dtype where
	// that is at least as fast as float32 on this device's kernels: a file
	// whose matrices are all bfloat16 multiplies bfloat16 matrices by
	// activations rounded to bfloat16 on XLA and on the AVX-512 kernels,
	// float16 files the same on XLA; elsewhere such files are widened
	// exactly to float32 (see resolveProducts). Any other file, GGUF block
	// formats included, computes in float32.
	DTypeAuto DType = "auto"
	// DTypeFloat32 computes every product in float32 from the stored
	// values, widened exactly: the reference-parity mode.
	DTypeFloat32 DType = "float32"
	// DTypeBFloat16 holds the matrices in bfloat16 (rounded to nearest
	// even when the file holds more) and rounds activations to bfloat16
	// before each product, whatever the file holds.
	DTypeBFloat16 DType = "bfloat16"
	// DTypeFloat16 is DTypeBFloat16 with float16.
	DTypeFloat16 DType = "float16"
)

// DTypes lists the --dtype modes.
func DTypes() []DType { return []DType{DTypeAuto, DTypeFloat32, DTypeBFloat16, DTypeFloat16} }

// ParseDType reads a --dtype value: auto (or empty), float32 (float,
// fp32), bfloat16 (bf16) or float16 (half, fp16), in any case, as
// lm-evaluation-harness and vLLM spell them.
func ParseDType(s string) (DType, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return DTypeAuto, nil
	case "float32", "float", "fp32", "f32":
		return DTypeFloat32, nil
	case "bfloat16", "bf16":
		return DTypeBFloat16, nil
	case "float16", "half", "fp16", "f16":
		return DTypeFloat16, nil
	}
	return "", fmt.Errorf("dtype %q: want auto, float32, bfloat16 or float16", s)
}

// Arithmetic is what a native model computes in: the part of its
// fingerprint that says how its tokens were made.
type Arithmetic struct {
	// Products is the dtype of the weight matrix products: "float32",
	// "bfloat16" or "float16" (accumulation, attention, norms, residuals
	// and the KV cache are float32 in every mode).
	Products string
	// Device is the kind of device and kernels that computed them:
	// "cpu-avx512", "cpu-avx2" or "cpu-go-ARCH" (portable Go kernels) on
	// the pure-Go backend, "xla-PLUGIN" (e.g. "xla-cuda"; "xla-cuda-tf32"
	// when float32 products run in TF32, see xlaBackendConfig) on XLA. The
	// kernels sum in different orders, so their logits differ in the last
	// bits and a near tie can take another greedy token.
	Device string
	// Numerics is the engine's numerics version on the device that
	// computed them (numericsVersion; 0: an older tally's fingerprint,
	// which named no version).
	Numerics int
}

// String is the arithmetic as the fingerprint writes it:
// "PRODUCTS:DEVICE:numerics-N".
func (a Arithmetic) String() string {
	return fmt.Sprintf("%s:%s:numerics-%d", a.Products, a.Device, a.Numerics)
}

// productsName names the dtype matrices are held in (InvalidDType: float32).
func productsName(half dtypes.DType) string {
	switch half {
	case dtypes.BFloat16:
		return string(DTypeBFloat16)
	case dtypes.Float16:
		return string(DTypeFloat16)
	}
	return string(DTypeFloat32)
}

// resolveProducts decides the dtype the matrices are held and multiplied
// in (InvalidDType: float32) for mode, a file whose matrices are all in
// file (layout.half from halfDType; InvalidDType for float32, mixed or
// block-quantized files), on the kernels of family ("xla", or the pure-Go
// backend's kernel family: cpuFeatures.family); note, when not empty, is
// the line to tell the user about it.
//
// auto computes in the file's half dtype only where fastProducts says
// that dtype's products are at least as fast as float32 on family; else
// it widens the file exactly to float32 (the products of --dtype
// float32, under the same fingerprint) and says so. --dtype bfloat16 and
// float16 compute in their dtype anyway, saying when it is the slow way.
func resolveProducts(mode DType, file dtypes.DType, family string) (dtypes.DType, string) {
	switch mode {
	case DTypeFloat32:
		return dtypes.InvalidDType, ""
	case DTypeBFloat16, DTypeFloat16:
		half := dtypes.BFloat16
		if mode == DTypeFloat16 {
			half = dtypes.Float16
		}
		if !fastProducts(half, family) {
			return half, slowProducts(half, family)
		}
		return half, ""
	}
	if file == dtypes.InvalidDType || fastProducts(file, family) {
		return file, ""
	}
	return dtypes.InvalidDType, fmt.Sprintf("the %s checkpoint's products run in float32, exactly widened: %s; --dtype %s runs them anyway",
		productsName(file), slowProducts(file, family), productsName(file))
}

// fastProducts reports whether products in half (bfloat16 or float16) run
// at least as fast as float32 on the kernels of family (see
// resolveProducts). gomlx/compute v0.1.3 has no CPU kernel that
// multiplies half-precision values natively: its bfloat16 and float16
// kernels widen each value to float32 inside the product. Measured with
// BenchmarkProductsDType, speed over float32's (docs/numerics.md):
//
//   - XLA: both (the GPU multiplies half dtypes natively);
//   - AVX-512: bfloat16, whose widening is two vector instructions per 32
//     values: decode 1.35-1.56× (half the weight bytes read per token),
//     prefill about 0.7×; not float16, whose widening is emulated
//     (0.1-0.4×);
//   - AVX2: neither: bfloat16 decode about 1.0-1.15× and prefill
//     0.5-0.7× with AVX2 imitated on an AVX-512 CPU, and far slower on an
//     AVX2-only EPYC (issue 36: 875 s against 23 s for float32 on
//     cmd/tally's TestRerunEqualsFullRun); float16 0.04-0.07×;
//   - the portable Go kernels: neither (scalar widening: 0.25-0.67× in
//     most parts).
func fastProducts(half dtypes.DType, family string) bool {
	switch family {
	case "xla":
		return true
	case familyAVX512:
		return half == dtypes.BFloat16
	}
	return false
}

// slowProducts says that half's products are slower than float32's on
// family, for the user.
func slowProducts(half dtypes.DType, family string) string {
	return fmt.Sprintf("%s products are slower than float32 on the %s kernels", productsName(half), familyName(family))
}

// productsFamily is the kernel family resolveProducts decides by for
// Options.Device: "xla", or this machine's pure-Go kernel family.
func productsFamily(device string) string {
	if isXLA(device) {
		return "xla"
	}
	return kernelFamily()
}

// isXLA reports whether Options.Device names the XLA backend.
func isXLA(device string) bool {
	d := strings.ToLower(device)
	return d == "xla" || d == "cuda"
}

// deviceKind names the device and kernels of backend for the fingerprint
// (see Arithmetic.Device).
func deviceKind(backend mlbackends.Backend, device string) string {
	if !isXLA(device) {
		return "cpu-" + kernelFamily()
	}
	kind := "xla"
	if p, ok := backend.(interface{ PluginName() string }); ok && p.PluginName() != "" {
		kind += "-" + pluginKind(p.PluginName())
	}
	if xlaTF32(backend) {
		kind += "-tf32"
	}
	return kind
}

// ParseFingerprint splits a native fingerprint into its arithmetic and the
// model's identity (the digest of its files, after the demo version for
// the demo model). An older tally's fingerprint ("gomlx:float32:IDENTITY")
// gives its products' dtype with no device and numerics version 0. ok is
// false for other backends' fingerprints.
func ParseFingerprint(fp string) (a Arithmetic, identity string, ok bool) {
	parts := strings.Split(fp, ":")
	if len(parts) < 3 || parts[0] != "gomlx" {
		return Arithmetic{}, "", false
	}
	if len(parts) >= 5 {
		if v, found := strings.CutPrefix(parts[3], "numerics-"); found {
			n, err := strconv.Atoi(v)
			if err == nil && n > 0 {
				return Arithmetic{Products: parts[1], Device: parts[2], Numerics: n}, strings.Join(parts[4:], ":"), true
			}
		}
	}
	return Arithmetic{Products: parts[1]}, strings.Join(parts[2:], ":"), true
}

// OtherArithmetic implements backends.Variants for native fingerprints:
// when stored names the same model as current (the same files) computed
// under another arithmetic, it says how that arithmetic differs, e.g.
// "products in bfloat16, not float32".
func (m *Model) OtherArithmetic(current, stored string) (string, bool) {
	return otherArithmetic(current, stored)
}

// otherArithmetic is Model.OtherArithmetic.
func otherArithmetic(current, stored string) (string, bool) {
	cur, curID, ok1 := ParseFingerprint(current)
	old, oldID, ok2 := ParseFingerprint(stored)
	if !ok1 || !ok2 || curID != oldID || current == stored {
		return "", false
	}
	if old.Numerics == 0 {
		return fmt.Sprintf("made by an older tally whose fingerprint named no numerics version (products %s); this engine computes %s", old.Products, cur), true
	}
	var diffs []string
	if old.Products != cur.Products {
		diffs = append(diffs, fmt.Sprintf("products in %s, not %s", old.Products, cur.Products))
	}
	if old.Device != cur.Device {
		diffs = append(diffs, fmt.Sprintf("computed on %s, not %s", old.Device, cur.Device))
	}
	if old.Numerics != cur.Numerics {
		diffs = append(diffs, fmt.Sprintf("engine numerics version %d, not %d", old.Numerics, cur.Numerics))
	}
	if len(diffs) == 0 {
		return "", false
	}
	return strings.Join(diffs, ", "), true
}

// announcement is the line Options.Log gets at the first Generate: the
// engine and its kernels, the products' dtype, and why when the device
// changes what was asked for, e.g. "native: gomlx pure Go, AVX-512,
// products in bfloat16".
func (m *Model) announcement() string {
	line := fmt.Sprintf("native: %s, products in %s", m.Kernels(), m.arith.Products)
	if m.arithNote != "" {
		line += " (" + m.arithNote + ")"
	}
	return line
}
