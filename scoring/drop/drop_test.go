package drop

import (
	"encoding/json"
	"math"
	"strings"
	"tally/scoring/npsum"
	"testing"
	"unicode/utf8"
)

// Expected values from the reference (lm-evaluation-harness 4e7e0d47,
// CPython 3.11.2, numpy 1.24.2, scipy 1.10.1) and its drop-fixed variant.
func TestScoreQuirks(t *testing.T) {
	tests := []struct {
		name         string
		pred         string
		answers      [][]string
		em, f1       float64
		emFix, f1Fix float64
	}{
		{"number then blank line not a number", "10\n\nPassage: The Bears", [][]string{{"10"}}, 0, 0, 0, 0.5},
		{"number then one newline is a number", "10\n", [][]string{{"10"}}, 1, 1, 1, 1},
		{"U+001C splits words but float() rejects it", "10\x1c", [][]string{{"10"}}, 0, 0, 1, 1},
		{"1.50 is 1.5", "1.50", [][]string{{"1.5"}}, 1, 1, 1, 1},
		{"3.0 is 3", "3.0", [][]string{{"3"}}, 1, 1, 1, 1},
		{"trailing period drops the decimal point", "1.5.", [][]string{{"15"}}, 1, 1, 1, 1},
		{"dollar drops the decimal point", "$1.50", [][]string{{"150"}}, 1, 1, 1, 1},
		{"exponent", "1e5", [][]string{{"100000"}}, 1, 1, 1, 1},
		{"underscores", "1_000", [][]string{{"1000"}}, 1, 1, 1, 1},
		{"Arabic-Indic digits", "١٢", [][]string{{"12"}}, 1, 1, 1, 1},
		{"inf spellings", "INF", [][]string{{"infinity"}}, 1, 1, 1, 1},
		{"nan", "nan", [][]string{{"NaN"}}, 1, 1, 1, 1},
		{"article", "The Bears", [][]string{{"bears"}}, 1, 1, 1, 1},
		{"hyphen splits", "7-7", [][]string{{"7 7"}}, 1, 1, 1, 1},
		{"en dash does not split", "7\u20137", [][]string{{"7-7"}}, 0, 0, 0, 0},
		{"multi-span gold", "Chaz Schilens", [][]string{{"Chaz Schilens", "JaMarcus Russell"}}, 0, 0.5, 0, 0.5},
		{"blank first span skips the gold", "Chaz Schilens", [][]string{{" ", "Chaz Schilens"}}, 0, 0, 0, 0},
		{"no golds", "x", nil, 0, 0, 0, 0},
		{"empty gold span skipped", "", [][]string{{""}}, 0, 0, 0, 0},
		{"article-only gold matches empty prediction", "", [][]string{{"the"}}, 1, 1, 1, 1},
		{"dotted capital I", "İstanbul", [][]string{{"i\u0307stanbul"}}, 1, 1, 1, 1},
		{"final sigma", "ΟΔΟΣ", [][]string{{"οδος"}}, 1, 1, 1, 1},
		{"repr in exponent form", "1e16", [][]string{{"10000000000000000"}}, 1, 1, 1, 1},
		{"partial F1 rounded", "4 touchdowns", [][]string{{"4"}}, 0, 0.67, 0, 0.67},
		{"number mismatch zeroes F1", "4 touchdowns", [][]string{{"5 touchdowns"}}, 0, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if em, f1 := Score(tc.pred, tc.answers); em != tc.em || f1 != tc.f1 {
				t.Errorf("Score(%q) = %v, %v; want %v, %v", tc.pred, em, f1, tc.em, tc.f1)
			}
			if em, f1 := ScoreFixed(tc.pred, tc.answers); em != tc.emFix || f1 != tc.f1Fix {
				t.Errorf("ScoreFixed(%q) = %v, %v; want %v, %v", tc.pred, em, f1, tc.emFix, tc.f1Fix)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want, fixed string }{
		{"10\n\nPassage: The Bears", "10 passage bears", "10.0 passage bears"},
		{"The 3 yard-line", "3.0 yard line", "3.0 yard line"},
		{"0.00001", "1e-05", "1e-05"},
		{"1e-05", "1e 5.0", "1e 5.0"}, // not idempotent: the hyphen of a repr splits
		{"1e400", "inf", "inf"},
		{"the\u0301", "\u0301", "\u0301"}, // combining marks are not word characters
		{"théâtre", "théâtre", "théâtre"},
		{"a\tb", "b", "b"},
		{"ｉｎｆ", "ｉｎｆ", "ｉｎｆ"}, // fullwidth letters are not float syntax
		{"１２", "12.0", "12.0"},
		{"\u00a05\u00a0", "5.0", "5.0"},
		{"Ab\u00adΣ", "ab\u00adς", "ab\u00adς"},
		{"", "", ""},
		{"  -- ", "", ""},
	}
	for _, tc := range tests {
		if got := Normalize(tc.in); got != tc.want {
			t.Errorf("Normalize(%q) = %q; want %q", tc.in, got, tc.want)
		}
		if got := NormalizeFixed(tc.in); got != tc.fixed {
			t.Errorf("NormalizeFixed(%q) = %q; want %q", tc.in, got, tc.fixed)
		}
	}
}

func TestBagOrder(t *testing.T) {
	got := Bag("the Bears beat the bears 3-3")
	want := []string{"bears", "beat", "3.0"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Bag = %q; want %q", got, want)
	}
}

func TestPyLower(t *testing.T) {
	tests := []struct{ in, want string }{
		{"ABC", "abc"},
		{"İstanbul", "i\u0307stanbul"},     // one-to-many
		{"ΟΔΟΣ", "οδος"},                   // final sigma
		{"ΣΑ", "σα"},                       // not final: nothing cased before
		{"ΑΣ'Α", "ασ'α"},                   // not final: cased after a case-ignorable
		{"ΑΣ'", "ας'"},                     // final: only case-ignorables after
		{"ẞ", "ß"}, {"Ⅰ", "ⅰ"}, {"K", "k"}, // Kelvin sign
		{"\xffA", "\xffa"}, // invalid UTF-8 kept
	}
	for _, tc := range tests {
		if got := pyLower(tc.in); got != tc.want {
			t.Errorf("pyLower(%q) = %q; want %q", tc.in, got, tc.want)
		}
	}
}

func TestPyFloat(t *testing.T) {
	tests := []struct {
		in   string
		ok   bool
		repr string
	}{
		{"1e5", true, "100000.0"}, {"inf", true, "inf"}, {"-Infinity", true, "-inf"}, {"nan", true, "nan"},
		{"  3 ", true, "3.0"}, {"1_000", true, "1000.0"}, {"١٢", true, "12.0"}, {"1e16", true, "1e+16"},
		{"1e15", true, "1000000000000000.0"}, {"1.5", true, "1.5"}, {"0.0001", true, "0.0001"},
		{"0.00001", true, "1e-05"}, {"-0", true, "-0.0"}, {"1e999", true, "inf"}, {"1e-999", true, "0.0"},
		{"5.", true, "5.0"}, {".5", true, "0.5"}, {"\u00a05", true, "5.0"},
		{"1__0", false, ""}, {"_1", false, ""}, {"1_", false, ""}, {"1_e5", false, ""}, {"0x10", false, ""},
		{"1e", false, ""}, {".", false, ""}, {"", false, ""}, {" ", false, ""}, {"1 2", false, ""},
		{"5\x1c", false, ""}, {"1\x00", false, ""}, {"²", false, ""}, {"infinit", false, ""}, {"nan(1)", false, ""},
	}
	for _, tc := range tests {
		f, ok := pyFloat(tc.in)
		got := ""
		if ok {
			got = pyRepr(f)
		}
		if ok != tc.ok || got != tc.repr {
			t.Errorf("float(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.repr, tc.ok)
		}
	}
}

func TestNpRound2(t *testing.T) {
	// np.round(x, 2) = rint(x*100)/100; Python's round(x, 2) differs on
	// 0.155 (0.15) and 2.675 (2.67).
	tests := []struct{ in, want float64 }{
		{0.155, 0.16}, {2.675, 2.68}, {0.665, 0.66}, {0.125, 0.12}, {0.375, 0.38}, {1.005, 1.0}, {2.0 / 3, 0.67},
	}
	for _, tc := range tests {
		if got := npRound2(tc.in); got != tc.want {
			t.Errorf("npRound2(%v) = %v; want %v", tc.in, got, tc.want)
		}
	}
}

func TestNpMean(t *testing.T) {
	// Pairwise summation: for 9+ values the grouping differs from a
	// left-to-right sum. Expected values from numpy 1.24.2 np.mean.
	tests := []struct {
		xs   []float64
		want float64
	}{
		{[]float64{0.2, 2.0 / 3, 2.0 / 3, 0.2, 0.3, 2.0 / 3, 1.0 / 3, 0.4, 2.0 / 3, 0.1}, 0.42000000000000004}, // sequential: 0.41999999999999993
		{[]float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.1}, 0.45999999999999996},
		{[]float64{0.5}, 0.5},
	}
	for _, tc := range tests {
		if got := npsum.Mean(tc.xs); got != tc.want {
			t.Errorf("npsum.Mean(%v) = %v; want %v", tc.xs, got, tc.want)
		}
	}
	if !math.IsNaN(npsum.Mean(nil)) {
		t.Errorf("npsum.Mean(nil) is not NaN")
	}
}

func TestAnswers(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want [][]string
		err  bool
	}{
		{"number over spans", `{"answer":{"number":"5","date":{"day":"","month":"","year":""},"spans":["x"]},"validated_answers":{"number":[],"date":[],"spans":[]}}`, [][]string{{"5"}}, false},
		{"date joined and stripped", `{"answer":{"number":"","date":{"day":"","month":"","year":"1999"},"spans":[]},"validated_answers":[]}`, [][]string{{"1999"}}, false},
		{"empty answer kept", `{"answer":{"number":"","date":{"day":"","month":"","year":""},"spans":[]},"validated_answers":[]}`, [][]string{{""}}, false},
		{"dedup keeps order", `{"answer":{"number":"","date":{},"spans":["a","b"]},"validated_answers":[{"number":"","date":{},"spans":["b","a"]},{"number":"","date":{},"spans":["a","b"]}]}`, [][]string{{"a", "b"}, {"b", "a"}}, false},
		{"non-string number is str()ed", `{"answer":{"number":5.0,"date":{},"spans":[]},"validated_answers":[{"number":null},{"number":-0}]}`, [][]string{{"5.0"}, {"None"}, {"0"}}, false},
		{"string spans is split into characters", `{"answer":{"number":"","date":{},"spans":"ab"},"validated_answers":[]}`, [][]string{{"a", "b"}}, false},
		{"missing validated_answers", `{"answer":{"number":"1","date":{},"spans":[]}}`, nil, true},
		{"missing number", `{"answer":{"date":{},"spans":[]},"validated_answers":[]}`, nil, true},
		{"short date column", `{"answer":{"number":"1","date":{},"spans":[]},"validated_answers":{"number":["1"],"date":[],"spans":[[]]}}`, nil, true},
		{"date field not a string", `{"answer":{"number":"","date":{"day":1,"month":"","year":""},"spans":[]},"validated_answers":[]}`, nil, true},
		{"null spans", `{"answer":{"number":"","date":{},"spans":null},"validated_answers":[]}`, nil, true},
		{"not JSON", `{`, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Answers(json.RawMessage(tc.doc))
			if (err != nil) != tc.err {
				t.Fatalf("Answers error %v; want error %v", err, tc.err)
			}
			if !tc.err && !equalAnswers(got, tc.want) {
				t.Errorf("Answers = %q; want %q", got, tc.want)
			}
		})
	}
}

