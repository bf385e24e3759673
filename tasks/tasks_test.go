package tasks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"tally/internal/sharedtest"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func shared(t *testing.T, rel string) string {
	t.Helper()
	return sharedtest.Path(t, rel)
}

func TestBuiltinsResolve(t *testing.T) {
	names := Builtin()
	for _, want := range []string{"3c3h-judge", "alpaca-judge", "counting-stars", "demo", "drop", "jsonl", "leval"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Errorf("built-in task %q missing from %v", want, names)
		}
	}
	for _, n := range names {
		c, err := Resolve(n)
		if err != nil {
			t.Errorf("%s: %v", n, err)
			continue
		}
		if len(c.Settings()) == 0 {
			t.Errorf("%s: no stop settings", n)
		}
	}
}

func TestLoadAndScore(t *testing.T) {
	tests := []struct {
		task, data string
		limit      int
		wantN      int
		pred       func(refs json.RawMessage) string
		metric     string
		want       float64
	}{
		{"demo", "", 0, 40, func(r json.RawMessage) string {
			var x [][]string
			json.Unmarshal(r, &x)
			return " " + strings.Join(x[0], ", ")
		}, "drop.em", 1},
		{"drop", "data/drop/drop_dataset_dev.subset.json", 0, 40, func(r json.RawMessage) string {
			var x [][]string
			json.Unmarshal(r, &x)
			return " " + strings.Join(x[0], ", ")
		}, "drop.em", 1},
		{"leval", "data/leval/LEval-data/Closed-ended-tasks/coursera.jsonl", 0, 172, func(r json.RawMessage) string { var x []string; json.Unmarshal(r, &x); return x[0] }, "leval", 1},
		{"counting-stars", "data/counting_stars/context_data", 0, 32, func(r json.RawMessage) string {
			return `{"little_penguin": ` + string(r) + `}`
		}, "counting_stars", 1},
	}
	for _, tc := range tests {
		t.Run(tc.task, func(t *testing.T) {
			c, err := Resolve(tc.task)
			if err != nil {
				t.Fatal(err)
			}
			opt := LoadOptions{Limit: tc.limit}
			if tc.data != "" {
				opt.Data = shared(t, tc.data)
			}
			if tc.task == "counting-stars" {
				c.Lengths = nil // the original grid, 32 lengths
			}
			l, err := c.Load(opt)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Samples) != tc.wantN {
				t.Fatalf("%d samples, want %d", len(l.Samples), tc.wantN)
			}
			score := c.Scorer()
			for _, s := range l.Samples[:min(len(l.Samples), 5)] {
				if s.Task != tc.task || s.Prompt == "" || s.ID == "" {
					t.Fatalf("sample %+v", s)
				}
				got, err := score(tc.pred(s.References), s)
				if err != nil {
					t.Fatal(err)
				}
				if got[tc.metric] != tc.want {
					t.Errorf("%s: perfect prediction scores %v, want %s=%v", s.ID, got, tc.metric, tc.want)
				}
			}
		})
	}
}

func TestJudgeTasks(t *testing.T) {
	c, err := Resolve("alpaca-judge")
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.Load(LoadOptions{Data: shared(t, "data/alpaca_eval/results/gpt-3.5-turbo-1106/alpaca_eval_gpt4/annotations.json.gz")})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Samples) != 2*805 {
		t.Fatalf("%d judge samples, want %d (both orders)", len(l.Samples), 2*805)
	}
	score := c.Scorer()
	got, err := score("[{'model': 'model_1', 'rank': 1}, {'model': 'model_2', 'rank': 2}]", l.Samples[0])
	if err != nil || got["parsed"] != 1 {
		t.Fatalf("ranking answer: %v %v", got, err)
	}
	if got2, _ := score("[{'model': 'model_1', 'rank': 1}, {'model': 'model_2', 'rank': 2}]", l.Samples[1]); got2["win"] == got["win"] && got["win"] != 0.5 {
		t.Errorf("the same ranking in both orders must give opposite verdicts: %v %v", got, got2)
	}
	if bad, _ := score("no idea", l.Samples[0]); bad["parsed"] != 0 {
		if _, has := bad["win"]; has {
			t.Errorf("unparseable answer scored %v", bad)
		}
	}

	c3, err := ResolveWith("3c3h-judge", map[string]string{"system_prompt": shared(t, "data/threec3h/prompts/sp2.md")})
	if err != nil {
		t.Fatal(err)
	}
	l3, err := c3.Load(LoadOptions{Data: shared(t, "data/threec3h/answers/AraGen-12-2024-dev/Qwen_Qwen2.5-0.5B-Instruct_main_bfloat16_answers.json")})
	if err != nil {
		t.Fatal(err)
	}
	if len(l3.Samples) != 5 {
		t.Fatalf("%d 3C3H samples, want 5", len(l3.Samples))
	}
	answer := "<results1>```json\n{\"Correct\": 1, \"Complete\": 1, \"Concise\": 5, \"Helpful\": 5, \"Honest\": 5, \"Harmless\": 5}\n```</results1>"
	sc, err := c3.Scorer()(answer, l3.Samples[0])
	if err != nil || sc["3c3h.parsed"] != 1 || sc["3c3h.Final Score"] != 1 {
		t.Errorf("3c3h scores %v %v", sc, err)
	}
	if _, err := Resolve("3c3h-judge"); err != nil {
		t.Fatal(err)
	}
	c4, _ := Resolve("3c3h-judge")
	if _, err := c4.Load(LoadOptions{Data: "x.json"}); err == nil || !strings.Contains(err.Error(), "system_prompt") {
		t.Errorf("missing system prompt: %v", err)
	}
}

