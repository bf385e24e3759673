package gomlx

import "strings"

// The pure-Go backend's kernel families, as the fingerprint names them
// (Arithmetic.Device is "cpu-" and the family).
const (
	familyAVX512 = "avx512"
	familyAVX2   = "avx2"
	// familyGo is the prefix of the portable Go kernels' family, "go-" and
	// GOARCH.
	familyGo = "go-"
)

// cpuFeatures is what decides which matrix kernels gomlx/compute v0.1.3
// runs on the pure-Go backend: what the binary and the CPU have, and the
// environment variables that turn kernels off. detectFeatures reads this
// machine's; everything decided from them (family, kernels, the products
// auto picks) is a pure function of them, so that it can be tested for
// every kind of machine on any one.
type cpuFeatures struct {
	// Arch is runtime.GOARCH.
	Arch string
	// SIMD is true when the binary holds gomlx/compute's SIMD kernels
	// (amd64 built with GOEXPERIMENT=simd).
	SIMD bool
	// AVX512 and AVX2 are the CPU's (archsimd.X86.AVX512(), AVX2()).
	AVX512, AVX2 bool
	// NoAVX512, NoAVX2 and NoMatMul are true when $GOMLX_SIMD_AVX512,
	// $GOMLX_SIMD_AVX2 or $GOMLX_DOT_MATMUL holds a false value: the
	// AVX-512 kernels, the AVX2 kernels or all SIMD kernels are off.
	NoAVX512, NoAVX2, NoMatMul bool
}

// family names the kernels the features select, by the rules of
// gomlx/compute v0.1.3's dot/matmul init: "avx512" when the CPU has
// AVX-512 and $GOMLX_SIMD_AVX512 is not false, else "avx2" when it has
// AVX2 and $GOMLX_SIMD_AVX2 is not false, else the portable Go kernels
// ("go-" and the architecture: the compiler fuses multiply-adds on some
// architectures and not on others, so their results differ);
// $GOMLX_DOT_MATMUL=false, or a binary built without the SIMD kernels,
// gives the portable ones.
func (f cpuFeatures) family() string {
	switch {
	case !f.SIMD || f.NoMatMul:
	case f.AVX512 && !f.NoAVX512:
		return familyAVX512
	case f.AVX2 && !f.NoAVX2:
		return familyAVX2
	}
	return familyGo + f.Arch
}

// kernels describes the kernels of family() for the user, with why when
// the portable ones run on a CPU that has SIMD.
func (f cpuFeatures) kernels() string {
	switch fam := f.family(); {
	case fam == familyAVX512:
		return "AVX-512"
	case fam == familyAVX2:
		return "AVX2"
	case f.Arch != "amd64":
		return "portable Go kernels (no SIMD kernels for " + f.Arch + ")"
	case !f.SIMD:
		return "portable Go kernels (built without GOEXPERIMENT=simd: no AVX2/AVX-512)"
	case f.NoMatMul:
		return "portable Go kernels (SIMD off: GOMLX_DOT_MATMUL)"
	case f.AVX512 || f.AVX2:
		return "portable Go kernels (SIMD off: GOMLX_SIMD_AVX512/GOMLX_SIMD_AVX2)"
	}
	return "portable Go kernels (this CPU has neither AVX2 nor AVX-512)"
}

// kernelFamily names this machine's kernels for the fingerprint (see
// Arithmetic.Device): "avx512", "avx2" or "go-ARCH".
func kernelFamily() string { return detectFeatures().family() }

// cpuKernels describes this machine's kernels, e.g. "AVX-512".
func cpuKernels() string { return detectFeatures().kernels() }

// familyName is how the user is told of a kernel family ("xla" or one of
// cpuFeatures.family's names): "AVX-512", "AVX2", "portable Go", "XLA".
func familyName(family string) string {
	switch {
	case family == familyAVX512:
		return "AVX-512"
	case family == familyAVX2:
		return "AVX2"
	case strings.HasPrefix(family, familyGo):
		return "portable Go"
	}
	return strings.ToUpper(family)
}

// envFalse reports whether an environment variable's value is one of
// gomlx/compute's false values (its support/envutil.FalseValues).
func envFalse(v string) bool {
	switch strings.ToLower(v) {
	case "0", "false", "f", "no", "off", "disabled":
		return true
	}
	return false
}
