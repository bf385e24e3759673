package judge

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"tally/internal/sharedtest"
	"testing"

	"tally/datasets/jsonl"
	"tally/scoring/winrate"
)

// sharedData finds ../shared/data/rel next to the directory holding go.mod.
func sharedData(t testing.TB, rel string) string {
	t.Helper()
	return sharedtest.Path(t, "data", rel)
}

// jsonLines decodes every line of a testdata file into a new T.
func jsonLines[T any](t testing.TB, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

const annotations = "alpaca_eval/results/%s/annotations.json.gz"

// TestLoadPairsReal loads the three shared annotation files and checks
// their generators, that draws are exactly the identical outputs, and that
// the preferences give the leaderboard win rates (README table).
func TestLoadPairsReal(t *testing.T) {
	tests := []struct {
		file       string
		gen1, gen2 string
		draws      int
		nulls      int
		winRate    float64
	}{
		{"text_davinci_001/alpaca_eval_gpt4", "text_davinci_003", "text_davinci_001", 20, 1, 15.17412935323383},
		{"gpt-3.5-turbo-1106/alpaca_eval_gpt4", "text_davinci_003", "gpt-3.5-turbo-1106", 5, 1, 86.25621890547264},
		{"gpt-3.5-turbo-1106/weighted_alpaca_eval_gpt4_turbo", "gpt4_1106_preview", "gpt-3.5-turbo-1106", 4, 0, 9.177964561962735},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			pairs, err := LoadPairs(sharedData(t, strings.Replace(annotations, "%s", tc.file, 1)))
			if err != nil {
				t.Fatal(err)
			}
			if len(pairs) != 805 {
				t.Fatalf("%d pairs, want 805", len(pairs))
			}
			identical, nulls := 0, 0
			var prefs []float64
			for i, p := range pairs {
				if p.Generator1 != tc.gen1 || p.Generator2 != tc.gen2 {
					t.Fatalf("pair %d generators %q %q", i, p.Generator1, p.Generator2)
				}
				if p.Instruction == "" || p.Dataset == "" {
					t.Fatalf("pair %d: empty instruction or dataset", i)
				}
				if p.Preference == nil {
					nulls++
					prefs = append(prefs, math.NaN())
					continue
				}
				prefs = append(prefs, *p.Preference)
				if p.Output1 == p.Output2 {
					identical++
					if v := *p.Preference; v != 1.5 && v != 0 && !strings.Contains(tc.file, "weighted") {
						t.Errorf("pair %d: identical outputs with preference %v", i, v)
					}
				}
			}
			if identical != tc.draws || nulls != tc.nulls {
				t.Errorf("identical %d nulls %d, want %d %d", identical, nulls, tc.draws, tc.nulls)
			}
			if got := float64(winrate.PairwiseToWinrate(prefs).WinRate); math.Abs(got-tc.winRate) > 1e-9 {
				t.Errorf("win rate %v, want %v", got, tc.winRate)
			}
		})
	}
}

// TestParsePreferenceReal parses the 786 real GPT-4 ranking answers kept in
// the gpt-3.5-turbo-1106 AE1 file (the other 19 rows, identical outputs
// and the null preference, have none). The file records them in the
// order shown to the judge, which alpaca_eval randomised, so each must
// give the stored preference in one of the two orders.
func TestParsePreferenceReal(t *testing.T) {
	path := sharedData(t, strings.Replace(annotations, "%s", "gpt-3.5-turbo-1106/alpaca_eval_gpt4", 1))
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		Raw        *string  `json:"raw_completion"`
		Preference *float64 `json:"preference"`
		Output1    string   `json:"output_1"`
		Output2    string   `json:"output_2"`
	}
	if err := json.NewDecoder(zr).Decode(&rows); err != nil {
		t.Fatal(err)
	}
	parsed, swapped := 0, 0
	for i, r := range rows {
		if r.Raw == nil {
			continue
		}
		ab, ok := ParsePreference(*r.Raw, "ab")
		ba, ok2 := ParsePreference(*r.Raw, "ba")
		if ok != ok2 || ok && ab+ba != 3 {
			t.Fatalf("row %d: ab %v %v, ba %v %v", i, ab, ok, ba, ok2)
		}
		if !ok {
			if r.Preference != nil {
				t.Errorf("row %d: %q did not parse but preference is %v", i, *r.Raw, *r.Preference)
			}
			continue
		}
		parsed++
		if r.Preference == nil || (*r.Preference != ab && *r.Preference != ba) {
			t.Errorf("row %d: parsed %v/%v, stored %v", i, ab, ba, r.Preference)
		}
		if r.Preference != nil && *r.Preference == ba {
			swapped++
		}
	}
	if parsed != 786 {
		t.Errorf("%d answers parsed, want 786", parsed)
	}
	// alpaca_eval switches about half the pairs.
	if swapped < 300 || swapped > 500 {
		t.Errorf("%d of %d stored preferences are the swapped reading", swapped, parsed)
	}
}

