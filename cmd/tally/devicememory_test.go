package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDeviceMemoryFlag: --device-memory gives the native engine's memory
// plan its size (on XLA there is no plan without it), run prints the plan
// as a "memory:" line before any work, also with --json, and a size that
// cannot hold the model fails every request before any model work.
func TestDeviceMemoryFlag(t *testing.T) {
	bin := buildTally(t)
	dir := t.TempDir()
	cases := []struct {
		name, memory string
		ok           bool
		want         []string
	}{
		{"1 GiB", "1GiB", true, []string{"memory: batch 8", "of 1.00 GiB free"}},
		{"bytes, --json", "1073741824", true, []string{"memory: batch 8", "of 1.00 GiB free"}},
		{"too little", "64MiB", false, []string{"memory: plan memory: model and cache do not fit in memory"}},
		{"not a size", "12x", false, []string{`--device-memory "12x": want a size such as 79GiB`}},
		{"server model", "1GiB", false, []string{"--device-memory applies to the native backend"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			model := "demo"
			if tc.name == "server model" {
				model = "ollama:none"
			}
			args := []string{"run", "--model", model, "--tasks", "demo", "--limit", "2", "--device-memory", tc.memory,
				"--store", filepath.Join(dir, string(rune('a'+i))+".db")}
			if strings.Contains(tc.name, "--json") {
				args = append(args, "--json")
			}
			out, err := runTallyErr(bin, args...)
			if (err == nil) != tc.ok {
				t.Fatalf("tally %s: err %v\n%s", strings.Join(args, " "), err, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}
