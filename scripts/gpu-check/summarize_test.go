package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tally/backends/gomlx"
	"tally/backends/tokenizer"
	"tally/internal/sharedtest"
)

// TestMemoryLineMatchesPlan: the summary reads the plan tally prints
// before the long-context run; the pattern must follow MemoryPlan.String.
func TestMemoryLineMatchesPlan(t *testing.T) {
	p := gomlx.MemoryPlan{Batch: 1, CacheLength: 40960, KeyBuckets: []int{1, 2}, PrefillChunk: 2048,
		FreeBytes: 79 << 30, WeightBytes: 16 << 30, KVBytes: 10 << 30, WorkspaceBytes: 30 << 30, ReserveBytes: 4 << 30}
	m := memoryLine.FindStringSubmatch("1/1 samples\nmemory: " + p.String() + "\ngenerating")
	if m == nil {
		t.Fatalf("memory line %q not matched", p.String())
	}
	if m[1] != p.String() || m[2] != "16.00" || m[3] != "10.00" || m[4] != "30.00" || m[5] != "4.00" {
		t.Errorf("parsed %q", m[1:])
	}
}

// TestTargets evaluates the targets on made-up measurements on
// either side of each threshold.
func TestTargets(t *testing.T) {
	dev := deviceInfo{BandwidthGBs: 3000, BF16TFLOPs: 800}
	row := func(engine string, batch, prompt int) benchRow {
		return benchRow{Engine: engine, Model: "llama-8b", Batch: batch, Prompt: prompt, New: 128, Rows: batch}
	}
	// Decode at a given share of the roofline, prefill at a given share of the peak.
	at := func(r benchRow, decodeShare, prefillShare float64) benchRow {
		r.DecodeMsPerStep = 1 // decodeRoofline is then the roofline's ms
		r.DecodeMsPerStep = decodeRoofline(r, dev) / decodeShare
		r.DecodeTokS = float64(r.Batch) * 1000 / r.DecodeMsPerStep
		r.PrefillSeconds = prefillShareOf(r, dev) / prefillShare
		return r
	}
	cases := []struct {
		name string
		s    summary
		want map[string]string // target name prefix → met
	}{
		{"nothing ran", summary{}, map[string]string{"parity": "n/a", "8B shape, batch-1": "n/a", "8B shape, batch-32": "n/a", "8B shape, prefill": "n/a", "8B shape, one": "n/a", "tally run": "n/a"}},
		{"met", summary{
			Parity: []parityRow{{Model: "a", DType: "float32", Pass: true}, {Model: "a", DType: "bfloat16", Pass: false}},
			Bench: []benchRow{at(row("tally", 1, 512), 0.65, 0.1), at(row("tally", 32, 512), 0.5, 0.1),
				at(row("transformers", 32, 512), 0.1, 0.1), at(row("tally", 8, 4096), 0.5, 0.45)},
			Long: &longResult{Completed: true, PredictedBytes: 100 << 30, MeasuredBytes: 95 << 30},
			Drop: &dropResult{Stored: true, AnsweredOnce: true, Report: "r"},
		}, map[string]string{"parity": "yes", "8B shape, batch-1": "yes", "8B shape, batch-32": "yes", "8B shape, prefill": "yes", "8B shape, one": "yes", "tally run": "yes"}},
		{"missed", summary{
			Parity: []parityRow{{Model: "a", DType: "float32", Pass: true}, {Model: "b", DType: "float32", Pass: false}},
			Bench: []benchRow{at(row("tally", 1, 512), 0.55, 0.1), at(row("tally", 32, 512), 0.5, 0.1),
				at(row("transformers", 32, 512), 0.2, 0.1), at(row("tally", 8, 4096), 0.5, 0.35)},
			Long: &longResult{Completed: true, PredictedBytes: 100 << 30, MeasuredBytes: 80 << 30},
			Drop: &dropResult{Stored: true, AnsweredOnce: false, Report: "r"},
		}, map[string]string{"parity": "no", "8B shape, batch-1": "no", "8B shape, batch-32": "no", "8B shape, prefill": "no", "8B shape, one": "no", "tally run": "no"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.Device = dev
			got := targets(&tc.s)
			for prefix, want := range tc.want {
				found := false
				for _, tg := range got {
					if strings.HasPrefix(tg.Name, prefix) {
						found = true
						if tg.Met != want {
							t.Errorf("%s: met %q, want %q (measured %s)", tg.Name, tg.Met, want, tg.Measured)
						}
					}
				}
				if !found {
					t.Errorf("no target %q", prefix)
				}
			}
			if md := markdown(&tc.s); !strings.HasPrefix(md, "# tally GPU check\n") || !strings.Contains(md, "| target | wanted | measured | met |") {
				t.Errorf("markdown:\n%s", md)
			}
		})
	}
}

