package gomlx

import (
	"context"
	"testing"
	"unsafe"

	"github.com/gomlx/gomlx/core/tensors"

	"tally/backends"
)

// dataAddr is the address of t's values (a weight on the pure-Go backend).
func dataAddr(t *tensors.Tensor) uintptr {
	var p uintptr
	t.MustConstFlatData(func(flat any) {
		switch f := flat.(type) {
		case []float32:
			p = uintptr(unsafe.Pointer(unsafe.SliceData(f)))
		default:
			panic("not float32")
		}
	})
	return p
}

// TestSplitHoldsOnce: the split step holds each weight matrix once, and
// reads it flat in prefill and as panels in decode by reshaping it in
// place: after a Generate call (prefill then decode), every matrix the
// one-graph step held twice is held once, in the same memory as before,
// and the memory plan counts it once.
func TestSplitHoldsOnce(t *testing.T) {
	m := openFixture(t, "llama-tiny", Options{MaxBatch: 2})
	if !m.useSplit() {
		t.Skip("the split step runs on the pure-Go backend only")
	}
	type held struct {
		addr   uintptr
		panels int // the spec index of its panels
	}
	var twice []held
	var once int64
	for i, s := range m.sp.specs {
		switch {
		case s.panels:
			if m.weights[i] != nil {
				t.Errorf("%s held a second time", s.name)
			}
			continue
		case i+1 < len(m.sp.specs) && m.sp.specs[i+1].panels:
			twice = append(twice, held{dataAddr(m.weights[i]), i + 1})
		}
		n := int64(s.dtype(m.lay).Size())
		for _, d := range s.graphDims(m.lay) {
			n *= int64(d)
		}
		once += n
	}
	if len(twice) == 0 {
		t.Fatal("llama-tiny has no matrix split into panels: the test checks nothing")
	}
	e := loadExpected(t, "llama-tiny")
	reqs := []backends.Request{{Index: 0, PromptIDs: e.Prompts[3], MaxTokens: 8}, {Index: 1, PromptIDs: e.Prompts[1], MaxTokens: 8}}
	if err := m.Generate(context.Background(), reqs, func(backends.Event) bool { return true }); err != nil {
		t.Fatal(err)
	}
	flipped := 0
	for _, h := range twice {
		i := h.panels - 1
		if m.sp.form[i] {
			flipped++
		}
		if got := dataAddr(m.weights[i]); got != h.addr {
			t.Errorf("%s moved (%#x -> %#x): reshaped by a copy", m.sp.specs[i].name, h.addr, got)
		}
	}
	if flipped == 0 {
		t.Error("no matrix was read as panels in decode")
	}
	if got := m.memoryInput(1<<40, 10, 10, 1).WeightBytes; got != once {
		t.Errorf("memory plan counts %d weight bytes, the model holds %d", got, once)
	}
}
