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
	"tally/scoring/threec3h/pyjson"
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

// TestScoreVectors runs whole reference "files" (get_data_EN/ZH calls of
// the current notebook, RuleCurrent) and compares the pivot cells and the
// pandas-2 mean exactly.
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
			s, err = Score(RuleCurrent, lang, test, m, line["answer"].(string), toFloats(line["reference_counting_results"]))
			if err != nil {
				break
			}
			col, cerr := Column(RuleCurrent, lang, test, num(line["context_size"]))
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

// readStoneGPT4 reads the shared v1 result file (ZH, M = 32, 16 lengths).
func readStoneGPT4(t *testing.T) []struct {
	Answer    string
	Reference []float64
	SkySize   float64
} {
	t.Helper()
	f, err := os.Open(filepath.Join(sharedDir(t), "data", "counting_stars", "results", "stone_gpt4_32_16.txt"))
	if err != nil {
		t.Fatalf("opening result file: %v", err)
	}
	defer f.Close()
	var out []struct {
		Answer    string
		Reference []float64
		SkySize   float64
	}
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
		out = append(out, struct {
			Answer    string
			Reference []float64
			SkySize   float64
		}{rec.Answer, rec.Reference, rec.SkySize})
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading result file: %v", err)
	}
	if len(out) != 16 {
		t.Fatalf("got %d lines, want 16", len(out))
	}
	return out
}

type aggregate struct {
	Mean  float64                       `json:"mean"`
	Pivot map[string]map[string]float64 `json:"pivot"`
}

func aggregateOf(t *testing.T, lines []json.RawMessage) (aggregate, error) {
	t.Helper()
	out, err := LineMetrics()[0].Aggregate(lines)
	if err != nil {
		return aggregate{}, err
	}
	b, _ := json.Marshal(out)
	var res aggregate
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res, nil
}

func (a aggregate) cells() (n int, sum float64) {
	for _, row := range a.Pivot {
		for _, v := range row {
			sum += v
			n++
		}
	}
	return n, sum
}

// TestPublishedStoneGPT4 reproduces the published GPT-4-Turbo
// Counting-Stars-(32-16) accuracy 0.979 (501/512) from the shared v1
// result file under the paper-era rule (viz_file/viz.ipynb@0fddb90, the
// notebook of that heatmap), which is the default; the current rule gives
// the same number on this file (every answer is valid JSON).
func TestPublishedStoneGPT4(t *testing.T) {
	recs := readStoneGPT4(t)
	for _, rule := range []string{"", "paper", "current"} {
		var lines []json.RawMessage
		for _, rec := range recs {
			in := map[string]any{"lang": "ZH", "test_type": "Acquisition", "m": 32,
				"answer": rec.Answer, "reference": rec.Reference, "context_size": rec.SkySize}
			if rule != "" {
				in["rule"] = rule
			}
			b, _ := json.Marshal(in)
			lines = append(lines, b)
		}
		res, err := aggregateOf(t, lines)
		if err != nil {
			t.Fatalf("rule %q: %v", rule, err)
		}
		if res.Mean != 0.979 {
			t.Errorf("rule %q: mean = %v, published 0.979", rule, res.Mean)
		}
		if n, sum := res.cells(); n != 512 || sum != 501 {
			t.Errorf("rule %q: cells %d summing to %v, want 512 summing to 501", rule, n, sum)
		}
		if _, ok := res.Pivot["1"]["8000"]; !ok { // int(5800/0.725) = 8000
			t.Errorf("rule %q: missing column 8000: %v", rule, res.Pivot["1"])
		}
	}
}

