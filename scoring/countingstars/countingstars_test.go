package countingstars

import (
	"bufio"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"tally/internal/sharedtest"
	"testing"
)

// sharedDir returns ../shared relative to the directory holding go.mod.
func sharedDir(t testing.TB) string {
	t.Helper()
	return sharedtest.Dir(t)
}

func toFloats(v any) []float64 {
	list, _ := v.([]any)
	out := make([]float64, len(list))
	for i, x := range list {
		switch x := x.(type) {
		case Int:
			out[i] = float64(x)
		case float64:
			out[i] = x
		}
	}
	return out
}

func num(v any) float64 {
	switch x := v.(type) {
	case Int:
		return float64(x)
	case float64:
		return x
	}
	return math.NaN()
}

// TestScoreVectors runs whole reference "files" (get_data_EN/ZH calls) and
// compares the pivot cells and the pandas-2 mean exactly.
func TestScoreVectors(t *testing.T) {
	vs := readLines(t, "score.jsonl")
	match, bad := 0, 0
	for n, v := range vs {
		lang, test, m := v["lang"].(string), v["test_type"].(string), int(num(v["m"]))
		var cells []Cell
		var err error
		for _, l := range v["lines"].([]any) {
			line := l.(map[string]any)
			var s []float64
			s, err = Score(lang, test, m, line["answer"].(string), toFloats(line["reference_counting_results"]))
			if err != nil {
				break
			}
			col, cerr := Column(lang, test, num(line["context_size"]))
			if cerr != nil {
				t.Fatal(cerr)
			}
			for i, x := range s {
				cells = append(cells, Cell{i + 1, col, x})
			}
		}
		if _, wantErr := v["error"]; wantErr {
			if err == nil || errors.Is(err, ErrUnsupported) {
				bad++
				t.Errorf("score vector %d: want error %v, got %v", n+1, v["error"], err)
			} else {
				match++
			}
			continue
		}
		if err != nil {
			bad++
			t.Errorf("score vector %d: %v", n+1, err)
			continue
		}
		p := MakePivot(cells)
		ok := true
		want := v["pivot"].(map[string]any)
		if len(want) != len(p.Rows) {
			ok = false
		}
		for i, r := range p.Rows {
			row, _ := want[strconv.Itoa(r)].(map[string]any)
			for j, c := range p.Columns {
				if w := num(row[strconv.FormatInt(c, 10)]); w != p.Values[i][j] {
					ok = false
					t.Errorf("score vector %d: cell (%d, %d) = %v, want %v", n+1, r, c, p.Values[i][j], w)
				}
			}
		}
		if got := p.Mean(); got != num(v["mean_unrounded"]) || Round3(got) != num(v["mean"]) {
			ok = false
			t.Errorf("score vector %d: mean %v (%v), want %v (%v)", n+1, got, Round3(got), v["mean_unrounded"], v["mean"])
		}
		if ok {
			match++
		} else {
			bad++
		}
	}
	t.Logf("score vectors: %d/%d match", match, len(vs))
}

