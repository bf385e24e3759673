package gomlx

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"tally/backends"
)

func TestKernelsNamed(t *testing.T) {
	var log bytes.Buffer
	m, err := Demo(context.Background(), Options{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if log.Len() != 0 {
		t.Fatalf("open logged %q before any work", log.String())
	}
	reqs := []backends.Request{{Index: 0, PromptIDs: []int{1, 2, 3}, MaxTokens: 2}}
	for range 2 {
		if err := m.Generate(context.Background(), reqs, func(backends.Event) bool { return true }); err != nil {
			t.Fatal(err)
		}
	}
	k := m.Kernels()
	if !strings.HasPrefix(k, "gomlx pure Go, ") {
		t.Fatalf("Kernels() = %q, want the pure-Go backend named", k)
	}
	if want := "native: " + k + ", products in float32\n"; log.String() != want {
		t.Fatalf("two Generate calls logged %q, want %q once", log.String(), want)
	}
	portable := strings.Contains(k, "portable Go kernels")
	if !simdBuilt && !portable {
		t.Fatalf("built without SIMD kernels but Kernels() = %q", k)
	}
}

func TestKernelsSIMDOff(t *testing.T) {
	t.Setenv("GOMLX_DOT_MATMUL", "off")
	if k := cpuKernels(); !strings.Contains(k, "portable Go kernels") {
		t.Fatalf("cpuKernels() with GOMLX_DOT_MATMUL=off = %q", k)
	}
}