// TestCutResultFile is finding 11 of issue 11: an EN result file whose
// answers are cut mid-list. The shared file is turned into one (key
// little_penguin; every odd line cut two characters after its (8+i)-th
// comma, inside a number). The paper-era notebook parses every answer
// with json_repair and scores it; 387 of 512 cells and the mean 0.756
// come from running viz_file/viz.ipynb@0fddb90's parse, reduce_duplicate
// and get_score with json_repair 0.10.1 on the same lines (CPython 3.11;
// no pandas: with no missing cell the pivot mean is the cell sum / 512).
// The current rule's plain json.loads raises on the cut lines.
func TestCutResultFile(t *testing.T) {
	var lines []json.RawMessage
	for i, rec := range readStoneGPT4(t) {
		a := strings.ReplaceAll(rec.Answer, "小企鹅", "little_penguin")
		if i%2 == 1 {
			commas := 0
			for k := 0; k < len(a); k++ {
				if a[k] == ',' {
					if commas == 8+i {
						a = a[:k+2]
						break
					}
					commas++
				}
			}
		}
		b, _ := json.Marshal(map[string]any{"lang": "EN", "test_type": "Acquisition", "m": 32,
			"answer": a, "reference": rec.Reference, "context_size": rec.SkySize})
		lines = append(lines, b)
	}
	if !strings.Contains(string(lines[1]), `[3,5,9,15,19,21,26,29,35,38,4","context_size"`) {
		t.Fatalf("line 2 not cut as intended: %s", lines[1])
	}
	res, err := aggregateOf(t, lines)
	if err != nil {
		t.Fatalf("paper-era rule: %v", err)
	}
	if n, sum := res.cells(); n != 512 || sum != 387 || res.Mean != 0.756 {
		t.Errorf("paper-era rule: %d cells summing to %v, mean %v; want 512, 387, 0.756", n, sum, res.Mean)
	}
	if _, ok := res.Pivot["1"]["5800"]; !ok { // EN paper-era columns are the sky size
		t.Errorf("missing column 5800: %v", res.Pivot["1"])
	}
	for i := range lines {
		var m map[string]any
		_ = json.Unmarshal(lines[i], &m)
		m["rule"] = "current"
		lines[i], _ = json.Marshal(m)
	}
	if _, err := aggregateOf(t, lines); err == nil {
		t.Error("current rule: want the error json.loads raises on a cut EN answer")
	}
}

// TestPaperEraJSONRepair covers what json_repair accepts: unquoted keys,
// comments inside the object, full-width punctuation and answers cut
// mid-list. Every expected value is json_repair.loads, run from source
// under CPython 3.11, of json_repair 0.10.1 (src/json_repair/json_repair.py
// at f004ff7f; RepairLoadsPaperEra, the paper-era rule) and of json_repair
// 0.61.7 (src/json_repair/ at 600ede6b; RepairLoads, which the current rule
// uses for ZH and fenced answers): both give the same value for each text.
func TestPaperEraJSONRepair(t *testing.T) {
	ref := []float64{15, 117, 42, 69}
	tests := []struct {
		name, lang, answer string
		want               []any
	}{
		{"full-width colon and commas", "ZH", `{"小企鹅"：[15，117，42]}`, []any{Int(15), Int(117), Int(42)}},
		{"unquoted key EN", "EN", `{little_penguin: [15, 117, 42]}`, []any{Int(15), Int(117), Int(42)}},
		{"unquoted key ZH", "ZH", `{小企鹅: [15, 117, 42]}`, []any{Int(15), Int(117), Int(42)}},
		{"line comment inside the object", "EN", "{\"little_penguin\": [15, 117, 42], // done\n}", []any{Int(15), Int(117), Int(42)}},
		{"line comment before the key", "EN", "{// c\n\"little_penguin\": [15, 117, 42]}", []any{Int(15), Int(117), Int(42)}},
		{"block comment before the key", "EN", `{/* counts */ "little_penguin": [15, 117, 42]}`, []any{Int(15), Int(117), Int(42)}},
		{"block comment after the value", "EN", `{"little_penguin": [15, 117, 42] /* done */}`, []any{Int(15), Int(117), Int(42)}},
		{"cut inside a number", "EN", `{"little_penguin": [15, 117, 4`, []any{Int(15), Int(117), Int(4)}},
		{"cut after a comma", "EN", `{"little_penguin": [15, 117, `, []any{Int(15), Int(117)}},
		{"fenced and cut", "EN", "```json\n{\"little_penguin\": [15, 117, 42, 69, 5\n", []any{Int(15), Int(117), Int(42), Int(69), Int(5)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Predicted(RulePaper, tt.lang, tt.answer)
			if err != nil {
				t.Fatalf("Predicted: %v", err)
			}
			if !strictEqual(got, tt.want) {
				t.Errorf("Predicted = %#v, want %#v", got, tt.want)
			}
			if _, err := Score(RulePaper, tt.lang, "Acquisition", 4, tt.answer, ref); err != nil {
				t.Errorf("Score: %v", err)
			}
			key, _ := answerKey(tt.lang)
			text := tt.answer
			if strings.Contains(text, "```") {
				text = strings.TrimFunc(strings.ReplaceAll(strings.ReplaceAll(text, "```", ""), "json", ""), isSpace)
			}
			v, err := RepairLoads(text)
			if err != nil {
				t.Fatalf("RepairLoads (json_repair 0.61.7): %v", err)
			}
			if obj, ok := v.(map[string]any); !ok || !strictEqual(obj[key], tt.want) {
				t.Errorf("RepairLoads (json_repair 0.61.7) = %#v, want %s: %#v", v, key, tt.want)
			}
		})
	}
	// Prose before the object: json_repair 0.10.1 reads it as an unquoted
	// string up to the first '"' ("Sure! {"), so the notebook's ['key']
	// raises; the current json_repair finds the object.
	if _, err := Predicted(RulePaper, "EN", `Sure! {"little_penguin": [15, 117]}`); err == nil {
		t.Error("prose before the object: want the paper-era error")
	}
}

