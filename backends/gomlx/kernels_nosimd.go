//go:build !amd64 || !goexperiment.simd

package gomlx

import "runtime"

// simdBuilt reports whether this binary holds gomlx/compute's SIMD matrix
// kernels (amd64 built with GOEXPERIMENT=simd).
const simdBuilt = false

// detectFeatures reads what picks this machine's kernels: without
// GOEXPERIMENT=simd (or off amd64) gomlx/compute has only its portable Go
// kernels, whatever the CPU has.
func detectFeatures() cpuFeatures {
	return cpuFeatures{Arch: runtime.GOARCH}
}
