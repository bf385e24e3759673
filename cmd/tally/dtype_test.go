package main

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tally/backends/gomlx"
)

// bf16Demo writes the demo model (backends/gomlx/demomodel) with every
// tensor rounded to bfloat16 and stored as BF16: a bfloat16 checkpoint,
// whose default (--dtype auto) products run in bfloat16 where this CPU's
// kernels are fast in it (AVX-512), else in float32.
func bf16Demo(t *testing.T) string {
	t.Helper()
	src := filepath.Join("..", "..", "backends", "gomlx", "demomodel")
	w, err := gomlx.OpenWeights(src)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(w.Tensors))
	for n := range w.Tensors {
		names = append(names, n)
	}
	slices.Sort(names)
	header := map[string]any{}
	var data []byte
	for _, n := range names {
		shape := w.Tensors[n].Shape
		x, err := w.Read(n, shape...)
		if err != nil {
			t.Fatal(err)
		}
		start := len(data)
		for _, v := range x {
			bits := math.Float32bits(v)
			bits += 0x7fff + (bits>>16)&1 // round to nearest even
			data = binary.LittleEndian.AppendUint16(data, uint16(bits>>16))
		}
		header[n] = map[string]any{"dtype": "BF16", "shape": shape, "data_offsets": []int{start, len(data)}}
	}
	dir := writeSafetensors(t, header, data)
	for _, f := range []string{"config.json", "tokenizer.json"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestDTypeNotReused: generations stored under one arithmetic are never
// reused under another. On a bfloat16 checkpoint a run at --dtype float32
// after a run at --dtype bfloat16 generates every sample again, and `tally
// plan` says why first: the samples are stored under another fingerprint,
// which it names, with how its arithmetic differs (and rerun, which finds
// nothing of its own to redo, names them too). The default (auto) run
// after both reuses the generations of the mode it resolves to on this
// CPU's kernels (bfloat16 on AVX-512, float32 elsewhere: the same
// fingerprint); tally ls shows each run's dtype; a server backend refuses
// --dtype.
func TestDTypeNotReused(t *testing.T) {
	bin := buildTally(t)
	model := bf16Demo(t)
	db := filepath.Join(t.TempDir(), "d.db")
	args := []string{"--model", model, "--tasks", "demo", "--limit", "4", "--store", db}
	with := func(cmd string, extra ...string) []string { return append(append([]string{cmd}, args...), extra...) }

	s, out := runTally(t, bin, with("run", "--dtype", "bfloat16", "--json")...)
	if s.GenerationsNew != 4 || !strings.Contains(out, "products in bfloat16") {
		t.Fatalf("--dtype bfloat16 run: %d generated, want 4; output:\n%s", s.GenerationsNew, out)
	}
	_, out = runTally(t, bin, with("plan", "--dtype", "float32")...)
	for _, want := range []string{"not reused: 4 of the missing samples are stored for this model under another arithmetic, gomlx:bfloat16:",
		"(products in bfloat16, not float32): the fingerprint differs, so they are generated again"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan --dtype float32 does not say %q:\n%s", want, out)
		}
	}
	var plan planJSON
	out = tallyOut(t, with("plan", "--dtype", "float32", "--json")...)
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, out)
	}
	if plan.Counts["missing"] == 0 || len(plan.Superseded) != 1 || plan.Superseded[0].Samples != 4 ||
		!strings.HasPrefix(plan.Superseded[0].Fingerprint, "gomlx:bfloat16:") || !strings.HasPrefix(plan.Fingerprint, "gomlx:float32:") {
		t.Errorf("plan --json: fingerprint %s, counts %v, other arithmetic %+v", plan.Fingerprint, plan.Counts, plan.Superseded)
	}
	if out, err := runTallyErr(bin, with("rerun", "--dtype", "float32")...); err == nil ||
		!strings.Contains(out, "only under another arithmetic: 4 samples under gomlx:bfloat16:") {
		t.Errorf("rerun --dtype float32 before any float32 run: %v\n%s", err, out)
	}
	s, out = runTally(t, bin, with("run", "--dtype", "float32", "--json")...)
	if s.GenerationsNew != 4 || s.GenerationsReused != 0 || !strings.Contains(out, "products in float32") {
		t.Errorf("--dtype float32 after bfloat16: %d generated, %d reused; want 4 generated\n%s", s.GenerationsNew, s.GenerationsReused, out)
	}
	if s, _ = runTally(t, bin, with("run", "--json")...); s.GenerationsReused != 4 || s.GenerationsNew != 0 {
		t.Errorf("default again: %d generated, %d reused; want 4 reused", s.GenerationsNew, s.GenerationsReused)
	}
	if _, out = runTally(t, bin, with("plan")...); strings.Contains(out, "not reused") {
		t.Errorf("plan with nothing missing names other arithmetic:\n%s", out)
	}
	ls := tallyOut(t, "ls", "--store", db)
	for _, want := range []string{"dtype=bfloat16", "dtype=float32"} {
		if !strings.Contains(ls, want) {
			t.Errorf("tally ls lacks %q:\n%s", want, ls)
		}
	}
	// lm-evaluation-harness's spelling: --model hf --model_args dtype=….
	out = tallyOut(t, "plan", "--model", "hf", "--model_args", "pretrained="+model+",dtype=float32", "--tasks", "demo", "--limit", "4", "--store", db, "--json")
	var viaArgs planJSON
	if err := json.Unmarshal([]byte(out), &viaArgs); err != nil || !strings.HasPrefix(viaArgs.Fingerprint, "gomlx:float32:") || viaArgs.Counts["missing"] != 0 {
		t.Errorf("--model_args dtype=float32: fingerprint %s, counts %v, %v", viaArgs.Fingerprint, viaArgs.Counts, err)
	}
	for _, bad := range [][]string{{"--dtype", "int8"}, {"--model", "ollama:llama3", "--dtype", "float32"}} {
		out, err := runTallyErr(bin, append(with("plan"), bad...)...)
		if err == nil || !strings.Contains(out, "--dtype") {
			t.Errorf("plan %v: %v\n%s", bad, err, out)
		}
	}
}

// writeSafetensors writes a model.safetensors file of header (its tensors'
// dtypes, shapes and offsets) and data into a new folder, and returns the
// folder.
func writeSafetensors(t *testing.T, header map[string]any, data []byte) string {
	t.Helper()
	h, err := json.Marshal(header)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := append(binary.LittleEndian.AppendUint64(nil, uint64(len(h))), h...)
	if err := os.WriteFile(filepath.Join(dir, "model.safetensors"), append(file, data...), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