// TestParsedAnswer: a result file whose answer is already a JSON object.
// The current notebook's json.loads / json_repair.loads raise on it and
// its fallback item['answer'][key] takes the list; the paper-era notebook
// calls json_repair.loads on it, which raises (no .strip()).
func TestParsedAnswer(t *testing.T) {
	m := LineMetrics()[0]
	for _, tt := range []struct {
		line, want string
	}{
		{`{"rule": "current", "lang": "EN", "test_type": "Acquisition", "m": 4, "answer": {"little_penguin": [15, 117]}, "reference": [15, 117, 42, 69]}`, `{"scores":[1,1,0,0],"mean":0.5}`},
		{`{"rule": "current", "lang": "ZH", "test_type": "Acquisition", "m": 2, "answer": {"小企鹅": [117, 1]}, "reference": [15, 117]}`, `{"scores":[0,1],"mean":0.5}`},
		{`{"rule": "current", "lang": "EN", "test_type": "Reasoning", "m": 2, "answer": {"little_penguin": [15, 116]}}`, `{"scores":[1,0.25],"mean":0.625}`},
	} {
		out, err := m.Score(json.RawMessage(tt.line))
		if err != nil {
			t.Errorf("%s: %v", tt.line, err)
			continue
		}
		if b, _ := json.Marshal(out); string(b) != tt.want {
			t.Errorf("%s: got %s, want %s", tt.line, b, tt.want)
		}
	}
	for _, line := range []string{
		`{"rule": "paper", "lang": "EN", "test_type": "Acquisition", "m": 2, "answer": {"little_penguin": [15, 117]}, "reference": [15, 117]}`,
		`{"lang": "EN", "test_type": "Acquisition", "m": 2, "answer": {"little_penguin": [15, 117]}, "reference": [15, 117]}`,
		`{"rule": "current", "lang": "EN", "test_type": "Acquisition", "m": 2, "answer": [15, 117], "reference": [15, 117]}`,
		`{"rule": "current", "lang": "EN", "test_type": "Acquisition", "m": 2, "answer": {"小企鹅": [15]}, "reference": [15, 117]}`,
		`{"rule": "current", "lang": "EN", "test_type": "Acquisition", "m": 2, "answer": {"little_penguin": [15], "` + "```" + `": 1}, "reference": [15, 117]}`,
		`{"rule": "current", "lang": "EN", "test_type": "Acquisition", "m": 2, "answer": 15, "reference": [15, 117]}`,
	} {
		if _, err := m.Score(json.RawMessage(line)); err == nil {
			t.Errorf("%s: want the reference's error", line)
		}
	}
	got, err := Score(RuleCurrent, "ZH", "Acquisition", 2, map[string]any{"小企鹅": []any{Int(15), 117.0}}, []float64{15, 117})
	if err != nil || !equalFloats(got, []float64{1, 1}) {
		t.Errorf("Score of a parsed answer = %v, %v; want [1 1]", got, err)
	}
}

