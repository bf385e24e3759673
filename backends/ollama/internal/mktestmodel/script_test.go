package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestServerScriptFails is item 2 of issue 34: scripts/ollama-server.sh
// fails with a non-zero status and one line on stderr saying why in every
// failure path, and `eval "$(scripts/ollama-server.sh)"` fails with it
// (the script prints `false` for the eval'ing shell). Stand-ins for go and
// ollama make each step fail in turn.
func TestServerScriptFails(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	script, err := filepath.Abs("../../../../scripts/ollama-server.sh")
	if err != nil {
		t.Fatal(err)
	}
	const version = "v0.0.0-test"
	for _, tc := range []struct {
		name string
		// goCmd and ollama are the stand-ins' bodies ("" for none: go is
		// then the real one, and no ollama binary is cached).
		goCmd, ollama string
		want          string
	}{
		{"build fails", "echo 'go: module lookup disabled' >&2; exit 1", "", "building ollama " + version + " failed: go: module lookup disabled"},
		{"server never answers", "", "echo 'Error: listen tcp: address already in use' >&2; exit 1", "did not answer on 127.0.0.1:"},
		{"model fails", "echo 'mktestmodel: disk full' >&2; exit 1", `case $1 in serve) exec sleep 30;; list) exit 0;; esac; exit 1`, "making the test model of the demo model failed: mktestmodel: disk full"},
		{"create fails", "", `case $1 in serve) exec sleep 30;; list) exit 0;; create) echo 'Error: unsupported architecture' >&2; exit 1;; esac; exit 1`, "ollama create tally-tiny failed: Error: unsupported architecture"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache, bin := t.TempDir(), t.TempDir()
			path := os.Getenv("PATH")
			if tc.goCmd != "" {
				stub(t, filepath.Join(bin, "go"), tc.goCmd)
				path = bin + string(os.PathListSeparator) + path
			}
			if tc.ollama != "" {
				stub(t, filepath.Join(cache, "ollama-"+version, "bin", "ollama"), tc.ollama)
			}
			tmp := t.TempDir()
			cmd := exec.Command("bash", "-c", `eval "$("$0")"`, script)
			cmd.Env = append(os.Environ(), "PATH="+path, "TALLY_CACHE="+cache, "TALLY_OLLAMA_VERSION="+version, "TMPDIR="+tmp)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			last := lines[len(lines)-1]
			if err == nil {
				t.Errorf("eval of the script exited 0; stderr:\n%s", stderr.String())
			}
			if !strings.HasPrefix(last, "ollama-server: error: ") || !strings.Contains(last, tc.want) {
				t.Errorf("last line %q, want \"ollama-server: error: …%s…\"", last, tc.want)
			}
			if n := strings.Count(stderr.String(), "error:"); n != 1 {
				t.Errorf("%d lines say why, want one:\n%s", n, stderr.String())
			}
			// What it made is removed, and the server it started stopped.
			if left, _ := filepath.Glob(filepath.Join(tmp, "tally-ollama.*")); len(left) > 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
}

// stub writes an executable shell script at path.
func stub(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/usr/bin/env bash\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}
