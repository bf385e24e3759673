package pyliteral

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"strconv"
	"testing"

	"tally/internal/pyref"
)

var update = flag.Bool("update", false, "rewrite testdata/expected.json from python3")

// reprSources are literals whose repr the test compares with Python's:
// the floats where repr switches notation, strings that need each kind of
// escape and each choice of quote, and the containers lm-eval's
// doc_to_target renders (lists of aliases, dicts of answers).
func reprSources() []string {
	out := []string{
		"None", "True", "False", "0", "-7", "123456789012345678901234567890", "0x10",
		"''", `'a'`, `"it's"`, `'say "hi"'`, `'both \' and "'`, `'back\\slash'`, `'tab\there\nnew\rret'`,
		`'\x00\x1f\x7f\x80\x9f\xa0\xad'`, `'é ü 日本 \u200b \u2028 \u3000 \ufeff \U0001f600 \U000e0001'`, `'\x1c\x1d'`,
		"[]", "()", "(1,)", "(1, 'a')", "{}", "{'a': 1, 'b': [2, 3.5]}", "{1}", "set()", "[[], [[]], {'k': ('v',)}]",
		"['Hawai\\'i', \"O'Neil\", 'plain', 'quote\"d']", "b''", `b'abc'`, `b'\x00\xff\'"'`, `b"it's"`,
		"1j", "-1j", "1+2j", "1.5-0.5j", "-0.0+1j", "...",
	}
	for _, f := range []float64{0, 1, -1, 0.1, 0.5, 1.5, 100, 1e15, 1e16, 1e17, 1234567890123456, 12345678901234567, 0.001, 0.0001,
		0.00001, 1.5e-5, 1e-7, 123.456, 1e300, 5e-324, 1.7976931348623157e308, 2.5e22, 1.0 / 3, 2.0 / 3, 9007199254740993,
		math.Copysign(0, -1)} {
		out = append(out, strconv.FormatFloat(f, 'g', -1, 64), "float('"+strconv.FormatFloat(f, 'g', -1, 64)+"')")
	}
	return out
}

type reprOut struct {
	Python string    `json:"python"`
	Reprs  []*string `json:"reprs"`
}

func checkRepr(t *testing.T, ref reprOut, source string) {
	srcs := reprSources()
	if len(ref.Reprs) != len(srcs) {
		t.Fatalf("%s: %d reprs for %d sources (regenerate: go test ./internal/pyliteral -run TestReprAgainstPython -update)", source, len(ref.Reprs), len(srcs))
	}
	for i, src := range srcs {
		v, err := Eval(src)
		want := ref.Reprs[i]
		switch {
		case want == nil && err == nil:
			t.Errorf("%s: %s: Python refuses it, Go read %s", source, src, v.Repr())
		case want != nil && err != nil:
			t.Errorf("%s: %s: Python reads it (%s), Go: %v", source, src, *want, err)
		case want != nil && v.Repr() != *want:
			t.Errorf("%s: repr(%s): Go %s, Python %s", source, src, v.Repr(), *want)
		}
	}
}

// TestReprAgainstGolden compares with Python's reprs recorded in
// testdata/expected.json.
func TestReprAgainstGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref reprOut
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	checkRepr(t, ref, "expected.json (CPython "+ref.Python+")")
}

// TestReprAgainstPython runs testdata/reference.py on this machine's
// python3: repr(ast.literal_eval(src)) against Repr(Eval(src)).
func TestReprAgainstPython(t *testing.T) {
	var ref reprOut
	pyref.Run(t, "testdata/reference.py", map[string]any{"sources": reprSources()}, &ref)
	checkRepr(t, ref, "python3 "+ref.Python)
	if *update {
		b, _ := json.Marshal(ref)
		if err := os.WriteFile("testdata/expected.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStr(t *testing.T) {
	str := Value{Kind: Str, Str: "a'b"}
	if got := str.String(); got != "a'b" {
		t.Errorf("str of a str: %q", got)
	}
	list := Value{Kind: List, Items: []Value{{Kind: Str, Str: "x"}}}
	if got := list.String(); got != "['x']" {
		t.Errorf("str of a list: %q", got)
	}
}