// TestRules covers the rule switch: names, the default, and what each
// notebook version can score.
func TestRules(t *testing.T) {
	for _, tt := range []struct {
		name, test string
		want       Rule
		wantErr    bool
	}{
		{"", "Acquisition", RulePaper, false},
		{"", "Reasoning", RuleCurrent, false},
		{"paper", "Acquisition", RulePaper, false},
		{"paper", "Reasoning", "", true},
		{"current", "Acquisition", RuleCurrent, false},
		{"current", "Reasoning", RuleCurrent, false},
		{"v1", "Acquisition", "", true},
		{"current", "Retrieval", "", true},
	} {
		got, err := ResolveRule(tt.name, tt.test)
		if (err != nil) != tt.wantErr || (err == nil && got != tt.want) {
			t.Errorf("ResolveRule(%q, %q) = %q, %v; want %q, error %v", tt.name, tt.test, got, err, tt.want, tt.wantErr)
		}
	}
	if r, err := RuleOf(map[string]any{"lang": "EN", "test_type": "Acquisition"}); err != nil || r != RulePaper {
		t.Errorf("RuleOf without the key = %q, %v; want paper", r, err)
	}
	if r, err := RuleOf(map[string]any{"lang": "EN", "test_type": "Reasoning"}); err != nil || r != RuleCurrent {
		t.Errorf("RuleOf without the key, Reasoning = %q, %v; want current", r, err)
	}
	if _, err := RuleOf(map[string]any{MetadataRule: 3, "test_type": "Acquisition"}); err == nil {
		t.Error("RuleOf: want an error for a non-string rule")
	}
	ref := []float64{15, 117}
	if _, err := Score(RulePaper, "EN", "Reasoning", 2, `{"little_penguin": [15]}`, ref); err == nil {
		t.Error("paper-era rule has no Reasoning test")
	}
	if _, err := Score(RulePaper, "EN", "Acquisition", 3, `{"little_penguin": [15]}`, ref); err == nil {
		t.Error("paper-era rule: a reference shorter than m raises IndexError")
	}
	if got, err := Score(RuleCurrent, "EN", "Acquisition", 3, `{"little_penguin": [15]}`, ref); err != nil || !equalFloats(got, []float64{1, 0, 0}) {
		t.Errorf("current rule: a reference shorter than m scores 0, got %v, %v", got, err)
	}
	// The paper-era rule repairs an unfenced EN answer the current rule
	// must parse as strict JSON.
	cut := `{"little_penguin": [15, 117`
	if got, err := Score(RulePaper, "EN", "Acquisition", 2, cut, ref); err != nil || !equalFloats(got, []float64{1, 1}) {
		t.Errorf("paper-era rule on a cut answer = %v, %v; want [1 1]", got, err)
	}
	if _, err := Score(RuleCurrent, "EN", "Acquisition", 2, cut, ref); err == nil {
		t.Error("current rule on a cut EN answer: want json.loads's error")
	}
	md := map[string]any{"lang": "EN", "test_type": "Acquisition", MetadataRule: "current"}
	if _, err := ScoreSample(cut, ref, md); err == nil {
		t.Error("ScoreSample with rule current: want an error")
	}
	delete(md, MetadataRule)
	if got, err := ScoreSample(cut, ref, md); err != nil || !equalFloats(got, []float64{1, 1}) {
		t.Errorf("ScoreSample with the default rule = %v, %v; want [1 1]", got, err)
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
	}{ // RuleCurrent (viz.ipynb@32e16f2c)
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
			got, err := Score(RuleCurrent, tt.lang, tt.test, tt.m, tt.answer, ref)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && !equalFloats(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if got, _ := Score(RuleCurrent, "EN", "Acquisition", 1, `{"little_penguin": [true]}`, []float64{1}); !equalFloats(got, []float64{1}) {
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
		rule       Rule
		lang, test string
		size       float64
		want       int64
	}{
		{RuleCurrent, "ZH", "Acquisition", 5800, 8000},
		{RuleCurrent, "EN", "Acquisition", 4000, 4878},
		{RuleCurrent, "EN", "Reasoning", 4000, 4907},
		{RuleCurrent, "ZH", "Reasoning", 4000, 5555},
		{RulePaper, "ZH", "Acquisition", 5800, 8000}, // int(item['sky_size'] / 0.725)
		{RulePaper, "EN", "Acquisition", 4000, 4000}, // item['sky_size']
	}
	for _, tt := range tests {
		if got, err := Column(tt.rule, tt.lang, tt.test, tt.size); err != nil || got != tt.want {
			t.Errorf("Column(%s, %s, %s, %v) = %v, %v; want %v", tt.rule, tt.lang, tt.test, tt.size, got, err, tt.want)
		}
	}
	if _, err := Column(RulePaper, "EN", "Reasoning", 4000); err == nil {
		t.Error("Column: the paper-era rule has no Reasoning test")
	}
	for _, tt := range []struct{ in, want float64 }{{0.978515625, 0.979}, {0.0005, 0}, {0.0015, 0.002}, {0.0025, 0.002}, {0.5, 0.5}} {
		if got := Round3(tt.in); got != tt.want {
			t.Errorf("Round3(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestLineMetric(t *testing.T) {
	m := LineMetrics()[0]
	out, err := m.Score(json.RawMessage(`{"rule": "current", "lang": "EN", "test_type": "Acquisition", "m": 2, "answer": "{\"little_penguin\": [15]}", "reference": [15, 117], "context_size": 4000}`))
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
		[]byte(`{"rule": "current", "lang": "EN", "test_type": "Acquisition", "m": 2, "answer": "{\"little_penguin\": [15]}", "reference": [15, 117], "context_size": 4000}`),
		[]byte(`{"rule": "current", "lang": "EN", "test_type": "Acquisition", "m": 1, "answer": "{\"little_penguin\": [15]}", "reference": [15], "context_size": 8000}`),
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

// FuzzRepairLoads runs both json_repair ports (0.61.7, RepairLoads, and
// 0.10.1, RepairLoadsPaperEra) and the scorer under both rules on
// arbitrary text: no panic, no hang, no nil without "null" in the text,
// and valid JSON (after 0.10.1's strip) decodes as json.loads does.
func FuzzRepairLoads(f *testing.F) {
	for _, s := range []string{`{"little_penguin": [15, 117, 4`, "```json\n{'小企鹅': [1, 2,]}\n```", `x {"a": [1 2]} // c`,
		`[15，117]`, `{"a": 1,234}`, `{"a": [1, ...]}`, "(1) {\"a\": [1]}", `{"a": [１５]}`, `/* {[ */ [1]`,
		`{"小企鹅"：[15，117，42]}`, `{little_penguin: [15, 117, 42]}`, "{\"little_penguin\": [15, 117, 42], // done\n}",
		`{/* c */ "little_penguin": [15]}`, `{: "a": [0, 1]}`, `{"a": "[x](\"y\")"}`, `İ{"a": tRUE}`, `{"a": [²1, ①]}`,
		`{1: [2], "a": {"b": [1, 2}`, `"abc`, "```"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := RepairLoads(s)
		if err == nil && v == nil && !strings.Contains(s, "null") {
			t.Errorf("nil result without error for %q", s)
		}
		pv, perr := RepairLoadsPaperEra(s)
		if perr == nil && pv == nil && !strings.Contains(strings.ToLower(s), "null") {
			t.Errorf("paper-era: nil result without error for %q", s)
		}
		if stripped := strings.TrimLeft(strings.TrimFunc(s, isSpace), "`json"); perr == nil {
			if jv, _, jerr := pyjson.RawDecode(stripped); jerr == nil {
				if _, err := pyjson.Loads(stripped); err == nil && !strictEqual(pv, jv) {
					t.Errorf("paper-era: valid JSON %q decoded as %#v, want %#v", stripped, pv, jv)
				}
			}
		}
		_, _ = Score(RuleCurrent, "ZH", "Reasoning", 32, s, nil)
		_, _ = Score(RuleCurrent, "EN", "Acquisition", 4, s, []float64{1, 2})
		_, _ = Score(RulePaper, "EN", "Acquisition", 2, s, []float64{1, 2})
		_, _ = Score(RulePaper, "ZH", "Acquisition", 2, s, []float64{1, 2})
	})
}

func BenchmarkScore(b *testing.B) {
	answer := "```json\n{\"小企鹅\": [3, 5, 9, 15, 19, 21, 26, 29, 35, 38, 42, 46, 49, 54, 58, 61, 66, 69, 74, 77, 81, 86, 89, 94, 97, 102, 107, 109, 113, 117, 122, 127]}\n```"
	ref := aStars[:]
	for b.Loop() {
		_, _ = Score(RulePaper, "ZH", "Acquisition", 32, answer, ref)
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
