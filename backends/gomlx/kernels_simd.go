//go:build amd64 && goexperiment.simd

package gomlx

import (
	"os"
	"simd/archsimd"
	"strings"
)

// simdBuilt reports whether this binary holds gomlx/compute's SIMD matrix
// kernels (amd64 built with GOEXPERIMENT=simd).
const simdBuilt = true

// cpuKernels names the matrix-multiply kernels gomlx/compute v0.1.3 selects
// on this CPU, by the rules of its internal/gobackend/dot/matmul init: the
// AVX-512 kernels when archsimd.X86.AVX512() and $GOMLX_SIMD_AVX512 is not
// false, else AVX2 when archsimd.X86.AVX2() and $GOMLX_SIMD_AVX2 is not
// false, else the portable Go kernels; $GOMLX_DOT_MATMUL=false turns all
// SIMD kernels off.
func cpuKernels() string {
	if envFalse("GOMLX_DOT_MATMUL") {
		return "portable Go kernels (SIMD off: GOMLX_DOT_MATMUL)"
	}
	switch {
	case archsimd.X86.AVX512() && !envFalse("GOMLX_SIMD_AVX512"):
		return "AVX-512"
	case archsimd.X86.AVX2() && !envFalse("GOMLX_SIMD_AVX2"):
		return "AVX2"
	case archsimd.X86.AVX512() || archsimd.X86.AVX2():
		return "portable Go kernels (SIMD off: GOMLX_SIMD_AVX512/GOMLX_SIMD_AVX2)"
	}
	return "portable Go kernels (this CPU has neither AVX2 nor AVX-512)"
}

// kernelFamily names the kernels cpuKernels describes for the
// fingerprint (see Arithmetic.Device): "avx512", "avx2", or "go-amd64" for
// the portable Go kernels.
func kernelFamily() string {
	if envFalse("GOMLX_DOT_MATMUL") {
		return "go-amd64"
	}
	switch {
	case archsimd.X86.AVX512() && !envFalse("GOMLX_SIMD_AVX512"):
		return "avx512"
	case archsimd.X86.AVX2() && !envFalse("GOMLX_SIMD_AVX2"):
		return "avx2"
	}
	return "go-amd64"
}

// envFalse reports whether the environment variable name holds one of
// gomlx/compute's false values (its support/envutil.FalseValues).
func envFalse(name string) bool {
	switch strings.ToLower(os.Getenv(name)) {
	case "0", "false", "f", "no", "off", "disabled":
		return true
	}
	return false
}
