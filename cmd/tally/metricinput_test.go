package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"tally/internal/sharedtest"
)

func TestMetricInput(t *testing.T) {
	gz := func(s string) string {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.String()
	}
	lines := "{\"a\":1}\n{\"a\":2}\n"
	for _, tc := range []struct{ name, in, want string }{
		{"json lines", lines, lines},
		{"array", " [ {\"a\": 1},\n {\"a\":2} ]", lines},
		{"gzip lines", gz(lines), lines},
		{"gzip array", gz(`[{"a":1},{"a":2}]`), lines},
		{"empty array", "[]", ""},
		{"empty", "", ""},
	} {
		r, err := metricInput(strings.NewReader(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, _ := io.ReadAll(r)
		if string(got) != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	if _, err := metricInput(strings.NewReader(`[{"a":1},`)); err == nil {
		t.Error("truncated array: no error")
	}
}

// TestMetricPublishedAlpacaEval scores a published AlpacaEval
// annotations.json.gz (a gzipped JSON array) as it is: the leaderboard's
// win rate comes out (../shared/data/alpaca_eval/README.md).
func TestMetricPublishedAlpacaEval(t *testing.T) {
	path := sharedtest.Path(t, "data", "alpaca_eval", "results", "text_davinci_001", "alpaca_eval_gpt4", "annotations.json.gz")
	cmd := exec.Command(built, "metric", "alpaca-winrate", "--aggregate")
	in, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tally metric: %v", err)
	}
	var got struct {
		WinRate float64 `json:"win_rate"`
		NTotal  int     `json:"n_total"`
	}
	if err := json.Unmarshal(out, &got); err != nil || got.WinRate != 15.17412935323383 || got.NTotal != 804 {
		t.Errorf("win rate %s (%v)", out, err)
	}
}

func FuzzMetricInput(f *testing.F) {
	for _, s := range []string{"{\"a\":1}\n", `[{"a":1},{"b":[2]}]`, "[", "\x1f\x8b", " [ ] "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := metricInput(bytes.NewReader(in))
		if err != nil {
			return
		}
		out, _ := io.ReadAll(r)
		if len(bytes.TrimSpace(in)) > 0 && bytes.TrimSpace(in)[0] == '[' {
			for _, line := range bytes.Split(bytes.TrimSpace(out), []byte("\n")) {
				if len(line) > 0 && !json.Valid(line) {
					t.Fatalf("array element line %q is not JSON", line)
				}
			}
		}
	})
}