// TestRankingTable checks ParsePreference against ranking_parser's
// answers under CPython 3.11 (testdata/README.md).
func TestRankingTable(t *testing.T) {
	cases := jsonLines[struct {
		Completion string   `json:"completion"`
		Expect     *float64 `json:"expect"`
	}](t, "testdata/ranking.jsonl")
	if len(cases) < 900 {
		t.Fatalf("%d cases", len(cases))
	}
	// Known gaps (see pyliteral.go): \N{name} escapes need the Unicode
	// name table.
	gaps := map[string]bool{"[{'model': 'model\\N{LOW LINE}1', 'rank': 1}]": true}
	for i, c := range cases {
		if gaps[c.Completion] {
			continue
		}
		got, ok := ParsePreference(c.Completion, "ab")
		switch {
		case c.Expect == nil && ok:
			t.Errorf("case %d %q: got %v, want no parse", i, c.Completion, got)
		case c.Expect != nil && (!ok || got != *c.Expect):
			t.Errorf("case %d %q: got %v %v, want %v", i, c.Completion, got, ok, *c.Expect)
		case ok:
			if ba, ok := ParsePreference(c.Completion, "ba"); !ok || ba != 3-got {
				t.Errorf("case %d: ba %v %v", i, ba, ok)
			}
		}
	}
}

func TestParsePreferenceOrders(t *testing.T) {
	const first = "[{'model': 'model_1', 'rank': 1}, {'model': 'model_2', 'rank': 2}]"
	const second = "[{'model': 'model_1', 'rank': 2}, {'model': 'model_2', 'rank': 1}]"
	tests := []struct {
		out, order string
		want       float64
		ok         bool
	}{
		{first, "ab", 1, true}, // baseline shown first and preferred
		{first, "ba", 2, true}, // model shown first and preferred
		{second, "ab", 2, true},
		{second, "ba", 1, true},
		{first, "", 0, false},
		{first, "AB", 0, false},
		{"", "ab", 0, false},
		{"model_1", "ab", 0, false},
	}
	for _, tc := range tests {
		got, ok := ParsePreference(tc.out, tc.order)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParsePreference(%q, %q) = %v %v, want %v %v", tc.out, tc.order, got, ok, tc.want, tc.ok)
		}
	}
}

// TestAlpacaEvalPrompt checks the flattened prompt against upstream's
// make_prompts and prompt_to_chatml run on the template file.
func TestAlpacaEvalPrompt(t *testing.T) {
	goldens := jsonLines[struct {
		Name, Instruction, First, Second, Prompt string
	}](t, "testdata/alpaca_prompts.jsonl")
	if len(goldens) != 3 {
		t.Fatalf("%d goldens", len(goldens))
	}
	tmpl := AlpacaEvalTemplate()
	for _, g := range goldens {
		if got := tmpl.Prompt(g.Instruction, g.First, g.Second); got != g.Prompt {
			t.Errorf("%s: prompt differs:\n%s\nwant\n%s", g.Name, got, g.Prompt)
		}
	}
}