// prefillShareOf is prefillShare for a row whose prefill took one second.
func prefillShareOf(r benchRow, d deviceInfo) float64 {
	r.PrefillSeconds = 1
	return prefillShare(r, d)
}

// TestRooflines checks the two ceilings on the 8B shape against the
// issue's own figures: 16 GB of bf16 weights at 3.35 TB/s is about 4.8 ms
// a step (125 tok/s at 60%).
func TestRooflines(t *testing.T) {
	d := deviceInfo{BandwidthGBs: 3350, BF16TFLOPs: 989}
	r := benchRow{Engine: "transformers", Model: "llama-8b", Batch: 1, Prompt: 1, New: 2, Rows: 1, DecodeMsPerStep: 4.8}
	if f := decodeRoofline(r, d); math.Abs(f-1) > 0.01 {
		t.Errorf("8B decode at 4.8 ms/step: %.3f of the roofline, want about 1", f)
	}
	r.Rows = 0 // waves: not computable
	if f := decodeRoofline(r, d); f != -1 {
		t.Errorf("waves: %v, want -1", f)
	}
	// 4,096 tokens through 6.98e9 parameters of products and causal
	// attention: about 60 TFLOP.
	p := benchRow{Engine: "tally", Model: "llama-8b", Batch: 1, Rows: 1, Prompt: 4096, PrefillSeconds: 1}
	if f := prefillShare(p, d) * d.BF16TFLOPs; f < 58 || f > 62 {
		t.Errorf("8B prefill of 4,096 tokens: %.1f TFLOP, want about 60", f)
	}
	if shapes["llama-8b"].params() != 8030261248 || shapes["llama-1b"].params() != 1235814400 {
		t.Errorf("parameters: 8B %d, 1B %d", shapes["llama-8b"].params(), shapes["llama-1b"].params())
	}
}

// TestWeightsOpen writes the tiny checkpoint and opens it as tally does:
// its config, dtype and tensors are what a Hugging Face Llama has.
func TestWeightsOpen(t *testing.T) {
	tok := sharedtest.Path(t, "fixtures", "tokenizers", "llama3", "tokenizer.json.gz")
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := writeCheckpoint(context.Background(), dir, shapes["tiny"], tok, 1); err != nil {
		t.Fatal(err)
	}
	w, err := gomlx.OpenWeights(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Tensors) != len(shapes["tiny"].tensors()) {
		t.Errorf("%d tensors, want %d", len(w.Tensors), len(shapes["tiny"].tensors()))
	}
	for name, ti := range w.Tensors {
		if ti.DType != "BF16" {
			t.Errorf("%s: %s", name, ti.DType)
		}
	}
	x, err := w.Read("model.layers.0.mlp.up_proj.weight", 128, 64)
	if err != nil {
		t.Fatal(err)
	}
	var mean, sq float64
	for _, v := range x {
		mean += float64(v)
		sq += float64(v) * float64(v)
	}
	mean /= float64(len(x))
	if std := math.Sqrt(sq/float64(len(x)) - mean*mean); math.Abs(std-weightStd) > 0.002 || math.Abs(mean) > 0.002 {
		t.Errorf("up_proj: mean %.4f std %.4f, want 0 and %g", mean, std, weightStd)
	}
	cfg, err := gomlx.LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.VocabSize != 128256 || !cfg.TieWordEmbeddings || cfg.HeadDim != 16 || len(cfg.EOSTokenIDs) != 0 {
		t.Errorf("config %+v", cfg)
	}
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Error(err)
	}
}

// TestTextOfTokens: the long prompt is exactly the asked number of tokens
// under the llama3 tokenizer (with its special tokens, as a task prompt).
func TestTextOfTokens(t *testing.T) {
	tok, err := tokenizer.Load(sharedtest.Path(t, "fixtures", "tokenizers", "llama3", "tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{3, 100, 1001, 4096} {
		text, err := textOfTokens(tok, n, 7)
		if err != nil {
			t.Fatalf("%d tokens: %v", n, err)
		}
		ids, err := tok.Encode(text, true)
		if err != nil || len(ids) != n {
			t.Errorf("%d tokens asked, %d made (%v)", n, len(ids), err)
		}
	}
}

func TestParseConfigs(t *testing.T) {
	got, err := parseConfigs(" 1x512, 32x4096,")
	if err != nil || len(got) != 2 || got[0] != (config{1, 512}) || got[1] != (config{32, 4096}) {
		t.Errorf("parseConfigs: %v, %v", got, err)
	}
	for _, bad := range []string{"", "8", "8x", "x8", "0x8", "8x-1", "axb"} {
		if _, err := parseConfigs(bad); err == nil {
			t.Errorf("parseConfigs(%q): no error", bad)
		}
	}
}
