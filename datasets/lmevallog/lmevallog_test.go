package lmevallog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, line string
		prompt     string
		until      []string
		resp       string
		errSub     string
	}{
		{"lm-eval 0.4.0 list layout", `{"doc_id":0,"doc":{"q":1},"arguments":[["P:\nA:",{"until":["."]}]],"resps":[[" 12\n\nPassage"]]}`, "P:\nA:", []string{"."}, " 12\n\nPassage", ""},
		{"newer named layout", `{"doc_id":3,"doc":{},"arguments":{"gen_args_0":{"arg_0":"Q","arg_1":{"until":["\n\n","Question:"]}}},"resps":[["a"]]}`, "Q", []string{"\n\n", "Question:"}, "a", ""},
		{"until as a string", `{"doc_id":1,"doc":{},"arguments":[["Q",{"until":"."}]],"resps":[["x"]]}`, "Q", []string{"."}, "x", ""},
		{"no kwargs", `{"doc_id":1,"doc":{},"arguments":[["Q"]],"resps":[["x"]]}`, "Q", nil, "x", ""},
		{"missing doc_id", `{"doc":{},"arguments":[["Q"]],"resps":[["x"]]}`, "", nil, "", "doc_id"},
		{"doc not an object", `{"doc_id":1,"doc":[1],"arguments":[["Q"]],"resps":[["x"]]}`, "", nil, "", `"doc"`},
		{"bad arguments", `{"doc_id":1,"doc":{},"arguments":{"x":1},"resps":[["x"]]}`, "", nil, "", `"arguments"`},
		{"empty resps", `{"doc_id":1,"doc":{},"arguments":[["Q"]],"resps":[]}`, "", nil, "", `"resps"`},
		{"response not a string", `{"doc_id":1,"doc":{},"arguments":[["Q"]],"resps":[[3]]}`, "", nil, "", `"resps"[0][0]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parse([]byte(tc.line))
			if tc.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSub) {
					t.Fatalf("error %v, want containing %q", err, tc.errSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Prompt != tc.prompt || r.Response != tc.resp || strings.Join(r.Until, "|") != strings.Join(tc.until, "|") {
				t.Errorf("got %+v", r)
			}
		})
	}
}

func TestReadFileNamesLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "samples_drop_x.jsonl")
	os.WriteFile(p, []byte(`{"doc_id":0,"doc":{},"arguments":[["Q"]],"resps":[["a"]]}`+"\n"+`{"doc_id":1,"doc":{},"arguments":[["Q"]]}`+"\n"), 0o644)
	_, err := ReadFile(p)
	if err == nil || !strings.Contains(err.Error(), "samples_drop_x.jsonl line 2") {
		t.Fatalf("error %v, want one naming the file and line 2", err)
	}
}

func TestIsLog(t *testing.T) {
	if !IsLog(map[string]any{"doc": 1, "resps": 1, "arguments": 1}) || IsLog(map[string]any{"doc": 1}) {
		t.Error("IsLog")
	}
}

func FuzzParse(f *testing.F) {
	f.Add(`{"doc_id":0,"doc":{},"arguments":[["Q",{"until":["."]}]],"resps":[["a"]]}`)
	f.Add(`{"doc_id":3,"doc":{},"arguments":{"gen_args_0":{"arg_0":"Q","arg_1":{"until":"x"}}},"resps":[["a"]]}`)
	f.Add(`{"arguments":[[]],"resps":[[]]}`)
	f.Fuzz(func(t *testing.T, line string) {
		r, err := parse([]byte(line))
		if err == nil && r.Doc == nil {
			t.Fatalf("parsed %q without a doc", line)
		}
	})
}
