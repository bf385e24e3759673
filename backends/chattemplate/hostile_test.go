package chattemplate

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"tally/internal/hostiletest"
	"tally/internal/sharedtest"
)

// testBounds are tight bounds, so that each hostile case ends in well under
// 2 s: 256 MiB of memory, 16 MiB of stack, 1 s a render, 16 MiB of text.
var testBounds = Bounds{Memory: 256 << 20, Stack: 16 << 20, Deadline: time.Second, Output: 16 << 20, Workers: 1}

// TestHostileTemplates (issue 37): a chat template that recurses for
// ever, exhausts memory, never ends or nests without end fails its
// compilation or its render with an error wrapping ErrBounds that names
// the bound, in its worker: this process goes on, within 200 MB, and the
// next render (of a template compiled before, which the new worker has
// never seen) renders as it should.
func TestHostileTemplates(t *testing.T) {
	r := NewRenderer(testBounds)
	defer r.Close()
	good, err := r.New("{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}", "<s>", "</s>")
	if err != nil {
		t.Fatal(err)
	}
	msgs := []Message{{Role: "user", Content: "hi"}}
	tests := []struct {
		name, src string
		err       string // in the error; "" for a template's own error (not ErrBounds)
	}{
		{"recursive macro", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "recursed past its stack of 16 MiB"},
		{"range(10**9)", "{% for i in range(10**9) %}{{ i }}{% endfor %}", "needed more than its 256 MiB of memory"},
		{"string doubled in a loop", "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}", "needed more than its 256 MiB of memory"},
		{"string doubled by +", "{% set ns = namespace(s=messages[0].content) %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}", "needed more than its 256 MiB of memory"},
		{"nested loops of 100,000", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "took longer than 1s"},
		{"blocks nested 100,000 deep", strings.Repeat("{% if true %}", 100000) + "x" + strings.Repeat("{% endif %}", 100000), "past the chat template's bounds"},
		{"parentheses nested 100,000 deep", "{{ " + strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000) + " }}", "past the chat template's bounds"},
		{"a list that holds itself, printed", "{% set l = [1] %}{% set _ = l.append(l) %}{{ l }}", "past the chat template's bounds"},
		{"output of 20 MB", "{% for i in range(20) %}{{ 'x' * 1000000 }}{% endfor %}", "wrote 20000000 bytes, more than the 16 MiB a render may"},
		{"string times a negative", "[{{ 'x' * -1 }}]", ""},
		{"raise_exception", "{{ raise_exception('no system role') }}", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			start := time.Now()
			hostiletest.Bounded(t, hostiletest.Bytes, func() {
				var tmpl *Template
				if tmpl, err = r.New(tc.src, "", ""); err == nil {
					_, err = tmpl.Render(msgs, true)
				}
			})
			t.Logf("%v in %.2f s", err, time.Since(start).Seconds())
			switch {
			case err == nil:
				t.Fatal("rendered, want an error")
			case tc.err == "" && errors.Is(err, ErrBounds):
				t.Fatalf("%v, want the template's own error", err)
			case tc.err != "" && (!errors.Is(err, ErrBounds) || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("%v, want ErrBounds holding %q", err, tc.err)
			}
			got, err := good.Render(msgs, true)
			if want := "<s>[user]hi[assistant]"; err != nil || got != want {
				t.Fatalf("the next render: %q, %v; want %q", got, err, want)
			}
		})
	}
}

