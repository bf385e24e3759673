package exactmatch

import (
	"encoding/json"
	"flag"
	"os"
	"testing"

	"tally/internal/pyref"
)

var update = flag.Bool("update", false, "rewrite testdata/expected.json from python3")

type opts struct {
	RegexesToIgnore   []string `json:"regexes_to_ignore,omitzero"`
	IgnoreCase        bool     `json:"ignore_case,omitempty"`
	IgnorePunctuation bool     `json:"ignore_punctuation,omitempty"`
	IgnoreNumbers     bool     `json:"ignore_numbers,omitempty"`
}

type refCase struct {
	Predictions []string `json:"predictions"`
	References  []string `json:"references"`
	Options     opts     `json:"options"`
}

// gsm8k is GSM8K's regexes_to_ignore.
var gsm8k = []string{",", `\$`, "(?s).*#### ", `\.$`}

// pairs are (prediction, reference) pairs that differ in exactly what the
// options remove, or in what they do not.
var pairs = [][2]string{
	{"18", "18"}, {"18", " 18"}, {"18.", "18"}, {"18.\n", "18"}, {"$1,000", "1000"}, {"#### 72", "72"},
	{"The answer\n#### 72", "Natalia sold 48/2 = 24 clips in May.\n#### 72"}, {"a\x00", "a"}, {"a\x00\x00", "a\x00"},
	{"\x00a", "a"}, {"Paris", "paris"}, {"PARIS!", "paris"}, {"İstanbul", "i̇stanbul"}, {"ΟΔΟΣ", "οδος"}, {"STRASSE", "straße"},
	{"ß", "ss"}, {"e.g.", "eg"}, {"«quoted»", "quoted"}, {"Tom's", "toms"}, {"abc123", "abc"}, {"٣", ""}, {"", ""},
	{"  spaced ", "spaced"}, {"a-b_c", "abc"}, {"x!\x00", "x"}, {"1,234.5", "12345"}, {"Mount Everest", "mount everest."},
}

func cases() []refCase {
	var out []refCase
	for _, o := range []opts{{}, {IgnoreCase: true}, {IgnorePunctuation: true}, {IgnoreNumbers: true},
		{IgnoreCase: true, IgnorePunctuation: true}, {RegexesToIgnore: gsm8k}, {RegexesToIgnore: gsm8k, IgnoreCase: true, IgnorePunctuation: true, IgnoreNumbers: true},
		{RegexesToIgnore: []string{" ", `\n`}}} {
		for _, p := range pairs {
			out = append(out, refCase{Predictions: []string{p[0]}, References: []string{p[1]}, Options: o})
		}
	}
	// lm-eval's several-targets path: the prediction repeated against
	// each gold answer, scored as the mean.
	out = append(out, refCase{Predictions: []string{"paris", "paris", "paris"}, References: []string{"Paris", "paris", "City of Light"},
		Options: opts{IgnoreCase: true, IgnorePunctuation: true}})
	out = append(out, refCase{Predictions: []string{"x", "x"}, References: []string{"a", "b"}})
	// np.char.lower keeps the item size: "İ" grows and is cut.
	out = append(out, refCase{Predictions: []string{"İa", "İa"}, References: []string{"i̇a", "i̇"}, Options: opts{IgnoreCase: true}})
	out = append(out, refCase{Predictions: []string{"İa", "xxxxxx"}, References: []string{"i̇a", "i̇a"}, Options: opts{IgnoreCase: true}})
	out = append(out, refCase{Predictions: []string{"Aİ\x00"}, References: []string{"ai"}, Options: opts{IgnoreCase: true, RegexesToIgnore: []string{`\x00`}}})
	// An empty regexes_to_ignore leaves Python lists, compared whole.
	out = append(out, refCase{Predictions: []string{"a\x00"}, References: []string{"a"}, Options: opts{RegexesToIgnore: []string{}}})
	out = append(out, refCase{Predictions: []string{"a", "b"}, References: []string{"a", "c"}, Options: opts{RegexesToIgnore: []string{}}})
	return out
}

type refOut struct {
	Python string    `json:"python"`
	NumPy  string    `json:"numpy"`
	Scores []float64 `json:"scores"`
}

func check(t *testing.T, ref refOut, source string) {
	cs := cases()
	if len(ref.Scores) != len(cs) {
		t.Fatalf("%s: %d scores for %d cases (regenerate: go test ./scoring/exactmatch -run TestAgainstPython -update)", source, len(ref.Scores), len(cs))
	}
	for i, c := range cs {
		m, err := New(Options{RegexesToIgnore: c.Options.RegexesToIgnore, IgnoreCase: c.Options.IgnoreCase,
			IgnorePunctuation: c.Options.IgnorePunctuation, IgnoreNumbers: c.Options.IgnoreNumbers})
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Score(c.Predictions, c.References)
		if err != nil {
			t.Fatal(err)
		}
		if got != ref.Scores[i] {
			t.Errorf("%s: %q vs %q %+v: Go %v, Python %v", source, c.Predictions, c.References, c.Options, got, ref.Scores[i])
		}
	}
}

// TestAgainstGolden compares with the scores testdata/reference.py
// recorded in testdata/expected.json.
func TestAgainstGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref refOut
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	check(t, ref, "expected.json (CPython "+ref.Python+", NumPy "+ref.NumPy+")")
}

// TestAgainstPython runs testdata/reference.py (evaluate's exact_match
// code path, with NumPy) on this machine's python3.
func TestAgainstPython(t *testing.T) {
	var ref refOut
	pyref.Run(t, "testdata/reference.py", map[string]any{"cases": cases()}, &ref, "numpy")
	check(t, ref, "python3 "+ref.Python+", NumPy "+ref.NumPy)
	if *update {
		b, _ := json.Marshal(ref)
		if err := os.WriteFile("testdata/expected.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRefusesLookalikes(t *testing.T) {
	if _, err := New(Options{RegexesToIgnore: []string{"(?i)x"}}); err == nil {
		t.Fatal("IGNORECASE pattern accepted")
	}
}