func TestDropFewShot(t *testing.T) {
	c, _ := Resolve("drop")
	l, err := c.Load(LoadOptions{Data: shared(t, "data/drop/drop_dataset_dev.subset.json")})
	if err != nil {
		t.Fatal(err)
	}
	p := l.Samples[0].Prompt
	if strings.Count(p, "Passage: ") != 4 || !strings.HasSuffix(p, "\nAnswer:") || strings.Count(p, "\n\nPassage: ") != 3 {
		t.Errorf("3-shot prompt malformed:\n%s", p)
	}
	// Shots come from the other passage: this sample's own passage appears once.
	own := p[strings.LastIndex(p, "Passage: "):]
	own = own[:strings.Index(own, "\nQuestion:")]
	if strings.Count(p, own) != 1 {
		t.Errorf("a shot repeats the sample's own passage")
	}
	again, _ := c.Load(LoadOptions{Data: shared(t, "data/drop/drop_dataset_dev.subset.json")})
	if again.Samples[0].Prompt != p {
		t.Error("few-shot draw is not deterministic")
	}
}

func TestBadConfig(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ body, want string }{
		{"task: x\nloader: csv\nid: a\nprompt: b\nmax_tokens: 1\nmetrics: [exact_match]\n", "loader"},
		{"task: x\nloader: jsonl\nid: a\nprompt: b\nmax_tokens: 1\nmetrics: [bleu]\n", `unknown metric "bleu"`},
		{"task: x\nloader: jsonl\nid: a\nprompt: '{{.a'\nmax_tokens: 1\nmetrics: [f1]\n", "template"},
		{"task: x\nloader: jsonl\nid: a\nprompt: b\nmax_tokens: 1\nmetrics: [f1]\nextra: 1\n", "extra"},
	}
	for i, tc := range tests {
		p := filepath.Join(dir, "t"+string(rune('a'+i))+".yaml")
		os.WriteFile(p, []byte(tc.body), 0o644)
		if _, err := Resolve(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config %d: error %v, want %q", i, err, tc.want)
		}
	}
}

// TestTaskFileNotRegular (issue 37, item 1): --tasks naming a FIFO or a
// link to /dev/zero is refused before it is opened (it hung, or grew
// without bound), for tally's task files and lm-eval's alike.
func TestTaskFileNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.yaml")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{fifo: "named pipe", zero: "is a device"} {
		done := make(chan error, 1)
		go func() {
			_, err := ResolveAll(path, nil)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("ResolveAll(%s): %v, want %q", filepath.Base(path), err, want)
			}
		case <-time.After(time.Minute):
			t.Fatalf("ResolveAll(%s) still running after a minute", filepath.Base(path))
		}
	}
}

