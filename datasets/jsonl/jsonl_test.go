package jsonl

import (
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		skipBad bool
		rows    int
		skipped int
		errSub  string
	}{
		{"ok", "{\"a\":1}\n\n{\"a\":2}\r\n", false, 2, 0, ""},
		{"no trailing newline", `{"a":1}`, false, 1, 0, ""},
		{"malformed", "{\"a\":1}\n{\"a\":\n", false, 1, 0, "f.jsonl line 2"},
		{"invalid utf8", "{\"a\":\"\xff\"}\n", false, 0, 0, "line 1: invalid UTF-8"},
		{"not an object", "[1,2]\n", false, 0, 0, "line 1"},
		{"two values", "{} {}\n", false, 0, 0, "more than one"},
		{"skip bad", "{\"a\":1}\nnope\n{\"a\":3}\n", true, 2, 1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Read(strings.NewReader(tc.in), "f.jsonl", tc.skipBad)
			if tc.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSub) {
					t.Fatalf("error %v, want containing %q", err, tc.errSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Rows) != tc.rows || res.Skipped != tc.skipped {
				t.Fatalf("rows %d skipped %d, want %d %d", len(res.Rows), res.Skipped, tc.rows, tc.skipped)
			}
		})
	}
}

func FuzzRead(f *testing.F) {
	f.Add("{\"a\":1}\n{\"b\":[1,2]}\n")
	f.Add("\xff\n{")
	f.Fuzz(func(t *testing.T, in string) {
		res, err := Read(strings.NewReader(in), "f", true)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Rows) != len(res.Lines) {
			t.Fatal("rows and lines disagree")
		}
	})
}