func equalAnswers(a, b [][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equalStrings(a[i], b[i]) {
			return false
		}
	}
	return true
}

func TestLineMetrics(t *testing.T) {
	ms := map[string]int{}
	for i, m := range LineMetrics() {
		ms[m.Name] = i
		if m.Doc == "" || m.Score == nil {
			t.Errorf("%s: missing Doc or Score", m.Name)
		}
	}
	all := LineMetrics()
	tests := []struct {
		metric, in, want string
		err              bool
	}{
		{"drop", `{"prediction":"10\n\nPassage: x","answers":[["10"]]}`, `{"em":0,"f1":0}`, false},
		{"drop-fixed", `{"prediction":"10\n\nPassage: x","answers":[["10"]]}`, `{"em":0,"f1":0.5}`, false},
		{"drop", `{"prediction":"x","answers":[[]]}`, "", true},
		{"drop", `{"answers":[["x"]]}`, "", true},
		{"drop", `{"prediction":"x"}`, "", true},
		{"drop-answers", `{"doc":{"answer":{"number":"3","date":{},"spans":[]},"validated_answers":[]}}`, `{"answers":[["3"]]}`, false},
		{"drop-answers", `{}`, "", true},
		{"drop-normalize", `{"text":"The 10\n\nYards"}`, `{"bag":["10","yards"],"bag_fixed":["10.0","yards"],"normalized":"10 yards","normalized_fixed":"10.0 yards"}`, false},
		{"drop-normalize", `{"text":""}`, `{"bag":[],"bag_fixed":[],"normalized":"","normalized_fixed":""}`, false},
	}
	for _, tc := range tests {
		i, ok := ms[tc.metric]
		if !ok {
			t.Fatalf("no metric %q", tc.metric)
		}
		out, err := all[i].Score(json.RawMessage(tc.in))
		if (err != nil) != tc.err {
			t.Errorf("%s %s: error %v; want error %v", tc.metric, tc.in, err, tc.err)
			continue
		}
		if tc.err {
			continue
		}
		b, _ := json.Marshal(out)
		if string(b) != tc.want {
			t.Errorf("%s %s = %s; want %s", tc.metric, tc.in, b, tc.want)
		}
	}
	lines := []json.RawMessage{
		json.RawMessage(`{"prediction":"3","answers":[["3"]]}`),
		json.RawMessage(`{"prediction":"4 touchdowns","answers":[["4"]]}`),
	}
	agg, err := all[ms["drop"]].Aggregate(lines)
	if err != nil {
		t.Fatalf("aggregate: %v", err)
	}
	b, _ := json.Marshal(agg)
	if string(b) != `{"em":0.5,"f1":0.835,"n":2}` {
		t.Errorf("aggregate = %s", b)
	}
	if _, err := all[ms["drop-fixed"]].Aggregate(nil); err == nil {
		t.Errorf("aggregate of no lines: no error")
	}
	if _, err := all[ms["drop"]].Aggregate(append(lines, json.RawMessage(`{"prediction":"x","answers":[[]]}`))); err == nil {
		t.Errorf("aggregate with a failing line: no error")
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"10\n\nPassage: The Bears", "1.5.", "$1.50", "1_000", "١٢", "İstanbul", "ΟΔΟΣ",
		"the-a-an", "1e-05", "\x1c10", "a\u0301", "\xff\xfe", "Σ\u00adΣ", "nan inf -inf"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, fixed := range []bool{false, true} {
			n := normalize(s, fixed)
			if n != pyStrip(n) || strings.Contains(n, "  ") {
				t.Errorf("normalize(%q, %v) = %q: not whitespace-clean", s, fixed, n)
			}
			if utf8.ValidString(s) && !utf8.ValidString(n) {
				t.Errorf("normalize(%q, %v) = %q: invalid UTF-8", s, fixed, n)
			}
			for _, w := range bagOf(n) {
				if w == "" || strings.ContainsFunc(w, isPySpace) {
					t.Errorf("bag of %q has word %q", s, w)
				}
			}
		}
		em, f1 := Score(s, [][]string{{s}, {"10"}})
		if em != 1 && pyStrip(s) != "" {
			t.Errorf("Score(%q) against itself: em %v", s, em)
		}
		if f1 < 0 || f1 > 1 {
			t.Errorf("Score(%q): f1 %v out of range", s, f1)
		}
	})
}

