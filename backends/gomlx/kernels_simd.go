//go:build amd64 && goexperiment.simd

package gomlx

import (
	"os"
	"runtime"
	"simd/archsimd"
)

// simdBuilt reports whether this binary holds gomlx/compute's SIMD matrix
// kernels (amd64 built with GOEXPERIMENT=simd).
const simdBuilt = true

// detectFeatures reads what picks this machine's kernels: the CPU's
// AVX-512 and AVX2 (archsimd.X86, as gomlx/compute's dot/matmul init reads
// them) and the environment variables that turn its SIMD kernels off.
func detectFeatures() cpuFeatures {
	return cpuFeatures{
		Arch: runtime.GOARCH, SIMD: true,
		AVX512: archsimd.X86.AVX512(), AVX2: archsimd.X86.AVX2(),
		NoAVX512: envFalse(os.Getenv("GOMLX_SIMD_AVX512")),
		NoAVX2:   envFalse(os.Getenv("GOMLX_SIMD_AVX2")),
		NoMatMul: envFalse(os.Getenv("GOMLX_DOT_MATMUL")),
	}
}
