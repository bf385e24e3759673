package lmeval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzTaskFile (issue 37) loads a task file that includes another, both
// written by the fuzzer, and renders a template it writes over a small
// document: no input may panic, hang or write past the bounds (.ci/run
// runs it for a bounded time; each input stays within the load's and the
// render's budgets).
func FuzzTaskFile(f *testing.F) {
	f.Add([]byte("include: inc.yaml\n"+base), []byte("num_fewshot: 1\nmetadata: {v: 1}\n"), "{% for c in choices %}{{ loop.index }}. {{ c.strip() }}\n{% endfor %}{{ q|upper }}")
	f.Add([]byte("include: [inc.yaml, inc.yaml]\ntask: t\n"), []byte("a: &a [1, 2]\nb: [*a, *a]\n"), "{{ q ~ (choices|join(', ')) }}{{ q[1:] * 3 }}")
	f.Add([]byte(base+"metadata:\n  x: &x {a: 1}\n  y: [*x, *x]\n"), []byte("root:*:1:::\n"), "{% set ns = namespace(s=q) %}{% for i in range(9) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}")
	f.Add([]byte("include: inc.yaml\n"), []byte("include: inc.yaml\n"), "{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}")
	f.Fuzz(func(t *testing.T, main, included []byte, tmpl string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "inc.yaml"), included, 0o644); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "main.yaml")
		if err := os.WriteFile(p, main, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(p, nil); err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("error on several lines: %q", err)
		}
		tm, err := compileTemplate(tmpl)
		if err != nil {
			return
		}
		doc := NewMap()
		doc.Set("q", "xy")
		doc.Set("choices", []any{"a ", " b", int64(3)})
		doc.Set("d", NewMap())
		if out, err := tm.render(doc); err == nil && len(out) > maxOutput {
			t.Errorf("rendered %d bytes, past %d", len(out), maxOutput)
		}
	})
}
