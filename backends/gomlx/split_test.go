package gomlx

import (
	"context"
	"slices"
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
		t.Skip("llama-tiny has no matrix split into panels on these kernels (TestSplitReadsBothShapes has)")
	}
	e := loadExpected(t, "llama-tiny")
	reqs := []backends.Request{{Index: 0, PromptIDs: e.Prompts[3], MaxTokens: 8}, {Index: 1, PromptIDs: e.Prompts[1], MaxTokens: 8}}
	var evErr error
	err := m.Generate(context.Background(), reqs, func(ev backends.Event) bool {
		if ev.Err != nil {
			evErr = ev.Err
		}
		return true
	})
	if err == nil {
		err = evErr
	}
	if err != nil {
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

// TestSplitReadsBothShapes: on a model whose prompt products are large
// (read flat) and whose decode products are small (read as panels), each
// split matrix is reshaped in place between the two and back, and the
// tokens are the same each time (a weight read in the wrong shape fails
// the graph's build, see splitModel.params).
func TestSplitReadsBothShapes(t *testing.T) {
	cfg := llamaConfig(512, 256, 704, 2, 4, 2, 1024)
	m, err := newModel(cfg, layout{}, randomWeights(cfg, 3), nil, Options{MaxBatch: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.useSplit() {
		t.Skip("the split step runs on the pure-Go backend only")
	}
	m.cfg.EOSTokenIDs = nil
	addrs := map[int]uintptr{}
	for i := range m.sp.specs {
		if i+1 < len(m.sp.specs) && m.sp.specs[i+1].panels {
			addrs[i] = dataAddr(m.weights[i])
		}
	}
	if len(addrs) == 0 {
		t.Fatal("no matrix is split into panels: the test checks nothing")
	}
	ids := make([]int, 200)
	for i := range ids {
		ids[i] = (i * 7) % cfg.VocabSize
	}
	var runs [][]int
	for range 2 {
		var got []int
		var evErr error
		err := m.Generate(context.Background(), []backends.Request{{PromptIDs: ids, MaxTokens: 6}}, func(ev backends.Event) bool {
			got = append(got, ev.IDs...)
			if ev.Err != nil {
				evErr = ev.Err
			}
			return true
		})
		if err == nil {
			err = evErr
		}
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, got)
	}
	if len(runs[0]) != 6 || !slices.Equal(runs[0], runs[1]) {
		t.Errorf("tokens %v, then %v", runs[0], runs[1])
	}
	// Two shapes per matrix, each change of shape one compiled reshape
	// per (from, to) pair.
	if len(m.sp.flips) < 2 {
		t.Errorf("%d reshape graphs, want both ways", len(m.sp.flips))
	}
	for i, a := range addrs {
		if !m.sp.form[i] {
			t.Errorf("%s flat after decode", m.sp.specs[i].name)
		}
		if got := dataAddr(m.weights[i]); got != a {
			t.Errorf("%s moved (%#x -> %#x): reshaped by a copy", m.sp.specs[i].name, a, got)
		}
	}
}