// TestRendererConcurrent: renders from many goroutines share a Renderer's
// workers, each getting its own rendering.
func TestRendererConcurrent(t *testing.T) {
	r := NewRenderer(Bounds{Workers: 3})
	defer r.Close()
	tmpl, err := r.New("{% for m in messages %}{{ m.content|upper }}{% endfor %}", "", "")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				in := fmt.Sprintf("prompt %d of %d", i, g)
				got, err := tmpl.Render([]Message{{Role: "user", Content: in}}, true)
				if want := strings.ToUpper(in); err != nil || got != want {
					errs <- fmt.Errorf("%q: got %q, %v", in, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestRendererErrors: a template the engine refuses is an error of New;
// a closed Renderer renders no more.
func TestRendererErrors(t *testing.T) {
	r := NewRenderer(Bounds{Workers: 1})
	if _, err := r.New("{% for %}", "", ""); err == nil || !strings.HasPrefix(err.Error(), "compile chat template: ") || errors.Is(err, ErrBounds) {
		t.Errorf("a template that does not compile: %v", err)
	}
	tmpl, err := r.New("{{ messages|length }}", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := tmpl.Render(nil, false); err != nil || got != "0" {
		t.Errorf("got %q, %v", got, err)
	}
	r.Close()
	if _, err := tmpl.Render(nil, false); err == nil {
		t.Error("a closed renderer rendered")
	}
}

// FuzzRender compiles and renders templates the fuzzer writes, over a
// prompt it writes, in a Renderer under testBounds: whatever the
// template, this process goes on, a rendering stays within the output
// bound, and after a template past a bound an ordinary template renders as
// it should. .ci/run fuzzes it for 10 s.
func FuzzRender(f *testing.F) {
	for _, seed := range []string{
		"{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content | trim }}{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}",
		"{% set ns = namespace(sys='') %}{% for m in messages %}{% if m.role == 'system' %}{% set ns.sys = m.content %}{% continue %}{% endif %}{{ ns.sys ~ m.content | tojson }}{% endfor %}",
		"{% macro show(x, depth) %}{% if depth > 0 %}[{{ show(x, depth - 1) }}]{% else %}{{ x | indent(2) }}{% endif %}{% endmacro %}{{ show(messages[-1].content, 3) }}",
		"{{ strftime_now('%Y-%m-%d') }}{{ raise_exception('no') if messages|length > 5 }}",
		"{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}",
		"{% for i in range(10**9) %}{{ i }}{% endfor %}",
		"{{ 'x' * -1 }}{{ messages[0].content[::-1] }}",
	} {
		f.Add(seed, "What is 2+3?")
	}
	r := NewRenderer(testBounds)
	f.Cleanup(func() { r.Close() })
	good, err := r.New("{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}", "", "")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src, content string) {
		msgs := []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: content}}
		tmpl, err := r.New(src, "<s>", "</s>")
		if err == nil {
			var out string
			out, err = tmpl.Render(msgs, true)
			if err == nil && len(out) > testBounds.Output {
				t.Fatalf("rendered %d bytes, more than the bound", len(out))
			}
		}
		if errors.Is(err, ErrBounds) {
			if got, gerr := good.Render(msgs, false); gerr != nil || got != "[system]Be brief.[user]"+content {
				t.Fatalf("after %v: the next render gave %q, %v", err, got, gerr)
			}
		}
	})
}

// TestLongPromptWithinBounds: the bounds leave real prompts alone: a
// prompt of 16 MiB (the longest data row tally reads) and a system prompt
// of 1 MiB render through the reference set's llama3 and qwen3 templates
// under DefaultBounds, as they render in the engine itself.
func TestLongPromptWithinBounds(t *testing.T) {
	shared := sharedtest.Dir(t)
	prompt := strings.Repeat("Question: what is 2 plus 3? ", 16<<20/28) + "Answer:"
	system := strings.Repeat("Be brief. ", 1<<20/10) + "Be clear."
	for _, tok := range []string{"llama3", "qwen3"} {
		tmpl, err := Load(filepath.Join(shared, "fixtures", "tokenizers", tok))
		if err != nil {
			t.Fatal(err)
		}
		out, err := Prompter{Template: tmpl, System: system}.Render(prompt)
		if err != nil || !strings.Contains(out, system) || !strings.Contains(out, prompt) {
			t.Errorf("%s: %d bytes, %v", tok, len(out), err)
		}
	}
}
