package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"tally/store"
)

// randomLlama writes a Llama checkpoint of random BF16 weights (norms
// 1+0.05·N(0,1), the rest 0.05·N(0,1), from a PCG seeded with 1) with the
// demo model's vocabulary and tokenizer, 2 layers of hidden size 1024,
// 16 heads of 64 (4 KV heads) and an MLP of 2048: products whose size
// puts batch 1 and batch 8 on different sides of gomlx/compute's
// small-kernel threshold, and random logits whose top two are often
// close.
func randomLlama(t *testing.T) string {
	t.Helper()
	const hidden, inter, heads, kvHeads, vocab = 1024, 2048, 16, 4, 800
	hd := hidden / heads
	shapes := map[string][]int{"model.embed_tokens.weight": {vocab, hidden}, "model.norm.weight": {hidden}, "lm_head.weight": {vocab, hidden}}
	for l := range 2 {
		p := fmt.Sprintf("model.layers.%d.", l)
		shapes[p+"input_layernorm.weight"] = []int{hidden}
		shapes[p+"post_attention_layernorm.weight"] = []int{hidden}
		shapes[p+"self_attn.q_proj.weight"] = []int{heads * hd, hidden}
		shapes[p+"self_attn.k_proj.weight"] = []int{kvHeads * hd, hidden}
		shapes[p+"self_attn.v_proj.weight"] = []int{kvHeads * hd, hidden}
		shapes[p+"self_attn.o_proj.weight"] = []int{hidden, heads * hd}
		shapes[p+"mlp.gate_proj.weight"] = []int{inter, hidden}
		shapes[p+"mlp.up_proj.weight"] = []int{inter, hidden}
		shapes[p+"mlp.down_proj.weight"] = []int{hidden, inter}
	}
	names := make([]string, 0, len(shapes))
	for n := range shapes {
		names = append(names, n)
	}
	slices.Sort(names)
	rng := rand.New(rand.NewPCG(1, 2))
	header := map[string]any{}
	var data []byte
	for _, n := range names {
		size := 1
		for _, d := range shapes[n] {
			size *= d
		}
		start := len(data)
		for range size {
			v := float32(0.05 * rng.NormFloat64())
			if strings.HasSuffix(n, "norm.weight") {
				v = float32(1 + 0.05*rng.NormFloat64())
			}
			data = binary.LittleEndian.AppendUint16(data, uint16(math.Float32bits(v)>>16))
		}
		header[n] = map[string]any{"dtype": "BF16", "shape": shapes[n], "data_offsets": []int{start, len(data)}}
	}
	dir := writeSafetensors(t, header, data)
	demo := filepath.Join("..", "..", "backends", "gomlx", "demomodel")
	var cfg map[string]any
	b, err := os.ReadFile(filepath.Join(demo, "config.json"))
	if err == nil {
		err = json.Unmarshal(b, &cfg)
	}
	if err != nil {
		t.Fatal(err)
	}
	cfg["hidden_size"], cfg["intermediate_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"] = hidden, inter, heads, kvHeads
	if b, err = json.Marshal(cfg); err == nil {
		err = os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	if b, err = os.ReadFile(filepath.Join(demo, "tokenizer.json")); err == nil {
		err = os.WriteFile(filepath.Join(dir, "tokenizer.json"), b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// storedBySample reads the generations of the store at path by sample id,
// those whose fingerprint names products in products ("float32",
// "bfloat16").
func storedBySample(t *testing.T, path, products string) map[string]store.Generation {
	t.Helper()
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	gens, err := st.ReadGenerationsOf(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.Generation{}
	for _, g := range gens {
		if strings.HasPrefix(g.Fingerprint, "gomlx:"+products+":") {
			out[g.SampleID] = g
		}
	}
	return out
}

// TestRerunEqualsFullRun: a sample's greedy output does not depend on
// what shares its batch. A full run of 24 demo samples (batches of 8,
// refilled as rows finish, prompts of different lengths, shared passages
// prefilled once) and runs of a few of them (--samples, as a rerun of a
// few samples would be: two, then one alone) store the same text for
// those, on a random BF16 Llama (randomLlama) at --dtype float32 and then
// auto. auto runs in the float32 run's store: where this CPU's kernels
// multiply bfloat16 at least as fast as float32 (AVX-512) it computes in
// bfloat16, where a last-bit difference most easily changes a token, and
// generates the 24 again under its own fingerprint; elsewhere it computes
// in float32, the same arithmetic under the same fingerprint, so it reuses
// all 24 and generates nothing (on an AVX2-only machine bfloat16 took 875 s
// here against 23 s for float32).
func TestRerunEqualsFullRun(t *testing.T) {
	bin := buildTally(t)
	model := randomLlama(t)
	fullDB := filepath.Join(t.TempDir(), "full.db") // both modes' full runs
	for _, dtype := range []string{"float32", "auto"} {
		t.Run(dtype, func(t *testing.T) {
			common := []string{"--model", model, "--tasks", "demo", "--dtype", dtype, "--max-tokens", "48", "--json"}
			s, out := runTally(t, bin, append([]string{"run", "--limit", "24", "--store", fullDB}, common...)...)
			products := dtype
			switch {
			case dtype == "float32" && s.GenerationsNew == 24:
			case dtype == "auto" && s.GenerationsNew == 24 && strings.Contains(out, "products in bfloat16"):
				products = "bfloat16"
			case dtype == "auto" && s.GenerationsReused == 24 && s.GenerationsNew == 0:
				// auto is float32 here: its keys are float32's.
				if got := storedBySample(t, fullDB, "float32"); len(got) != 24 {
					t.Fatalf("auto reused 24 generations, but %d are stored under float32", len(got))
				}
				t.Logf("auto computes in float32 on this CPU's kernels and reused the float32 run's 24 generations")
				return
			default:
				t.Fatalf("full run generated %d, reused %d, want 24 generated (or, at auto in float32, 24 reused):\n%s", s.GenerationsNew, s.GenerationsReused, out)
			}
			full := storedBySample(t, fullDB, products)
			if len(full) != 24 {
				t.Fatalf("%d generations stored in %s, want 24", len(full), products)
			}
			ids := make([]string, 0, len(full))
			for id := range full {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			for _, few := range [][]string{{ids[13], ids[19]}, {ids[2]}, {ids[14]}} {
				fewDB := filepath.Join(t.TempDir(), "few.db")
				if s, out := runTally(t, bin, append([]string{"run", "--samples", strings.Join(few, ","), "--store", fewDB}, common...)...); s.GenerationsNew != len(few) {
					t.Fatalf("run of %v generated %d:\n%s", few, s.GenerationsNew, out)
				}
				alone := storedBySample(t, fewDB, products)
				for _, id := range few {
					a, f := alone[id], full[id]
					if a.Text != f.Text || a.NTokens != f.NTokens || a.Finish != f.Finish {
						t.Errorf("sample %s run in a batch of %d: %q (%d tokens, %s); in the full run %q (%d tokens, %s)",
							id, len(few), a.Text, a.NTokens, a.Finish, f.Text, f.NTokens, f.Finish)
					}
				}
			}
		})
	}
}