// TestPublishedStoneGPT4 reproduces the published GPT-4-Turbo
// Counting-Stars-(32-16) accuracy 0.979 (501/512) from the shared v1
// result file.
func TestPublishedStoneGPT4(t *testing.T) {
	f, err := os.Open(filepath.Join(sharedDir(t), "data", "counting_stars", "results", "stone_gpt4_32_16.txt"))
	if err != nil {
		t.Fatalf("opening result file: %v", err)
	}
	defer f.Close()
	var lines []json.RawMessage
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var rec struct {
			Answer    string    `json:"answer"`
			Reference []float64 `json:"reference_counting_results"`
			SkySize   float64   `json:"sky_size"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("decoding result line: %v", err)
		}
		b, _ := json.Marshal(map[string]any{"lang": "ZH", "test_type": "Acquisition", "m": 32,
			"answer": rec.Answer, "reference": rec.Reference, "context_size": rec.SkySize})
		lines = append(lines, b)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading result file: %v", err)
	}
	if len(lines) != 16 {
		t.Fatalf("got %d lines, want 16", len(lines))
	}
	out, err := LineMetrics()[0].Aggregate(lines)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	var res struct {
		Mean  float64                       `json:"mean"`
		Pivot map[string]map[string]float64 `json:"pivot"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Mean != 0.979 {
		t.Errorf("mean = %v, published 0.979", res.Mean)
	}
	sum, n := 0.0, 0
	for _, row := range res.Pivot {
		for _, v := range row {
			sum += v
			n++
		}
	}
	if n != 512 || sum != 501 {
		t.Errorf("cells %d summing to %v, want 512 summing to 501", n, sum)
	}
	if _, ok := res.Pivot["1"]["8000"]; !ok { // int(5800/0.725) = 8000
		t.Errorf("missing column 8000: %v", res.Pivot["1"])
	}
}

func TestScoreQuirks(t *testing.T) {
	ref := []float64{15, 117, 42, 69}
	tests := []struct {
		name, lang, test string
		m                int
		answer           string
		want             []float64
		wantErr          bool
	}{
		{"plain EN", "EN", "Acquisition", 4, `{"little_penguin": [15, 117, 42]}`, []float64{1, 1, 1, 0}, false},
		{"EN unfenced must be strict JSON", "EN", "Acquisition", 4, `{"little_penguin": [15, 117]} done`, nil, true},
		{"ZH unfenced is repaired", "ZH", "Acquisition", 4, `结果：{"小企鹅": [15, 117]} 完成`, []float64{1, 1, 0, 0}, false},
		{"fence and the word json removed", "EN", "Acquisition", 4, "```json\n{\"little_penguin\": [15, 69]}\n```", []float64{1, 0, 0, 1}, false},
		{"truncated fenced list", "EN", "Acquisition", 4, "```json\n{\"little_penguin\": [15, 117, 4", []float64{1, 1, 0, 0}, false},
		{"truncate to m before de-duplicating", "EN", "Acquisition", 2, `{"little_penguin": [15, 15, 117]}`, []float64{1, 0}, false},
		{"float equals int, string does not", "EN", "Acquisition", 4, `{"little_penguin": [15.0, "117", 42]}`, []float64{1, 0, 1, 0}, false},
		{"reference shorter than m scores 0", "EN", "Acquisition", 6, `{"little_penguin": [15]}`, []float64{1, 0, 0, 0, 0, 0}, false},
		{"string prediction is its characters", "EN", "Acquisition", 4, `{"little_penguin": "15"}`, []float64{0, 0, 0, 0}, false},
		{"number prediction has no len", "EN", "Acquisition", 4, `{"little_penguin": 15}`, nil, true},
		{"missing key", "ZH", "Acquisition", 4, `{"little_penguin": [15]}`, nil, true},
		{"reasoning: right only 1, both 0.5, wrong only 0.25", "EN", "Reasoning", 4, `{"little_penguin": [15, 116, 117, 43]}`, []float64{1, 0.5, 0.25, 0}, false},
		{"reasoning ignores the line's reference", "EN", "Reasoning", 2, `{"little_penguin": [15, 117]}`, []float64{1, 1}, false},
		{"reasoning m > 32", "EN", "Reasoning", 33, `{"little_penguin": [15]}`, nil, true},
		{"unhashable item within m", "EN", "Acquisition", 4, `{"little_penguin": [[15], 117]}`, nil, true},
		{"unhashable item beyond m is dropped", "EN", "Acquisition", 1, `{"little_penguin": [15, [117]]}`, []float64{1}, false},
		{"true equals 1", "EN", "Acquisition", 1, `{"little_penguin": [true]}`, []float64{0}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Score(tt.lang, tt.test, tt.m, tt.answer, ref)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && !equalFloats(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if got, _ := Score("EN", "Acquisition", 1, `{"little_penguin": [true]}`, []float64{1}); !equalFloats(got, []float64{1}) {
		t.Errorf("True == 1: got %v", got)
	}
}

func equalFloats(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestColumnAndRound(t *testing.T) {
	tests := []struct {
		lang, test string
		size       float64
		want       int64
	}{
		{"ZH", "Acquisition", 5800, 8000},
		{"EN", "Acquisition", 4000, 4878},
		{"EN", "Reasoning", 4000, 4907},
		{"ZH", "Reasoning", 4000, 5555},
	}
	for _, tt := range tests {
		if got, err := Column(tt.lang, tt.test, tt.size); err != nil || got != tt.want {
			t.Errorf("Column(%s, %s, %v) = %v, %v; want %v", tt.lang, tt.test, tt.size, got, err, tt.want)
		}
	}
	for _, tt := range []struct{ in, want float64 }{{0.978515625, 0.979}, {0.0005, 0}, {0.0015, 0.002}, {0.0025, 0.002}, {0.5, 0.5}} {
		if got := Round3(tt.in); got != tt.want {
			t.Errorf("Round3(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestLineMetric(t *testing.T) {
	m := LineMetrics()[0]
	out, err := m.Score(json.RawMessage(`{"lang": "EN", "test_type": "Acquisition", "m": 2, "answer": "{\"little_penguin\": [15]}", "reference": [15, 117], "context_size": 4000}`))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(out); string(b) != `{"scores":[1,0],"mean":0.5}` {
		t.Errorf("got %s", b)
	}
	if _, err := m.Score(json.RawMessage(`{"lang": "FR", "test_type": "Acquisition", "m": 2, "answer": "{}"}`)); err == nil {
		t.Error("want an error for an unknown language")
	}
	lines := []json.RawMessage{
		[]byte(`{"lang": "EN", "test_type": "Acquisition", "m": 2, "answer": "{\"little_penguin\": [15]}", "reference": [15, 117], "context_size": 4000}`),
		[]byte(`{"lang": "EN", "test_type": "Acquisition", "m": 1, "answer": "{\"little_penguin\": [15]}", "reference": [15], "context_size": 8000}`),
	}
	agg, err := m.Aggregate(lines)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(agg)
	if want := `{"mean":0.667,"pivot":{"1":{"4878":1,"9756":1},"2":{"4878":0,"9756":null}}}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
}

func FuzzRepairLoads(f *testing.F) {
	for _, s := range []string{`{"little_penguin": [15, 117, 4`, "```json\n{'小企鹅': [1, 2,]}\n```", `x {"a": [1 2]} // c`,
		`[15，117]`, `{"a": 1,234}`, `{"a": [1, ...]}`, "(1) {\"a\": [1]}", `{"a": [１５]}`, `/* {[ */ [1]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := RepairLoads(s)
		if err == nil && v == nil && !strings.Contains(s, "null") {
			t.Errorf("nil result without error for %q", s)
		}
		_, _ = Score("ZH", "Reasoning", 32, s, nil)
		_, _ = Score("EN", "Acquisition", 4, s, []float64{1, 2})
	})
}

func BenchmarkScore(b *testing.B) {
	answer := "```json\n{\"小企鹅\": [3, 5, 9, 15, 19, 21, 26, 29, 35, 38, 42, 46, 49, 54, 58, 61, 66, 69, 74, 77, 81, 86, 89, 94, 97, 102, 107, 109, 113, 117, 122, 127]}\n```"
	ref := aStars[:]
	for b.Loop() {
		_, _ = Score("ZH", "Acquisition", 32, answer, ref)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkRepairLoads(b *testing.B) {
	answer := "Result: {\"little_penguin\": [3, 5, 9, 15, 19, 21, 26, 29, 35, 38, 42, 46, 49, 54, 58, 61, 66, 69, 74, 77, 81, 86, 89, 94, 97, 102, 107, 109, 113, 117, 122, 1"
	for b.Loop() {
		_, _ = RepairLoads(answer)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}
