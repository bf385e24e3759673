package tasks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func shared(t *testing.T, rel string) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared", rel)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

func TestBuiltinsResolve(t *testing.T) {
	names := Builtin()
	for _, want := range []string{"counting-stars", "demo", "drop", "jsonl", "leval"} {
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
		{"demo", "", 0, 16, func(r json.RawMessage) string { var x []string; json.Unmarshal(r, &x); return " " + x[0] }, "exact_match", 1},
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

func TestTokenF1(t *testing.T) {
	tests := []struct {
		pred string
		refs []string
		want float64
	}{
		{"The cat sat.", []string{"cat sat"}, 1},
		{"a dog", []string{"the cat"}, 0},
		{"cat dog", []string{"cat"}, 2.0 / 3},
		{"", []string{""}, 0},
	}
	for _, tc := range tests {
		if got := TokenF1(tc.pred, tc.refs); got != tc.want {
			t.Errorf("TokenF1(%q, %q) = %v, want %v", tc.pred, tc.refs, got, tc.want)
		}
	}
}