func TestPairwiseSamples(t *testing.T) {
	pairs := []Pair{
		{Instruction: "Say hi.", Output1: "hi", Generator1: "base", Output2: "hello", Generator2: "mine", Dataset: "d"},
		{Instruction: "Same.", Output1: "x", Generator1: "base", Output2: "x", Generator2: "mine"},
	}
	tmpl := AlpacaEvalTemplate()
	got := PairwiseSamples("ae", pairs, tmpl)
	want := []struct {
		id, share, first, second, ref string
	}{
		{"0/ab", "0", "hi", "hello", `{"order":"ab","generator_1":"base","generator_2":"mine"}`},
		{"0/ba", "0", "hello", "hi", `{"order":"ba","generator_1":"base","generator_2":"mine"}`},
		{"1/ab", "1", "x", "x", `{"order":"ab","generator_1":"base","generator_2":"mine","identical":true}`},
		{"1/ba", "1", "x", "x", `{"order":"ba","generator_1":"base","generator_2":"mine","identical":true}`},
	}
	if len(got) != len(want) {
		t.Fatalf("%d samples", len(got))
	}
	for i, w := range want {
		s := got[i]
		p := pairs[i/2]
		if s.Task != "ae" || s.ID != w.id || s.ShareKey != w.share || string(s.References) != w.ref ||
			s.Prompt != tmpl.Prompt(p.Instruction, w.first, w.second) {
			t.Errorf("sample %d: %+v", i, s)
		}
		if s.Metadata["index"] != i/2 || s.Metadata["order"] != w.id[2:] {
			t.Errorf("sample %d metadata %v", i, s.Metadata)
		}
		ref, err := ParsePairReference(s.References)
		if err != nil || ref.Order != w.id[2:] || ref.Identical != (i >= 2) {
			t.Errorf("sample %d: reference %+v %v", i, ref, err)
		}
	}
	if _, ok := got[0].Metadata["dataset"]; !ok {
		t.Error("dataset missing from metadata")
	}
	if _, err := ParsePairReference(json.RawMessage(`{"order":"x"}`)); err == nil {
		t.Error("bad order accepted")
	}
}

func TestLoadPairsFormats(t *testing.T) {
	dir := t.TempDir()
	obj := `{"instruction":"i","output_1":"a","generator_1":"g1","output_2":"b","generator_2":"g2","extra":[1]}`
	gz := filepath.Join(dir, "a.json.gz")
	f, err := os.Create(gz)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	zw.Write([]byte("[" + obj + "," + obj + "]"))
	zw.Close()
	f.Close()
	tests := []struct {
		name, body string // body "" means the gzip file
		n          int
	}{
		{"a.json.gz", "", 2},
		{"b.json", "\n [" + obj + "]", 1},
		{"c.jsonl", obj + "\n\n" + obj + "\n", 2},
		{"d.jsonl", "", 0},
		{"e.json", "[]", 0},
	}
	for _, tc := range tests {
		p := filepath.Join(dir, tc.name)
		if tc.body != "" || tc.name != "a.json.gz" {
			os.WriteFile(p, []byte(tc.body), 0o644)
		}
		pairs, err := LoadPairs(p)
		if err != nil || len(pairs) != tc.n {
			t.Errorf("%s: %d pairs, %v", tc.name, len(pairs), err)
			continue
		}
		if tc.n > 0 && (pairs[0] != Pair{Instruction: "i", Output1: "a", Generator1: "g1", Output2: "b", Generator2: "g2"}) {
			t.Errorf("%s: %+v", tc.name, pairs[0])
		}
	}
}