func FuzzPyFloat(f *testing.F) {
	for _, s := range []string{"1e5", "inf", "nan", "  3 ", "1_000", "١٢", "1__0", ".5", "5.", "1e", "-0", "1e400", "0x1p3", "١_٢"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		x, ok := pyFloat(s)
		if !ok {
			return
		}
		r := pyRepr(x)
		y, ok := pyFloat(r)
		if !ok || (y != x && !(math.IsNaN(x) && math.IsNaN(y))) || math.Signbit(x) != math.Signbit(y) && !math.IsNaN(x) {
			t.Errorf("repr(float(%q)) = %q does not round-trip", s, r)
		}
		if pyRepr(y) != r {
			t.Errorf("repr not stable for %q", s)
		}
	})
}

func FuzzAnswers(f *testing.F) {
	f.Add(`{"answer":{"number":"5","date":{"day":"","month":"","year":""},"spans":[]},"validated_answers":{"number":["3"],"date":[{"day":"","month":"","year":""}],"spans":[[]]}}`)
	f.Add(`{"answer":{"number":"","date":{"day":"1","month":"May","year":""},"spans":[]},"validated_answers":[]}`)
	f.Add(`{"answer":{"number":1e400},"validated_answers":{"number":[]}}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, doc string) {
		a, err := Answers(json.RawMessage(doc))
		if err == nil && len(a) == 0 {
			t.Errorf("Answers(%q) gave no answers and no error", doc)
		}
	})
}

// TestAnswerType: the gold's own type (number, then spans, then date), a
// year written in the date's fields being a date.
func TestAnswerType(t *testing.T) {
	for _, tc := range []struct{ answer, want string }{
		{`{"number":"7.5","date":{"day":"","month":"","year":""},"spans":[]}`, "number"},
		{`{"number":"","date":{"day":"","month":"","year":"2017"},"spans":[]}`, "date"},
		{`{"number":"","date":{"day":"5","month":"March","year":"1999"},"spans":[]}`, "date"},
		{`{"number":"","date":{"day":"","month":"","year":""},"spans":["Bears"]}`, "span"},
		{`{"number":"","date":{"day":"","month":"","year":""},"spans":["a","b"]}`, "spans"},
		{`{"number":2017,"date":{"day":"","month":"","year":""},"spans":[]}`, "number"},
	} {
		got, err := AnswerType(json.RawMessage(tc.answer))
		if err != nil || got != tc.want {
			t.Errorf("AnswerType(%s) = %q, %v; want %q", tc.answer, got, err, tc.want)
		}
	}
}
