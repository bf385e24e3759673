//go:build !amd64 || !goexperiment.simd

package gomlx

import "runtime"

// simdBuilt reports whether this binary holds gomlx/compute's SIMD matrix
// kernels (amd64 built with GOEXPERIMENT=simd).
const simdBuilt = false

// cpuKernels names the matrix-multiply kernels of this build: without
// GOEXPERIMENT=simd (or off amd64) gomlx/compute has only its portable Go
// kernels.
func cpuKernels() string {
	if runtime.GOARCH != "amd64" {
		return "portable Go kernels (no SIMD kernels for " + runtime.GOARCH + ")"
	}
	return "portable Go kernels (built without GOEXPERIMENT=simd: no AVX2/AVX-512)"
}

// kernelFamily names the kernels for the fingerprint (see
// Arithmetic.Device): the portable Go kernels of this architecture ("go-"
// and GOARCH: the compiler fuses multiply-adds on some architectures and
// not on others, so their results differ).
func kernelFamily() string { return "go-" + runtime.GOARCH }
