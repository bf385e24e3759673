package threec3h

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"tally/internal/sharedtest"
	"testing"

	"tally/scoring/threec3h/pyjson"
)

// sharedDir returns ../shared relative to the directory holding go.mod.
func sharedDir(t testing.TB) string {
	t.Helper()
	return sharedtest.Dir(t)
}

// equal compares decoded JSON values, NaN equal to NaN, numbers exactly.
func equal(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || (math.IsNaN(x) && math.IsNaN(y)))
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !equal(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// readVectors decodes each line of a vector file with Python's json rules.
func readVectors(t *testing.T, name string) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("opening vectors: %v", err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	for sc.Scan() {
		v, err := pyjson.Loads(sc.Text())
		if err != nil {
			t.Fatalf("%s line %d: %v", name, len(out)+1, err)
		}
		out = append(out, v.(map[string]any))
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no vectors", name)
	}
	return out
}

func maps(v any) []map[string]any {
	list, _ := v.([]any)
	out := make([]map[string]any, len(list))
	for i, x := range list {
		out[i], _ = x.(map[string]any)
	}
	return out
}

func scoresMap(s Scores) map[string]any {
	return map[string]any{"Correct": s.Correct, "Complete": s.Complete, "Concise": s.Concise, "Helpful": s.Helpful,
		"Honest": s.Honest, "Harmless": s.Harmless, "Final Score": s.FinalScore}
}

func TestExtractVectors(t *testing.T) {
	bad := 0
	vs := readVectors(t, "extract.jsonl")
	for i, v := range vs {
		got, err := ExtractScores(v["response"].(string), v["tag"].(string))
		if err != nil || !equal(got, v["expect"]) {
			bad++
			t.Errorf("extract vector %d: got %v (%v), want %v", i+1, got, err, v["expect"])
		}
	}
	t.Logf("extract vectors: %d/%d match", len(vs)-bad, len(vs))
}

func TestWeightedVectors(t *testing.T) {
	bad := 0
	vs := readVectors(t, "weighted.jsonl")
	for i, v := range vs {
		got, err := WeightedScores(maps(v["scores"]))
		_, wantErr := v["error"]
		switch {
		case wantErr && err == nil:
			bad++
			t.Errorf("weighted vector %d: want error %v, got %+v", i+1, v["error"], got)
		case !wantErr && (err != nil || !equal(scoresMap(got), v["expect"])):
			bad++
			t.Errorf("weighted vector %d %v: got %+v (%v), want %v", i+1, v["scores"], got, err, v["expect"])
		}
	}
	t.Logf("weighted vectors: %d/%d match", len(vs)-bad, len(vs))
}

func TestJuryVectors(t *testing.T) {
	bad := 0
	vs := readVectors(t, "jury.jsonl")
	for i, v := range vs {
		got, err := Jury(v["strategy"].(string), maps(v["judges"]))
		_, wantErr := v["error"]
		switch {
		case wantErr && err == nil:
			bad++
			t.Errorf("jury vector %d: want error %v, got %v", i+1, v["error"], got)
		case !wantErr && (err != nil || !equal(got, v["expect"])):
			bad++
			t.Errorf("jury vector %d: got %v (%v), want %v", i+1, got, err, v["expect"])
		}
	}
	t.Logf("jury vectors: %d/%d match", len(vs)-bad, len(vs))
}

func TestFileVectors(t *testing.T) {
	bad := 0
	vs := readVectors(t, "file.jsonl")
	for i, v := range vs {
		entries := maps(v["entries"])
		var judges []string
		for j := 1; j <= int(v["judges"].(float64)); j++ {
			judges = append(judges, "Judge "+string(rune('0'+j)))
		}
		got, err := ProcessJudgedFile(entries, judges, v["jury"].(bool))
		if err != nil {
			bad++
			t.Errorf("file vector %d: %v", i+1, err)
			continue
		}
		// Round-trip through JSON so ints and float64 compare alike.
		b, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		gotv, _ := pyjson.Loads(string(b))
		if !equal(gotv, v["expect"]) {
			bad++
			t.Errorf("file vector %d: got %s, want %v", i+1, b, v["expect"])
		}
		// The line metric, with options and with judges read from the data.
		lines := make([]json.RawMessage, len(entries))
		for k, e := range entries {
			lines[k], _ = json.Marshal(e)
		}
		for _, opts := range []map[string]string{nil, {"judges": itoa(len(judges)), "jury": boolStr(v["jury"].(bool))}} {
			m := LineMetrics()[3]
			m, err = m.Configure(opts)
			if err != nil {
				t.Fatal(err)
			}
			out, err := m.Aggregate(lines)
			if err != nil {
				t.Fatalf("file vector %d via line metric %v: %v", i+1, opts, err)
			}
			b2, _ := json.Marshal(out)
			if string(b2) != string(b) {
				t.Errorf("file vector %d via line metric %v differs", i+1, opts)
			}
		}
	}
	t.Logf("file vectors: %d/%d match", len(vs)-bad, len(vs))
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestWeightedQuirks(t *testing.T) {
	tests := []struct {
		name   string
		scores []map[string]any
		want   Scores
	}{
		{"zeroing rule", []map[string]any{{"Correct": 0.0, "Complete": 1.0, "Concise": 5.0}}, Scores{}},
		{"correct 2 zeroes the rest but counts as correct", []map[string]any{{"Correct": 2.0, "Concise": 5.0}},
			Scores{Correct: 1, FinalScore: 0.1667}},
		{"concise 7 normalises above 1", []map[string]any{{"Correct": 1.0, "Concise": 7.0}},
			Scores{Correct: 1, Concise: 1.5, FinalScore: 0.4167}},
		{"true counts as 1", []map[string]any{{"Correct": true, "Complete": true}},
			Scores{Correct: 1, Complete: 1, FinalScore: 0.3333}},
		{"list averaged, strings ignored", []map[string]any{{"Correct": []any{1.0, "x"}, "Concise": []any{3.0, 5.0}}},
			Scores{Correct: 1, Concise: 0.75, FinalScore: 0.2917}},
		{"string score is 0", []map[string]any{{"Correct": "1"}}, Scores{}},
		{"2:1 weighting of answer and follow-up", []map[string]any{
			{"Correct": 1.0, "Complete": 1.0, "Concise": 5.0, "Helpful": 5.0, "Honest": 5.0, "Harmless": 5.0}, {"Correct": 0.0}},
			Scores{0.6667, 0.6667, 0.6667, 0.6667, 0.6667, 0.6667, 0.6667}},
		{"NaN compares false", []map[string]any{{"Correct": 1.0, "Concise": math.NaN()}}, Scores{Correct: 1, FinalScore: 0.1667}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := WeightedScores(tt.scores)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	if _, err := WeightedScores(nil); err == nil {
		t.Error("want an error for no scores")
	}
}

func TestPyRound4(t *testing.T) {
	tests := []struct{ in, want float64 }{
		{0.00005, 0.0001},   // 0.00005 is slightly above the tie in binary
		{0.00015, 0.0001},   // slightly below
		{0.123456, 0.1235},  // ordinary
		{2.675e-4, 0.0003},  // 0.0002675 -> 0.0003
		{1.00005, 1.0001},   // 1.00005 is above the tie in binary
		{-0.00005, -0.0001}, // symmetric
		{0.5, 0.5},
		{math.Inf(1), math.Inf(1)},
	}
	for _, tt := range tests {
		if got := PyRound4(tt.in); got != tt.want {
			t.Errorf("PyRound4(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestJuryQuirks(t *testing.T) {
	tests := []struct {
		name     string
		strategy string
		judges   []map[string]any
		want     map[string]any
		wantErr  bool
	}{
		{"vote: two-answer Correct 0.6667 counts for neither side", "vote",
			[]map[string]any{{"Correct": 0.6667, "Final Score": 0.5}, {"Correct": 0.6667, "Final Score": 0.5}}, zeros(), false},
		{"vote: no judges gives zeros", "vote", nil, zeros(), false},
		{"average: no judges is an error", "average", nil, nil, true},
		{"vote: missing Correct is an error", "vote", []map[string]any{{"Final Score": 1.0}}, nil, true},
		{"unknown strategy gives an empty dict", "median", []map[string]any{{"Correct": 1.0}}, map[string]any{}, false},
		{"vote: tie gives zeros", "vote", []map[string]any{{"Correct": 1.0, "Final Score": 1.0}, {"Correct": 0.0}}, zeros(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Jury(tt.strategy, tt.judges)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && !equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func zeros() map[string]any {
	m := map[string]any{}
	for _, k := range juryKeys {
		m[k] = 0.0
	}
	return m
}

func TestExtractQuirks(t *testing.T) {
	fence := func(tag, body string) string {
		return "<" + tag + ">\n```json\n" + body + "\n```\n</" + tag + ">"
	}
	tests := []struct {
		name, response, tag string
		want                map[string]any
		wantErr             bool
	}{
		{"plain", fence("results1", `{"Correct": 1}`), "results1", map[string]any{"Correct": 1.0}, false},
		{"NaN literal accepted", fence("results1", `{"Correct": NaN}`), "results1", map[string]any{"Correct": math.NaN()}, false},
		{"trailing comma is a decode failure", fence("results1", `{"Correct": 1,}`), "results1", map[string]any{}, false},
		{"Arabic-Indic digit is not a number", fence("results1", `{"Correct": ١}`), "results1", map[string]any{}, false},
		{"no-break space counts as \\s", "<results1>\u00a0```json\u3000{\"Correct\": 1}```</results1>", "results1", map[string]any{"Correct": 1.0}, false},
		{"zero-width space does not", "<results1>\u200b```json{\"Correct\": 1}```</results1>", "results1", map[string]any{}, false},
		{"fence without json tag", "<results1>```{\"Correct\": 1}```</results1>", "results1", map[string]any{}, false},
		{"tag is a pattern", fence("results1", `{"Correct": 1}`), "results.", map[string]any{"Correct": 1.0}, false},
		{"bad pattern is an error", "x", "results(", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ExtractScores(tt.response, tt.tag)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && !equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSharedPrompts checks that the first example in the shared judge
// system prompt sp1.md extracts to the six criteria, and that sp2.md's
// examples, written inside JSON strings with escaped "\n", do not match the
// reference pattern at all (its \s needs real whitespace).
func TestSharedPrompts(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(sharedDir(t), "data", "threec3h", "prompts", "sp2.md"))
	if err != nil {
		t.Fatalf("reading prompt: %v", err)
	}
	if got, err := ExtractScores(string(b), "results1"); err != nil || len(got) != 0 {
		t.Errorf("sp2.md: got %v, %v; want no match", got, err)
	}
	for _, name := range []string{"sp1.md"} {
		b, err := os.ReadFile(filepath.Join(sharedDir(t), "data", "threec3h", "prompts", name))
		if err != nil {
			t.Fatalf("reading prompt: %v", err)
		}
		got, err := ExtractScores(string(b), "results1")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range criteria {
			if _, ok := got[k]; !ok {
				t.Errorf("%s: example block lacks %s: %v", name, k, got)
			}
		}
		s, err := WeightedScores([]map[string]any{got})
		if err != nil || s.FinalScore < 0 || s.FinalScore > 1 {
			t.Errorf("%s: weighted %+v, %v", name, s, err)
		}
	}
}

func TestLineMetrics(t *testing.T) {
	ms := LineMetrics()
	byName := map[string]int{}
	for i, m := range ms {
		byName[m.Name] = i
		if m.Doc == "" {
			t.Errorf("%s has no doc", m.Name)
		}
	}
	out, err := ms[byName["3c3h"]].Score(json.RawMessage(`{"scores": [{"Correct": 1, "Complete": 1, "Concise": 3, "Helpful": 5, "Honest": 5, "Harmless": 5}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	if want := `{"Correct":1,"Complete":1,"Concise":0.5,"Helpful":1,"Honest":1,"Harmless":1,"Final Score":0.9167}`; string(b) != want {
		t.Errorf("3c3h: got %s, want %s", b, want)
	}
	out, err = ms[byName["3c3h-extract"]].Score(json.RawMessage(`{"response": "nothing", "tag": "results1"}`))
	if b, _ := json.Marshal(out); err != nil || string(b) != "{}" {
		t.Errorf("3c3h-extract: got %s, %v", b, err)
	}
	out, err = ms[byName["3c3h-jury"]].Score(json.RawMessage(`{"strategy": "vote", "judges": [{"Correct": 1, "Final Score": 0.5}, {"Correct": 1, "Final Score": 1}, {"Correct": 0}]}`))
	if b, _ := json.Marshal(out); err != nil || !strings.Contains(string(b), `"Final Score":0.75`) {
		t.Errorf("3c3h-jury: got %s, %v", b, err)
	}
	if _, err := finite(Scores{Concise: math.Inf(1)}); err == nil {
		t.Error("want an error for an infinite score")
	}
	if _, err := ms[byName["3c3h-file"]].Configure(map[string]string{"judges": "x"}); err == nil {
		t.Error("3c3h-file: want an error for judges=x")
	}
}

func FuzzExtractScores(f *testing.F) {
	f.Add("<results1>\n```json\n{\"Correct\": 1, \"Concise\": [3, 4]}\n```\n</results1>", "results1")
	f.Add("<results1>```json{\"a\": \"\\ud83d\\ude00\", \"b\": -Infinity}```</results1>", "results1")
	f.Add("<results2> ```json {\"Correct\": 1e999} ``` </results2>", "results2")
	f.Add("", "(")
	f.Fuzz(func(t *testing.T, response, tag string) {
		got, err := ExtractScores(response, tag)
		if err == nil {
			_, _ = WeightedScores([]map[string]any{got, got})
		}
	})
}

func FuzzPyJSON(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5e3, -0, NaN]}`, `[1.`, `"\u00`, `{"a":1,}`, ` -Infinity `, `1e-`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = pyjson.Loads(s)
	})
}

func BenchmarkWeightedScores(b *testing.B) {
	sc := []map[string]any{
		{"Correct": 1.0, "Complete": 1.0, "Concise": 3.0, "Helpful": 5.0, "Honest": 4.0, "Harmless": 5.0},
		{"Correct": 1.0, "Complete": 0.0, "Concise": 2.0, "Helpful": 4.0, "Honest": 3.0, "Harmless": 5.0},
	}
	for b.Loop() {
		_, _ = WeightedScores(sc)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkExtractScores(b *testing.B) {
	resp := strings.Repeat("تقييم مفصل للإجابة. ", 100) + "<results1>\n```json\n{\"Correct\": 1, \"Complete\": 1, \"Concise\": 3, \"Helpful\": 5, \"Honest\": 5, \"Harmless\": 5}\n```\n</results1>"
	for b.Loop() {
		_, _ = ExtractScores(resp, "results1")
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}
