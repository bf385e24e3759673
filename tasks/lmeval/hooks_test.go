package lmeval

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tally/internal/lmevalref"
)

func TestMain(m *testing.M) {
	code := m.Run()
	lmevalref.Cleanup()
	os.Exit(code)
}

// TestPartialOf reads partials as Python would bind them: the base
// function, literal keyword arguments in order, the repr of the call.
func TestPartialOf(t *testing.T) {
	src := "from functools import partial\n\n" +
		"def process_docs(dataset, subject):\n    return dataset\n\n" +
		"process_law = partial(process_docs, subject=\"law\")\n" +
		"process_long = partial(\n    process_docs, subject=\"computer science\"\n)\n" +
		"fmt = partial(format_cot_example, including_answer=False, n=3, t=(1, 'a'),)\n" +
		"bad = partial(process_docs, subject=other)\n" +
		"call = partial(process_docs, subject=f(x))\n"
	for _, c := range []struct {
		name, base, repr string
		ok               bool
	}{
		{"process_law", "process_docs", ", subject='law'", true},
		{"process_long", "process_docs", ", subject='computer science'", true},
		{"fmt", "format_cot_example", ", including_answer=False, n=3, t=(1, 'a')", true},
		{"bad", "", "", false},
		{"call", "", "", false},
		{"process_docs", "", "", false},
		{"missing", "", "", false},
	} {
		base, kw, repr, ok := partialOf(src, c.name)
		if ok != c.ok || base != c.base || repr != c.repr {
			t.Errorf("%s: %q %v %q %v, want %q %q %v", c.name, base, kw, repr, ok, c.base, c.repr, c.ok)
		}
	}
}

// TestDefSource is inspect.getsource's extent of a top-level function:
// decorators, a header over several lines, strings at the margin inside
// the body, and not the blank and comment lines after it.
func TestDefSource(t *testing.T) {
	src := "import re\n\n\n@decorator\ndef f(\n    a,\n    b=(1, 2),\n):\n    x = '''\ntext at the margin\n'''\n\n    # a comment\n    return x\n\n\n# after\n\ndef g(x): return x\nh = 1\n"
	want := "@decorator\ndef f(\n    a,\n    b=(1, 2),\n):\n    x = '''\ntext at the margin\n'''\n\n    # a comment\n    return x\n"
	if got := defSource(src, "f"); got != want {
		t.Errorf("defSource f:\n%q\nwant\n%q", got, want)
	}
	if got := defSource(src, "g"); got != "def g(x): return x\n" {
		t.Errorf("defSource g: %q", got)
	}
	if got := defSource(src, "h"); got != "" {
		t.Errorf("defSource h: %q", got)
	}
}

// TestModuleLiteral reads a module-level literal (lang_libs.py's
// LANG_LIBS) as ast.literal_eval reads it.
func TestModuleLiteral(t *testing.T) {
	src := "X = 1\nLIBS = {\n    \"en\": [\"Q:\", 'it\\'s', \"(\"],  # comment )\n    \"de\": [],\n}\nY = [1,\n 2]\n"
	v, err := moduleLiteral(src, "LIBS")
	if err != nil {
		t.Fatal(err)
	}
	if got := pyStr(v); got != `{'en': ['Q:', "it's", '('], 'de': []}` {
		t.Errorf("LIBS = %s", got)
	}
	if v, err := moduleLiteral(src, "Y"); err != nil || pyStr(v) != "[1, 2]" {
		t.Errorf("Y = %v %v", v, err)
	}
	if _, err := moduleLiteral(src, "Z"); err == nil {
		t.Error("Z: no error")
	}
}

// TestHookDigest: a task whose module is lm-eval's own loads through the
// port; the same module changed by one byte is refused in one line naming
// its digest, as Python code tally has no port of.
func TestHookDigest(t *testing.T) {
	src := filepath.Join(lmevalref.LMEval(t), "lm_eval", "tasks", "mmlu_pro")
	dir := t.TempDir()
	for _, f := range []string{"_default_template_yaml", "mmlu_pro_law.yaml", "utils.py"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	task, err := Load(filepath.Join(dir, "mmlu_pro_law.yaml"), nil)
	if err != nil {
		t.Fatalf("lm-eval's own module: %v", err)
	}
	if task.c.processDocs == nil || task.c.docToText.hook == nil || task.c.fewshot.docToTarget.hook == nil {
		t.Fatalf("hooks not resolved: %+v", task.c)
	}
	utils := filepath.Join(dir, "utils.py")
	b, _ := os.ReadFile(utils)
	if err := os.WriteFile(utils, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(filepath.Join(dir, "mmlu_pro_law.yaml"), nil)
	if err == nil || !strings.Contains(err.Error(), "no port of (utils.py, SHA-256 ") || strings.Contains(err.Error(), "\n") {
		t.Errorf("changed module: %v", err)
	}
	os.Remove(utils)
	if _, err := Load(filepath.Join(dir, "mmlu_pro_law.yaml"), nil); err == nil || !strings.Contains(err.Error(), "utils.py not found") {
		t.Errorf("missing module: %v", err)
	}
}

// TestSurveyLMEval surveys lm-eval 4e7e0d47's task folder: at least 3,000
// of its 4,586 generate_until task files load.
func TestSurveyLMEval(t *testing.T) {
	sv, err := SurveyDir(filepath.Join(lmevalref.LMEval(t), "lm_eval", "tasks"))
	if err != nil {
		t.Fatal(err)
	}
	loads, refused, _ := sv.Counts()
	total := loads
	for _, n := range refused {
		total += n
	}
	t.Logf("%d of %d generate_until task files load; refused: %v", loads, total, refused)
	if total != 4586 || loads < 3000 {
		t.Errorf("%d of %d generate_until task files load, want at least 3,000 of 4,586", loads, total)
	}
	// With the Python bridge (--python): what the bridge runs loads too.
	bsv, err := SurveyDirBridged(filepath.Join(lmevalref.LMEval(t), "lm_eval", "tasks"))
	if err != nil {
		t.Fatal(err)
	}
	bloads, brefused, _ := bsv.Counts()
	t.Logf("with the Python bridge: %d load; refused: %v", bloads, brefused)
	if bloads < 4100 {
		t.Errorf("with the Python bridge %d of %d load, want at least 4,100", bloads, total)
	}
	for _, e := range bsv.Entries {
		if e.Status == "refused" && strings.Contains(e.Message, "--python") {
			t.Errorf("%s: refused with the bridge on, saying to turn it on: %s", e.File, e.Message)
		}
	}
}

// FuzzPythonSource: the readers of Python source (partials, function
// extents, module literals) never panic on any text.
func FuzzPythonSource(f *testing.F) {
	f.Add("x = partial(f, a=1)\ndef f(a):\n    return a\nL = {'a': [1, (2,)]}\n", "x")
	f.Add("def f(\n'''\n", "f")
	f.Add("L = [\"\\\n", "L")
	f.Fuzz(func(t *testing.T, src, name string) {
		partialOf(src, name)
		defSource(src, name)
		moduleLiteral(src, name)
		balanced(src)
		splitTop(src)
	})
}
