package jsonl

import (
	"errors"
	"fmt"
	"slices"
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

// TestObjects: Objects hands over the object lines with their numbers,
// skipping blank lines, and refuses what Read refuses before decoding
// (invalid UTF-8, a line that is not an object, a line past the bound),
// naming the file and line; the callback's error ends the reading.
func TestObjects(t *testing.T) {
	type line struct {
		text string
		n    int
	}
	tests := []struct {
		name   string
		in     string
		want   []line
		errSub string
	}{
		{"ok", "{\"a\":1}\n\n  \n{\"a\":2}\r\n", []line{{`{"a":1}`, 1}, {`{"a":2}`, 4}}, ""},
		{"no trailing newline", `{"a":1}`, []line{{`{"a":1}`, 1}}, ""},
		{"invalid utf8", "{\"a\":1}\n{\"a\":\"\xff\"}\n", []line{{`{"a":1}`, 1}}, "f.jsonl line 2: invalid UTF-8"},
		{"not an object", "[1,2]\n", nil, "f.jsonl line 1: not a JSON object"},
		{"null", "null\n", nil, "f.jsonl line 1: not a JSON object"},
		{"callback error", "{}\n{\"stop\":1}\n{}\n", []line{{"{}", 1}}, "stop at 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []line
			err := Objects(strings.NewReader(tc.in), "f.jsonl", func(b []byte, n int) error {
				if strings.Contains(string(b), "stop") {
					return fmt.Errorf("stop at %d", n)
				}
				got = append(got, line{string(b), n})
				return nil
			})
			if tc.errSub == "" && err != nil || tc.errSub != "" && (err == nil || !strings.Contains(err.Error(), tc.errSub)) {
				t.Fatalf("error %v, want %q", err, tc.errSub)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("lines %+v, want %+v", got, tc.want)
			}
		})
	}
	long := strings.Repeat("x", MaxLine+1)
	if err := Objects(strings.NewReader("{}\n"+long), "f.jsonl", func([]byte, int) error { return nil }); !errors.Is(err, ErrLineTooLong) {
		t.Errorf("a line past the bound: %v", err)
	}
}