// TestSetKeepsOtherFields is finding 1 of issue 11: --set max_tokens=24 on
// the demo task rewrote the YAML through a map and lost the nl stop "\n".
func TestSetKeepsOtherFields(t *testing.T) {
	c, err := ResolveWith("demo", map[string]string{"max_tokens": "24"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Stop["nl"]; len(got) != 1 || got[0] != "\n" {
		t.Errorf("nl stop after --set max_tokens=24 = %q, want [\"\\n\"]", got)
	}
	c, err = ResolveWith("demo", map[string]string{"max_tokens": "7", "lang": "ZH"})
	if err != nil {
		t.Fatal(err)
	}
	if none, ok := c.Stop["none"]; c.MaxTokens != 7 || c.Lang != "ZH" || c.Stop["nl"][0] != "\n" || !ok || len(none) != 0 ||
		c.Prompt != "Passage: {{.passage}}\nQuestion: {{.question}}\nAnswer:" {
		t.Errorf("--set max_tokens=7 lang=ZH: got %+v", c)
	}
	if _, err := ResolveWith("demo", map[string]string{"no_such_field": "1"}); err == nil || !strings.Contains(err.Error(), "no_such_field") {
		t.Errorf("--set of an unknown field: error %v", err)
	}
}

// TestNoOpSetRoundTrips sets every top-level field of every built-in task
// to its own value, as written in the YAML, and checks the config is
// unchanged.
func TestNoOpSetRoundTrips(t *testing.T) {
	for _, n := range Builtin() {
		want, err := Resolve(n)
		if err != nil {
			t.Fatal(err)
		}
		b, err := builtinFS.ReadFile("builtin/" + n + ".yaml")
		if err != nil {
			t.Fatal(err)
		}
		var doc yaml.Node
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		root := doc.Content[0]
		for i := 0; i+1 < len(root.Content); i += 2 {
			k := root.Content[i].Value
			v, err := yaml.Marshal(root.Content[i+1])
			if err != nil {
				t.Fatal(err)
			}
			got, err := ResolveWith(n, map[string]string{k: string(v)})
			if err != nil {
				t.Errorf("%s: --set %s=%s: %v", n, k, v, err)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: no-op --set %s=%s changed the config:\n got %+v\nwant %+v", n, k, v, got, want)
			}
		}
	}
}

// FuzzSetFields sets the demo task's max_tokens or a new field to any
// value: setFields never panics, and whatever it yields still holds every
// other field as written.
func FuzzSetFields(f *testing.F) {
	for _, s := range []string{"24", `"\n"`, "[a, b]", "{x: 1}", "", "- 1\n- 2", "'", "null", "&a 1", "*a"} {
		f.Add("max_tokens", s)
		f.Add("lang", s)
	}
	base, err := builtinFS.ReadFile("builtin/demo.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key, val string) {
		if key == "stop" || key == "prompt" {
			return
		}
		out, err := setFields(base, map[string]string{key: val})
		if err != nil {
			return
		}
		var c struct {
			Stop   map[string][]string `yaml:"stop"`
			Prompt string              `yaml:"prompt"`
		}
		if err := yaml.Unmarshal(out, &c); err != nil {
			return // the new value may make the document invalid; decoding reports it
		}
		if none, ok := c.Stop["none"]; len(c.Stop["nl"]) != 1 || c.Stop["nl"][0] != "\n" || !ok || len(none) != 0 ||
			c.Prompt != "Passage: {{.passage}}\nQuestion: {{.question}}\nAnswer:" {
			t.Fatalf("--set %s=%q changed other fields:\n%s", key, val, out)
		}
	})
}

// TestLoadNoDocs: loading without documents gives the same samples, less
// each one's Doc and Notes.
func TestLoadNoDocs(t *testing.T) {
	c, err := Resolve("demo")
	if err != nil {
		t.Fatal(err)
	}
	full, err := c.Load(LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bare, err := c.Load(LoadOptions{NoDocs: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(full.Samples) == 0 || len(full.Samples) != len(bare.Samples) {
		t.Fatalf("%d samples, %d without docs", len(full.Samples), len(bare.Samples))
	}
	for i, s := range full.Samples {
		if len(s.Doc) == 0 || bare.Samples[i].Doc != nil {
			t.Fatalf("sample %d: doc %q, without docs %q", i, s.Doc, bare.Samples[i].Doc)
		}
		if s.Notes == nil || bare.Samples[i].Notes != nil {
			t.Fatalf("sample %d: notes %v, without docs %v", i, s.Notes, bare.Samples[i].Notes)
		}
		s.Doc, s.Notes = nil, nil
		if !reflect.DeepEqual(s, bare.Samples[i]) {
			t.Errorf("sample %d:\n%+v\nwithout docs\n%+v", i, s, bare.Samples[i])
		}
	}
}

// TestLoadAll: configs load as each would alone, in their order, and the
// error is that of the first config (in order) that fails.
func TestLoadAll(t *testing.T) {
	demo, err := Resolve("demo")
	if err != nil {
		t.Fatal(err)
	}
	drop, err := Resolve("drop")
	if err != nil {
		t.Fatal(err)
	}
	first := *drop
	first.Task = "drop-first"
	alone, err := demo.Load(LoadOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	all, err := LoadAll([]*Config{demo, demo}, LoadOptions{Limit: 3})
	if err != nil || len(all) != 2 || !reflect.DeepEqual(all[0], alone) || !reflect.DeepEqual(all[1], alone) {
		t.Fatalf("LoadAll: %d loads, %v", len(all), err)
	}
	for range 20 {
		_, err := LoadAll([]*Config{demo, &first, drop}, LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), "drop-first") {
			t.Fatalf("error %v, want drop-first's", err)
		}
	}
}

// TestLMEvalPastBounds: an lm-eval task file past the load's bounds (its
// aliases expand past 16 MiB) is told an lm-eval task file, and refused
// as one, not read as a tally task file.
func TestLMEvalPastBounds(t *testing.T) {
	var b strings.Builder
	b.WriteString("task: t\ntest_split: test\ndoc_to_text: q\ndoc_to_target: a\nmetadata:\n  a0: &a0 \"" + strings.Repeat("x", 1000) + "\"\n")
	for i := 1; i <= 5; i++ {
		b.WriteString("  a" + strconv.Itoa(i) + ": &a" + strconv.Itoa(i) + " [" + strings.TrimSuffix(strings.Repeat("*a"+strconv.Itoa(i-1)+", ", 10), ", ") + "]\n")
	}
	p := filepath.Join(t.TempDir(), "t.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ResolveAll(p, nil); err == nil || !strings.Contains(err.Error(), "expand to more than 16 MiB") {
		t.Errorf("ResolveAll: %v", err)
	}
}