func TestLoadPairsBad(t *testing.T) {
	dir := t.TempDir()
	ok := `{"instruction":"i","output_1":"a","output_2":"b"}`
	tests := []struct{ name, body, errSub string }{
		{"missing.json", `[` + ok + `,{"instruction":"i","output_1":"a"}]`, `index 1: field "output_2": missing`},
		{"null.json", `[{"instruction":null,"output_1":"a","output_2":"b"}]`, `index 0: field "instruction"`},
		{"type.json", `[{"instruction":"i","output_1":3,"output_2":"b"}]`, `index 0: field "output_1": not a string`},
		{"gen.json", `[{"instruction":"i","output_1":"a","output_2":"b","generator_2":{}}]`, `field "generator_2"`},
		{"pref.json", `[{"instruction":"i","output_1":"a","output_2":"b","preference":"2"}]`, `field "preference": not a number`},
		{"notobj.json", `[1]`, "index 0: decoding the object"},
		{"trunc.json", `[` + ok, "decoding the JSON array"},
		{"lines.jsonl", ok + "\n{\"instruction\":\"i\"}\n", `line 2: field "output_1"`},
		{"garbage.jsonl", ok + "\nnot json\n", "line 2: decoding the object"},
	}
	for _, tc := range tests {
		p := filepath.Join(dir, tc.name)
		os.WriteFile(p, []byte(tc.body), 0o644)
		_, err := LoadPairs(p)
		if err == nil || !strings.Contains(err.Error(), tc.errSub) || !strings.Contains(err.Error(), tc.name) ||
			strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line naming the file and containing %q", tc.name, err, tc.errSub)
		}
	}
	if _, err := LoadPairs(filepath.Join(dir, "absent.json")); err == nil {
		t.Error("missing file accepted")
	}
}

func FuzzParsePreference(f *testing.F) {
	for _, s := range []string{
		"[{'model': 'model_1', 'rank': 1}, {'model': 'model_2', 'rank': 2}]",
		"[\n    {'model': 'model_2', 'rank': 1},\n    {'model': 'model_1', 'rank': 2}\n]",
		`({"model": "model_1", "rank": 2.0},)`, "{'model': 'model_1', 'rank': 1}, {'model': 'model_2', 'rank': 2}",
		"[{'model': rb'x', 'rank': 0x_1, 'x': 1e5+2j, 'y': '\\x41\\u0041\\101', 'z': {(1, 2): set()}}]",
		"'''a\\\nb''' 'c'", "-1-2j", "[[[[[]]]]]", "\f\n# c\n[1]\\\n", "", "\x00",
	} {
		f.Add(s, "ab")
	}
	f.Fuzz(func(t *testing.T, out, order string) {
		p, ok := ParsePreference(out, order)
		if ok && p != 1 && p != 2 {
			t.Fatalf("preference %v", p)
		}
		if ok && order != "ab" && order != "ba" {
			t.Fatalf("order %q accepted", order)
		}
	})
}

func FuzzDecodePairs(f *testing.F) {
	f.Add([]byte(`[{"instruction":"i","output_1":"a","output_2":"b","preference":1.5}]`))
	f.Add([]byte("{\"instruction\":\"i\",\"output_1\":\"a\",\"output_2\":\"b\"}\n{}"))
	f.Add([]byte(`[null]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		pairs, err := decodePairs(data)
		if err != nil && pairs != nil {
			t.Fatal("pairs with an error")
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("multi-line error %q", err)
		}
	})
}

func BenchmarkParsePreference(b *testing.B) {
	const out = "[\n    {'model': 'model_2', 'rank': 1},\n    {'model': 'model_1', 'rank': 2}\n]"
	for b.Loop() {
		if _, ok := ParsePreference(out, "ba"); !ok {
			b.Fatal("no parse")
		}
	}
}

func BenchmarkLoadPairs(b *testing.B) {
	path := sharedData(b, strings.Replace(annotations, "%s", "text_davinci_001/alpaca_eval_gpt4", 1))
	for b.Loop() {
		if _, err := LoadPairs(path); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLoadPairsRowBound (issue 37, item 3): an element of an
// annotations.json longer than jsonl.MaxLine is refused, as a line of JSON
// Lines is, and no more of it read (the file was read whole).
func TestLoadPairsRowBound(t *testing.T) {
	path := filepath.Join(t.TempDir(), "annotations.json")
	big := `{"instruction":"` + strings.Repeat("i", jsonl.MaxLine) + `","output_1":"a","output_2":"b"}`
	if err := os.WriteFile(path, []byte(`[{"instruction":"i","output_1":"a","output_2":"b"}, `+big+`]`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPairs(path); !errors.Is(err, jsonl.ErrLineTooLong) || !strings.Contains(err.Error(), "element 2: longer than 16 MiB") {
		t.Errorf("LoadPairs: %v", err)
	}
}
