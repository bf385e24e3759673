package judge

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"tally/scoring/threec3h/pyjson"
)

const (
	devTasks   = "threec3h/tasks/AraGen-12-2024-dev.json"
	fullTasks  = "threec3h/tasks/AraGen-12-2024.json"
	devAnswers = "threec3h/answers/AraGen-12-2024-dev/Qwen_Qwen2.5-0.5B-Instruct_main_bfloat16_answers.json"
)

func readShared(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(sharedData(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLoadThreeC3HReal(t *testing.T) {
	joined, err := LoadThreeC3H(sharedData(t, devTasks), sharedData(t, devAnswers))
	if err != nil {
		t.Fatal(err)
	}
	alone, err := LoadThreeC3H("", sharedData(t, devAnswers))
	if err != nil {
		t.Fatal(err)
	}
	if len(joined) != 5 || len(alone) != 5 {
		t.Fatalf("%d and %d entries, want 5", len(joined), len(alone))
	}
	for i := range joined {
		e := joined[i]
		if e != alone[i] {
			t.Errorf("entry %d: joined %+v, answers alone %+v", i, e, alone[i])
		}
		if e.ID != []string{"1", "2", "3", "4", "5"}[i] || e.Round != 0 || e.Task != "Question Answering (QA)" ||
			e.Question1 == "" || e.Answer1 == "" || !strings.HasSuffix(e.ModelAnswer1, "<|im_end|>") || e.Missing() != "" {
			t.Errorf("entry %d: %+v", i, e)
		}
	}
	if joined[0].Category != "Synthetic" || joined[0].SubCategory != "Arab world" {
		t.Errorf("entry 0 meta: %+v", joined[0])
	}
}

// TestLoadThreeC3HFull joins the full AraGen-12-2024 task set with a
// synthetic answers file and checks the round counts (shared README).
func TestLoadThreeC3HFull(t *testing.T) {
	var entries []map[string]any
	if err := json.Unmarshal([]byte(readShared(t, fullTasks)), &entries); err != nil {
		t.Fatal(err)
	}
	// Answers in reverse order: the join is by SN., not position.
	answers := make([]map[string]any, 0, len(entries))
	for i := len(entries) - 1; i >= 0; i-- {
		e := entries[i]
		answers = append(answers, map[string]any{"Meta": e["Meta"], "Model": map[string]any{"Answer 1": "a1", "Answer 2": "a2"}})
	}
	data, _ := json.Marshal(answers)
	path := filepath.Join(t.TempDir(), "answers.json")
	os.WriteFile(path, data, 0o644)
	got, err := LoadThreeC3H(sharedData(t, fullTasks), path)
	if err != nil {
		t.Fatal(err)
	}
	rounds := map[int]int{}
	tasks := map[string]int{}
	for _, e := range got {
		rounds[e.Round]++
		tasks[e.Task]++
		if e.Round > 0 && (e.Question2 == "" || e.Answer2 == "") {
			t.Errorf("entry %s round %d without a second turn", e.ID, e.Round)
		}
		if e.ModelAnswer2 != map[bool]string{true: "a2", false: ""}[e.Round == 2] {
			t.Errorf("entry %s round %d model answer 2 %q", e.ID, e.Round, e.ModelAnswer2)
		}
	}
	if len(got) != 279 || rounds[0] != 247 || rounds[1] != 20 || rounds[2] != 12 {
		t.Errorf("%d entries, rounds %v", len(got), rounds)
	}
	if tasks["Question Answering (QA)"] != 153 || tasks["Reasoning"] != 75 || tasks["Safety"] != 20 {
		t.Errorf("tasks %v", tasks)
	}
	samples := ThreeC3HSamples("aragen", got, "SP\n")
	if len(samples) != 279 {
		t.Fatalf("%d samples", len(samples))
	}
	ids := map[string]bool{}
	for _, s := range samples {
		ids[s.ID] = true
	}
	if len(ids) != 279 {
		t.Errorf("%d distinct IDs", len(ids))
	}
}

// TestThreeC3HPrompts compares the prompts with jury.py's f-strings
// evaluated upstream (testdata/README.md), under both system prompts.
func TestThreeC3HPrompts(t *testing.T) {
	goldens := jsonLines[struct {
		SN    int               `json:"sn"`
		Round int               `json:"round"`
		Model map[string]string `json:"model"`
		After string            `json:"after_system_prompt"`
	}](t, "testdata/threec3h_prompts.jsonl")
	dev, err := LoadThreeC3H(sharedData(t, devTasks), sharedData(t, devAnswers))
	if err != nil {
		t.Fatal(err)
	}
	var tasks []struct {
		Meta struct {
			SN    int `json:"SN."`
			Round int
		}
		Test map[string]*string
	}
	if err := json.Unmarshal([]byte(readShared(t, fullTasks)), &tasks); err != nil {
		t.Fatal(err)
	}
	entries := dev
	for _, g := range goldens[len(dev):] {
		for _, task := range tasks {
			if task.Meta.SN == g.SN {
				entries = append(entries, Entry{ID: "x", Round: g.Round,
					Question1: *task.Test["Question 1"], Answer1: *task.Test["Answer 1"],
					Question2: *task.Test["Question 2"], Answer2: *task.Test["Answer 2"],
					ModelAnswer1: g.Model["Answer 1"], ModelAnswer2: g.Model["Answer 2"]})
			}
		}
	}
	if len(goldens) != 7 || len(entries) != 7 {
		t.Fatalf("%d goldens, %d entries", len(goldens), len(entries))
	}
	for _, sp := range []string{"threec3h/prompts/sp1.md", "threec3h/prompts/sp2.md"} {
		system := readShared(t, sp)
		samples := ThreeC3HSamples("aragen", entries, system)
		if len(samples) != 7 {
			t.Fatalf("%d samples", len(samples))
		}
		for i, s := range samples {
			if want := system + goldens[i].After; s.Prompt != want {
				t.Errorf("%s sample %d (round %d): prompt differs:\n%q\nwant\n%q", sp, i, goldens[i].Round, s.Prompt[len(system):], goldens[i].After)
			}
			var ref ThreeC3HReference
			if err := json.Unmarshal(s.References, &ref); err != nil || ref.Round != goldens[i].Round {
				t.Errorf("sample %d references %s", i, s.References)
			}
			if s.Metadata["round"] != goldens[i].Round {
				t.Errorf("sample %d metadata %v", i, s.Metadata)
			}
		}
		if samples[0].ID != "1" || samples[0].Metadata["task"] != "Question Answering (QA)" || samples[0].Metadata["category"] != "Synthetic" {
			t.Errorf("sample 0: %+v", samples[0])
		}
	}
}

func TestThreeC3HSamplesSkips(t *testing.T) {
	entries := []Entry{
		{Round: 0, Question1: "q", Answer1: "a", ModelAnswer1: " \u3000\n"},
		{Round: 2, Question1: "q", Answer1: "a", Question2: "q2", Answer2: "a2", ModelAnswer1: "m"},
		{Round: 1, Question1: "q", Answer1: "a", Question2: "q2", Answer2: "a2", ModelAnswer1: "m"},
		{Round: 3, Question1: "q", Answer1: "a", ModelAnswer1: "m"},
	}
	wantMissing := []string{"Model.Answer 1", "Model.Answer 2", "", "Meta.Round"}
	for i, e := range entries {
		if got := e.Missing(); got != wantMissing[i] {
			t.Errorf("entry %d: Missing() = %q, want %q", i, got, wantMissing[i])
		}
	}
	s := ThreeC3HSamples("t", entries, "")
	if len(s) != 1 || s[0].ID != "2" || string(s[0].References) != `{"round":1}` {
		t.Errorf("samples %+v", s)
	}
}

func TestLoadThreeC3HBad(t *testing.T) {
	dir := t.TempDir()
	q := func(sn, round string, test string) string {
		return `{"Meta":{"SN.":` + sn + `,"Round":` + round + `,"Task":"T"},"Test":{` + test + `}}`
	}
	a := func(sn, model string) string { return `{"Meta":{"SN.":` + sn + `},"Model":{` + model + `}}` }
	t0 := `"Question 1":"q","Answer 1":"a"`
	t1 := t0 + `,"Question 2":"q2","Answer 2":"a2"`
	tests := []struct {
		name, questions, answers, errSub string
	}{
		{"nomodel", "[" + q("1", "0", t0) + "]", `[{"Meta":{"SN.":1}}]`, `entry 0: field "Model": missing`},
		{"answer", "[" + q("1", "0", t0) + "]", "[" + a("1", `"Answer 1":5`) + "]", `entry 0: field "Model.Answer 1": not a string`},
		{"answer2", "[" + q("1", "2", t1) + "]", "[" + a("1", `"Answer 1":"m"`) + "]", `field "Model.Answer 2": missing`},
		{"question", "[" + q("1", "0", `"Answer 1":"a"`) + "]", "[" + a("1", `"Answer 1":"m"`) + "]", `entry 0: field "Test.Question 1": missing`},
		{"blank", "[" + q("1", "1", t0+`,"Question 2":" ","Answer 2":"a2"`) + "]", "[" + a("1", `"Answer 1":"m"`) + "]", `field "Test.Question 2": blank`},
		{"round", "[" + q("1", "7", t0) + "]", "[" + a("1", `"Answer 1":"m"`) + "]", `field "Meta.Round"`},
		{"sn", "[" + q("[1]", "0", t0) + "]", "[" + a("[1]", `"Answer 1":"m"`) + "]", `field "Meta.SN."`},
		{"dup", "[" + q("1", "0", t0) + "," + q("1", "0", t0) + "]", "[" + a("1", `"Answer 1":"m"`) + "," + a("2", `"Answer 1":"m"`) + "]", `repeats entry 0`},
		{"unmatched", "[" + q("1", "0", t0) + "]", "[" + a("2", `"Answer 1":"m"`) + "]", `no answer with SN. 1`},
		{"count", "[" + q("1", "0", t0) + "]", "[" + a("1", `"Answer 1":"m"`) + "," + a("2", `"Answer 1":"m"`) + "]", `has 1 entries`},
		{"mismatch", "[" + q("1", "0", t0) + "]", `[{"Meta":{"SN.":1},"Test":{"Question 1":"other"},"Model":{"Answer 1":"m"}}]`, `differs from`},
		{"notarray", `{}`, "[]", "decoding the JSON array"},
		{"meta", `[{"Meta":3}]`, "[]", `entry 0: field "Meta": not an object`},
	}
	for _, tc := range tests {
		qp := filepath.Join(dir, tc.name+"_q.json")
		ap := filepath.Join(dir, tc.name+"_a.json")
		os.WriteFile(qp, []byte(tc.questions), 0o644)
		os.WriteFile(ap, []byte(tc.answers), 0o644)
		_, err := LoadThreeC3H(qp, ap)
		if err == nil || !strings.Contains(err.Error(), tc.errSub) || !strings.Contains(err.Error(), tc.name+"_") ||
			strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line naming the file and containing %q", tc.name, err, tc.errSub)
		}
	}
	if _, err := LoadThreeC3H("", filepath.Join(dir, "absent.json")); err == nil {
		t.Error("missing file accepted")
	}
}

// TestScoreThreeC3HTable checks ScoreThreeC3H against jury.py's
// extract_scores and calculate_weighted_scores (testdata/README.md).
func TestScoreThreeC3HTable(t *testing.T) {
	lines := strings.Split(strings.TrimSpace(readFile(t, "testdata/score3c3h.jsonl")), "\n")
	if len(lines) < 150 {
		t.Fatalf("%d cases", len(lines))
	}
	for i, line := range lines {
		v, err := pyjson.Loads(line)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		c := v.(map[string]any)
		out, round := c["output"].(string), int(c["round"].(float64))
		got, err := ScoreThreeC3H(out, round)
		if c["expect"] == nil {
			if err == nil {
				t.Errorf("line %d: got %v, want an error", i+1, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("line %d: %v", i+1, err)
			continue
		}
		want := c["expect"].(map[string]any)
		if len(got) != 7 || len(want) != 7 {
			t.Errorf("line %d: keys %v", i+1, got)
		}
		for k, w := range want {
			if g, ok := got[k]; !ok || g != w.(float64) && !(math.IsNaN(g) && math.IsNaN(w.(float64))) {
				t.Errorf("line %d %s: got %v, want %v", i+1, k, g, w)
			}
		}
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestScoreThreeC3HErrors(t *testing.T) {
	block := func(tag string) string {
		return "<" + tag + ">\n```json\n{\"Correct\": 1, \"Complete\": 1, \"Concise\": 5, \"Helpful\": 5, \"Honest\": 5, \"Harmless\": 5}\n```\n</" + tag + ">"
	}
	tests := []struct {
		out    string
		round  int
		errSub string // "" means success with Final Score 1
	}{
		{block("results1"), 0, ""},
		{block("results1"), 1, ""},
		{block("results1") + block("results2"), 2, ""},
		{block("results1"), 2, "<results2> block"},
		{block("results2"), 0, "no <results1> block"},
		{"", 0, "no <results1> block"},
		{"<results1>\n```json\n{}\n```\n</results1>", 0, "missing, empty or not valid JSON"},
		{block("results1"), 3, "round 3"},
		{block("results1"), -1, "round -1"},
	}
	for _, tc := range tests {
		got, err := ScoreThreeC3H(tc.out, tc.round)
		if tc.errSub == "" {
			if err != nil || got["Final Score"] != 1 || got["Correct"] != 1 {
				t.Errorf("round %d: %v %v", tc.round, got, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.errSub) {
			t.Errorf("round %d %q: error %v, want containing %q", tc.round, tc.out, err, tc.errSub)
		}
	}
}

func FuzzScoreThreeC3H(f *testing.F) {
	f.Add("<results1>\n```json\n{\"Correct\": 1, \"Concise\": [3, 4]}\n```\n</results1>", 0)
	f.Add("<results1>```json{\"Correct\": 1}```</results1><results2>```json{\"Correct\": 0}```</results2>", 2)
	f.Add("<results1>\n```json\n{\"Correct\": NaN, \"Complete\": {\"a\": true}}\n```\n</results1>", 1)
	f.Add("", 5)
	f.Fuzz(func(t *testing.T, out string, round int) {
		got, err := ScoreThreeC3H(out, round)
		if err == nil && len(got) != 7 {
			t.Fatalf("%d keys", len(got))
		}
		if err != nil && got != nil {
			t.Fatal("scores with an error")
		}
	})
}

func FuzzDecodeAraGen(f *testing.F) {
	f.Add([]byte(`[{"Meta":{"SN.":1,"Round":0},"Test":{"Question 1":"q","Answer 1":"a"},"Model":{"Answer 1":"m"}}]`))
	f.Add([]byte(`[{"Meta":null,"Test":[]}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := decodeAraGen(data)
		if err != nil {
			return
		}
		for i, e := range entries {
			entryMeta(e, i) // must not panic
		}
	})
}

func BenchmarkScoreThreeC3H(b *testing.B) {
	out := "Evaluation...\n<results1>\n```json\n{\"Correct\": 1, \"Complete\": 1, \"Concise\": 3, \"Helpful\": 5, \"Honest\": 5, \"Harmless\": 5}\n```\n</results1>\n" +
		"<results2>\n```json\n{\"Correct\": 0, \"Complete\": 0, \"Concise\": 2, \"Helpful\": 1, \"Honest\": 3, \"Harmless\": 5}\n```\n</results2>"
	for b.Loop() {
		if _, err := ScoreThreeC3H(out, 2); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkLoadThreeC3H(b *testing.B) {
	q, a := sharedData(b, devTasks), sharedData(b, devAnswers)
	for b.Loop() {
		if _, err := LoadThreeC3H(q, a); err != nil {
			b.Fatal(err)
		}
	}
}
