//go:build !amd64 || !goexperiment.simd

package gomlx

// simdStepKernels returns nil: without GOEXPERIMENT=simd (or off amd64)
// attention runs the portable kernels.
func simdStepKernels(string) *stepKernels { return nil }
