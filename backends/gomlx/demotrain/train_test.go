package demotrain

import (
	"bytes"
	"context"
	"math"
	"testing"
	"testing/fstest"

	"tally/backends/gomlx"
	"tally/internal/demodata"
)

// tiny is a model small enough to train a few steps in a test.
func tiny() Hyper {
	hp := Default()
	hp.Vocab, hp.Hidden, hp.Layers, hp.Heads, hp.Inter = 300, 32, 2, 2, 64
	hp.SeqLen, hp.Batch, hp.Steps, hp.Warmup = 96, 4, 40, 5
	return hp
}

func TestTrainingLossGoesDown(t *testing.T) {
	ctx := context.Background()
	tr, err := New(tiny())
	if err != nil {
		t.Fatal(err)
	}
	var losses []float64
	for range tiny().Steps {
		l, err := tr.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, l)
	}
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	first, last := mean(losses[:5]), mean(losses[len(losses)-5:])
	t.Logf("loss %.3f → %.3f", first, last)
	if !(last < first*0.8) {
		t.Errorf("loss did not go down: first steps %.3f, last steps %.3f", first, last)
	}
}

func TestTrainingDeterministic(t *testing.T) {
	ctx := context.Background()
	files := func() map[string][]byte {
		hp := tiny()
		tr, err := New(hp)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := tr.Step(ctx); err != nil {
				t.Fatal(err)
			}
		}
		f, err := tr.Files()
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	a, b := files(), files()
	for name := range a {
		if !bytes.Equal(a[name], b[name]) {
			t.Errorf("%s differs between two runs of the same seed", name)
		}
	}
}

// TestExportParity loads the exported model with the native backend's
// loader and checks that it reproduces the training graph's logits.
func TestExportParity(t *testing.T) {
	ctx := context.Background()
	tr, err := New(tiny())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := tr.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	files, err := tr.Files()
	if err != nil {
		t.Fatal(err)
	}
	mfs := fstest.MapFS{}
	for name, data := range files {
		mfs[name] = &fstest.MapFile{Data: data}
	}
	m, err := gomlx.OpenFS(ctx, mfs, "trained", gomlx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	qs := demodata.Generate(5, 3)
	for _, text := range []string{qs[0].Prompt(), demodata.FewShot(qs[:2], qs[2])} {
		ids, err := m.Tokenizer().Encode(text, false)
		if err != nil {
			t.Fatal(err)
		}
		want, err := tr.Logits(ids)
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Logits(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%d logits, want %d", len(got), len(want))
		}
		maxDiff := 0.0
		for i := range got {
			maxDiff = max(maxDiff, math.Abs(float64(got[i]-want[i])))
		}
		t.Logf("%d tokens: max |Δlogit| %.2e", len(ids), maxDiff)
		if maxDiff > 1e-3 {
			t.Errorf("%d tokens: loaded model's logits differ from the training graph's by %.2e", len(ids), maxDiff)
		}
	}
}
