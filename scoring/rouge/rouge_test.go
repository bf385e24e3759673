package rouge

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"tally/internal/sharedtest"
	"testing"
)

// sharedDir returns ../shared relative to the directory holding go.mod.
func sharedDir(t testing.TB) string {
	t.Helper()
	return sharedtest.Dir(t)
}

// readJSONL calls fn for each line of a JSONL file, gunzipping .gz files.
func readJSONL(t testing.TB, path string, fn func([]byte)) {
	t.Helper()
	sharedtest.ReadLines(t, path, fn)
}

type want map[string][3]float64

func (w want) check(t *testing.T, got Scores) bool {
	t.Helper()
	g := map[string]Measure{"rouge1": got.Rouge1, "rouge2": got.Rouge2, "rougeL": got.RougeL, "rougeLsum": got.RougeLsum}
	ok := true
	for k, v := range w {
		m := g[k]
		if m.Precision != v[0] || m.Recall != v[1] || m.FMeasure != v[2] {
			ok = false
		}
	}
	return ok
}

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"The quick, brown FOX!", []string{"the", "quick", "brown", "fox"}},
		{"café", []string{"caf"}},                                     // non-ASCII letters split words
		{"naïve", []string{"na", "ve"}},                               // ...even in the middle
		{"İx", []string{"i", "x"}},                                    // İ lowers to i + U+0307, a separator
		{"\u212aelvin", []string{"kelvin"}},                           // KELVIN SIGN lowers to k
		{"snake_case-word's", []string{"snake", "case", "word", "s"}}, // underscore is a separator
		{"3.14 ²", []string{"3", "14"}},                               // superscripts are dropped
		{"a\nb\r\nc", []string{"a", "b", "c"}},
		{"\xff\xfeab", []string{"ab"}}, // invalid UTF-8 bytes are separators
	}
	for _, tt := range tests {
		if got := Tokenize(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Tokenize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestQuirks(t *testing.T) {
	tests := []struct {
		name      string
		pred, ref string
		want      Scores
	}{
		{"both empty", "", "", Scores{}},
		{"empty prediction: rouge-n precision divides by max(0,1)", "", "a b", Scores{}},
		{"single token, no bigrams", "a", "a", Scores{
			Rouge1: Measure{1, 1, 1}, Rouge2: Measure{}, RougeL: Measure{1, 1, 1}, RougeLsum: Measure{1, 1, 1}}},
		{"bigrams span newlines; whitespace-only lines are sentences without tokens", "a\n \nb", "a b", Scores{
			Rouge1: Measure{1, 1, 1}, Rouge2: Measure{1, 1, 1}, RougeL: Measure{1, 1, 1},
			RougeLsum: Measure{1, 1, 1}}},
		{"rougeLsum clips repeated tokens", "a a", "a", Scores{
			Rouge1: Measure{0.5, 1, 2 * 0.5 * 1 / 1.5}, Rouge2: Measure{0, 0, 0},
			RougeL: Measure{0.5, 1, 2 * 0.5 * 1 / 1.5}, RougeLsum: Measure{0.5, 1, 2 * 0.5 * 1 / 1.5}}},
		{"order matters for L not for 1", "b a", "a b", Scores{
			Rouge1: Measure{1, 1, 1}, Rouge2: Measure{0, 0, 0}, RougeL: Measure{0.5, 0.5, 0.5},
			RougeLsum: Measure{0.5, 0.5, 0.5}}},
		{"sentences joined by newline: Lsum unions per-sentence LCS", "b\na", "a b", Scores{
			Rouge1: Measure{1, 1, 1}, Rouge2: Measure{0, 0, 0}, RougeL: Measure{0.5, 0.5, 0.5},
			RougeLsum: Measure{1, 1, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Score(tt.pred, tt.ref); got != tt.want {
				t.Errorf("Score(%q, %q) =\n%+v\nwant\n%+v", tt.pred, tt.ref, got, tt.want)
			}
		})
	}
}

func TestScoreMultiPicksFirstBestPerType(t *testing.T) {
	// Per type, the first reference with the highest F wins, independently.
	got := ScoreMulti("a b c", []string{"a b", "c b a", "a b c"})
	if got.Rouge1 != (Measure{1, 1, 1}) || got.RougeL != (Measure{1, 1, 1}) {
		t.Errorf("ScoreMulti = %+v", got)
	}
	if got := ScoreMulti("a", nil); got != (Scores{}) {
		t.Errorf("ScoreMulti with no references = %+v, want zero", got)
	}
	if got, want := ScoreMulti("x y", []string{"x y"}), Score("x y", "x y"); got != want {
		t.Errorf("ScoreMulti single = %+v, want %+v", got, want)
	}
}

func TestRougeN(t *testing.T) {
	tests := []struct {
		pred, ref string
		n         int
		want      Measure
	}{
		{"a b c d", "a b c d", 3, Measure{1, 1, 1}},
		{"a b c d", "a b c e", 3, Measure{0.5, 0.5, 0.5}},
		{"a b", "a b", 3, Measure{}},
		{"a b", "a b", 0, Measure{}},
		{"a b", "a b", 2, Measure{1, 1, 1}},
	}
	for _, tt := range tests {
		if got := RougeN(tt.pred, tt.ref, tt.n); got != tt.want {
			t.Errorf("RougeN(%q, %q, %d) = %+v, want %+v", tt.pred, tt.ref, tt.n, got, tt.want)
		}
	}
}

// TestVectorsCases checks the reference's outputs on edge cases and
// random texts (testdata/rouge_cases.jsonl.gz, see testdata/README.md).
func TestVectorsCases(t *testing.T) {
	n, bad := 0, 0
	readJSONL(t, "testdata/rouge_cases.jsonl.gz", func(b []byte) {
		var c struct {
			Prediction string   `json:"prediction"`
			References []string `json:"references"`
			Multi      bool     `json:"multi"`
			Scores     want     `json:"scores"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("decoding vector: %v", err)
		}
		n++
		var got Scores
		if c.Multi {
			got = ScoreMulti(c.Prediction, c.References)
		} else {
			got = Score(c.Prediction, c.References[0])
		}
		if !c.Scores.check(t, got) {
			bad++
			if bad <= 5 {
				t.Errorf("mismatch pred=%q refs=%q\n got %+v\nwant %v", c.Prediction, c.References, got, c.Scores)
			}
		}
	})
	t.Logf("rouge cases: %d/%d match", n-bad, n)
	if bad > 0 || n == 0 {
		t.Errorf("rouge cases: %d mismatches of %d", bad, n)
	}
}

// TestVectorsShared checks the reference's outputs on the L-Eval
// prediction files in ../shared (testdata/rouge_shared.jsonl.gz).
func TestVectorsShared(t *testing.T) {
	shared := sharedDir(t)
	cache := map[string][][2]string{}
	load := func(file string) [][2]string {
		if v, ok := cache[file]; ok {
			return v
		}
		var rows [][2]string
		readJSONL(t, filepath.Join(shared, file), func(b []byte) {
			rows = append(rows, predGT(t, b))
		})
		cache[file] = rows
		return rows
	}
	n, bad := 0, 0
	readJSONL(t, "testdata/rouge_shared.jsonl.gz", func(b []byte) {
		var c struct {
			File   string `json:"file"`
			Index  int    `json:"index"`
			Scores want   `json:"scores"`
		}
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatalf("decoding vector: %v", err)
		}
		rows := load(c.File)
		if c.Index >= len(rows) {
			t.Fatalf("%s has %d rows, vector wants %d", c.File, len(rows), c.Index)
		}
		n++
		got := Score(rows[c.Index][0], rows[c.Index][1])
		if !c.Scores.check(t, got) {
			bad++
			if bad <= 5 {
				t.Errorf("%s[%d]: got %+v want %v", c.File, c.Index, got, c.Scores)
			}
		}
	})
	t.Logf("rouge shared: %d/%d match", n-bad, n)
	if bad > 0 || n == 0 {
		t.Errorf("rouge shared: %d mismatches of %d", bad, n)
	}
}

// predGT returns the prediction (first key containing "_pred", in file
// order, as L-Eval's auto_eval picks it) and "gt" of one prediction line.
func predGT(t testing.TB, b []byte) [2]string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		t.Fatalf("decoding prediction line: %v", err)
	}
	var pred, gt string
	found := false
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatalf("decoding prediction line: %v", err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("decoding prediction line: %v", err)
		}
		key := k.(string)
		switch {
		case key == "gt":
			_ = json.Unmarshal(v, &gt)
		case !found && strings.Contains(key, "_pred"):
			found = true
			_ = json.Unmarshal(v, &pred)
		}
	}
	return [2]string{pred, gt}
}

func FuzzTokenize(f *testing.F) {
	for _, s := range []string{"", "Hello, World", "İx\u212a", "a\nb\n\nc", "\xff", "ΑΣ σ"} {
		f.Add(s, "a b")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, tok := range Tokenize(a) {
			if tok == "" {
				t.Fatalf("empty token from %q", a)
			}
			for i := 0; i < len(tok); i++ {
				c := tok[i]
				if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
					t.Fatalf("token %q from %q has %q", tok, a, c)
				}
			}
		}
		s := Score(a, b)
		for _, m := range []Measure{s.Rouge1, s.Rouge2, s.RougeL, s.RougeLsum} {
			if m.Precision < 0 || m.Precision > 1 || m.Recall < 0 || m.Recall > 1 || m.FMeasure < 0 || m.FMeasure > 1 {
				t.Fatalf("out of range %+v for %q %q", m, a, b)
			}
		}
		if s2 := Score(a, a); len(Tokenize(a)) > 0 && s2.Rouge1.FMeasure != 1 {
			t.Fatalf("self-score %+v for %q", s2, a)
		}
	})
}

func benchPairs(b *testing.B) [][2]string {
	var pairs [][2]string
	file := filepath.Join(sharedDir(b), "data/leval/Predictions/ngram_eval/turbo-16k-0613/news_summ.pred.jsonl")
	readJSONL(b, file, func(l []byte) { pairs = append(pairs, predGT(b, l)) })
	file = filepath.Join(sharedDir(b), "data/leval/Predictions/ngram_eval/turbo-16k-0613/scientific_qa.pred.jsonl")
	readJSONL(b, file, func(l []byte) { pairs = append(pairs, predGT(b, l)) })
	return pairs
}

// BenchmarkScore scores the turbo-16k news_summ and scientific_qa
// predictions (171 pairs) per iteration; samples/s is reported.
func BenchmarkScore(b *testing.B) {
	pairs := benchPairs(b)
	b.ResetTimer()
	for b.Loop() {
		for _, p := range pairs {
			Score(p[0], p[1])
		}
	}
	b.ReportMetric(float64(len(pairs))*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}
