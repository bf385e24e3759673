package variant

import (
	"strconv"
	"strings"
	"testing"
)

func TestKeyAndName(t *testing.T) {
	a := Spec{Task: "drop", Fields: map[string]string{"fewshot": "3"}, Files: map[string]string{"data": "ab"}}
	b := Spec{Task: "drop", Fields: map[string]string{"fewshot": "3"}, Files: map[string]string{"data": "ab"}}
	if a.Key() != b.Key() {
		t.Fatalf("equal specs, keys %s and %s", a.Key(), b.Key())
	}
	for _, other := range []Spec{
		{Task: "drop", Fields: map[string]string{"fewshot": "0"}, Files: map[string]string{"data": "ab"}},
		{Task: "drop", Fields: map[string]string{"fewshot": "3"}, Files: map[string]string{"data": "cd"}},
		{Task: "drop", Fields: map[string]string{"fewshot": "3"}, Files: map[string]string{"data": "ab"}, Chat: true},
		{Task: "drop2", Fields: map[string]string{"fewshot": "3"}, Files: map[string]string{"data": "ab"}},
		{Task: "drop", Legacy: &Legacy{Config: "{}"}},
	} {
		if other.Key() == a.Key() {
			t.Errorf("%+v: same key as %+v", other, a)
		}
	}
	for _, tc := range []struct{ key, name string }{
		{a.Key(), "drop"},
		{"drop", "drop"},
		{"a#b#0123456789ab", "a#b"},
		{"x#notadigest", "x#notadigest"},
		{"x#0123456789AB", "x"},
		{"#0123456789ab", "#0123456789ab"},
	} {
		if got := Name(tc.key); got != tc.name {
			t.Errorf("Name(%q) = %q, want %q", tc.key, got, tc.name)
		}
	}
	if !strings.HasPrefix(a.Key(), "drop#") || len(a.Key()) != len("drop#")+12 {
		t.Errorf("key %q: want drop# and 12 hexadecimal digits", a.Key())
	}
}

// TestLabels: a task alone in view is named by its name; variants of one
// name are told apart by what differs between them, and only that.
func TestLabels(t *testing.T) {
	rec := func(fewshot int, fields map[string]string, data string, chat bool) Record {
		f := map[string]string{"prompt": `"Q: {{.q}}"`}
		for k, v := range fields {
			f[k] = v
		}
		if fewshot > 0 {
			f["fewshot"] = strconv.Itoa(fewshot)
		}
		return New(Spec{Task: "drop", Fields: f, Files: map[string]string{"data": data}, Chat: chat},
			Info{FewShot: fewshot, Paths: map[string]string{"data": "/x/dev-" + data[:2] + ".json"}})
	}
	legacy := func(name, cfg string, prompts bool) Record {
		return New(Spec{Task: name, Legacy: &Legacy{Config: cfg, Prompts: prompts}}, Info{})
	}
	longTmpl := rec(3, map[string]string{"prompt": `"Passage: {{.passage}}\nQuestion: {{.question}}\nAnswer:"`}, "aaaa1111", false)
	for _, tc := range []struct {
		name string
		recs []Record
		want []string
	}{
		{"one", []Record{rec(3, nil, "aaaa1111", false)}, []string{"drop"}},
		{"fewshot", []Record{rec(3, nil, "aaaa1111", false), rec(0, nil, "aaaa1111", false)}, []string{"drop (3-shot)", "drop (0-shot)"}},
		{"chat", []Record{rec(3, nil, "aaaa1111", false), rec(3, nil, "aaaa1111", true)}, []string{"drop (no chat)", "drop (chat)"}},
		{"data", []Record{rec(3, nil, "aaaa1111", false), rec(3, nil, "bbbb2222", false)},
			[]string{"drop (data dev-aa.json aaaa1111)", "drop (data dev-bb.json bbbb2222)"}},
		{"short field", []Record{rec(3, nil, "aaaa1111", false), rec(3, map[string]string{"lang": `"ZH"`}, "aaaa1111", false)},
			[]string{"drop (no lang)", "drop (lang=ZH)"}},
		{"long field", []Record{rec(3, nil, "aaaa1111", false), longTmpl}, []string{`drop (prompt="Q: {{.q}}")`, "drop (prompt #"}},
		{"two at once", []Record{rec(3, nil, "aaaa1111", false), rec(0, nil, "aaaa1111", true)}, []string{"drop (3-shot, no chat)", "drop (0-shot, chat)"}},
		{"legacy", []Record{legacy("drop", `{"set":["fewshot=0"]}`, true), legacy("drop", `{}`, false)},
			[]string{"drop (earlier tally, --set fewshot=0)", "drop (earlier tally, prompts not stored, no --set)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := map[string]Record{}
			var keys []string
			for _, r := range tc.recs {
				recs[r.Key] = r
				keys = append(keys, r.Key)
			}
			keys = append(keys, "other#0123456789ab")
			labels := Labels(keys, recs)
			for i, r := range tc.recs {
				if got := labels[r.Key]; !strings.HasPrefix(got, tc.want[i]) {
					t.Errorf("label of %d: %q, want %q", i, got, tc.want[i])
				}
			}
			if labels["other#0123456789ab"] != "other" {
				t.Errorf("a task alone: %q", labels["other#0123456789ab"])
			}
		})
	}
}

// TestLabelsDistinct: variants a label cannot tell apart (an earlier
// tally's task beside a record-less key) still get distinct labels.
func TestLabelsDistinct(t *testing.T) {
	keys := []string{"t#0123456789ab", "t#ba9876543210", "t"}
	labels := Labels(keys, nil)
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[labels[k]] {
			t.Fatalf("labels %v: not distinct", labels)
		}
		seen[labels[k]] = true
	}
}
