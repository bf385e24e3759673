package gomlx

import (
	"context"
	"fmt"
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
	if m.ContextLength() != demoContext || m.Config().NumKVHeads != demoKVHeads {
		t.Errorf("config %+v", m.Config())
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
	if err != nil || !strings.HasPrefix(fp, "gomlx:float32:"+demoVersion+":sha256:") {
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
