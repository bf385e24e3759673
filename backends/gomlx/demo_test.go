package gomlx

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tally/backends"
)

func TestDemo(t *testing.T) {
	ctx := context.Background()
	m, err := Open(ctx, "demo", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tok := m.Tokenizer()
	if tok == nil {
		t.Fatal("demo has no tokenizer")
	}
	if c := m.Config(); c.ModelType != "llama" || m.ContextLength() != c.MaxPositionEmbeddings || c.Params() > 1<<20 {
		t.Errorf("config %+v", c)
	}
	var reqs []backends.Request
	for i := range 20 {
		ids, err := tok.Encode(fmt.Sprintf("Question: what is %d plus %d?\nAnswer:", i, i+1), true)
		if err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, backends.Request{Index: i, PromptIDs: ids, MaxTokens: 64})
	}
	run := func() map[int]string {
		texts := map[int]string{}
		var ids = map[int][]int{}
		err := m.Generate(ctx, reqs, func(ev backends.Event) bool {
			texts[ev.Index] += ev.Text
			ids[ev.Index] = append(ids[ev.Index], ev.IDs...)
			if ev.Done && ev.Finish != backends.FinishLength && ev.Finish != backends.FinishEOS {
				t.Errorf("request %d: finish %q err %v", ev.Index, ev.Finish, ev.Err)
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range texts {
			want, err := tok.Decode(ids[i], true)
			if err != nil {
				t.Fatal(err)
			}
			if s != want {
				t.Errorf("request %d: streamed %q, decoded %q", i, s, want)
			}
		}
		return texts
	}
	a := run()
	b := run()
	for i := range reqs {
		if a[i] != b[i] {
			t.Errorf("request %d not deterministic", i)
		}
	}
	t.Logf("sample: %q; stats %+v", a[0], m.Stats())
	fp, err := m.Fingerprint(ctx)
	if err != nil || !strings.HasPrefix(fp, cpuArith("float32")+":"+demoVersion+":sha256:") {
		t.Errorf("fingerprint %q %v", fp, err)
	}
	m2, err := Demo(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	fp2, _ := m2.Fingerprint(ctx)
	if fp2 != fp {
		t.Error("demo fingerprint not deterministic")
	}
}

// TestDemoTextPrompt sends text prompts (no PromptIDs): the backend
// tokenises them itself.
func TestDemoTextPrompt(t *testing.T) {
	ctx := context.Background()
	m, err := Demo(ctx, Options{MaxBatch: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got := 0
	err = m.Generate(ctx, []backends.Request{{Prompt: "The harbour town", MaxTokens: 5}}, func(ev backends.Event) bool {
		got += len(ev.IDs)
		if ev.Done && ev.PromptTokens == 0 {
			t.Errorf("no prompt tokens: %+v", ev)
		}
		return true
	})
	if err != nil || got == 0 {
		t.Fatalf("err %v, %d tokens", err, got)
	}
}

// TestDemoFilesOpen writes the embedded demo files to a directory: Open
// reads them as a user's model, with the same logits as Demo (OpenFS).
func TestDemoFilesOpen(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, name := range []string{"config.json", "model.safetensors", "tokenizer.json"} {
		data, err := demoFiles.ReadFile("demomodel/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, err := Demo(ctx, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, dir, Options{FingerprintCache: "-"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ids, err := a.Tokenizer().Encode("Passage: Tom scored 12 points.\nQuestion: Tom scored how many points?\nAnswer:", false)
	if err != nil {
		t.Fatal(err)
	}
	la, err := a.Logits(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	lb, err := b.Logits(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for i := range la {
		if la[i] != lb[i] {
			t.Fatalf("logit %d: OpenFS %v, Open %v", i, la[i], lb[i])
		}
	}
}
