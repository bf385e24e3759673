package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestFirstSignalEndsHang (issue 37, item 5): a command waiting on
// something that ignores its cancelled context (here tally metric reading
// a pipe whose writer never closes it) is ended by the first SIGINT or
// SIGTERM, with status 130 and a line saying so; before, only a second
// signal ended it. It is ended interruptBound after the signal.
func TestFirstSignalEndsHang(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			t.Parallel() // each waits interruptBound
			ctx, cancel := context.WithTimeout(context.Background(), outageGuard)
			defer cancel()
			cmd := exec.CommandContext(ctx, built, "metric", "exact_match")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// More than a pipe holds: once written, tally is reading
			// (its signals are taken), and the pipe stays open.
			var lines bytes.Buffer
			for i := 0; lines.Len() < 256<<10; i++ {
				fmt.Fprintf(&lines, `{"prediction": "a%d", "references": ["a%d"]}`+"\n", i, i)
			}
			if _, err := stdin.Write(lines.Bytes()); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err = cmd.Wait()
			stdin.Close()
			if ctx.Err() != nil {
				t.Fatalf("still running after %s: killed\n%s", outageGuard, stderr.String())
			}
			code := -1
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			if code != ExitInterrupted || !strings.Contains(stderr.String(), "interrupted") || strings.Contains(stderr.String(), "interrupted again") {
				t.Errorf("status %d, stderr %q; want %d after one signal", code, stderr.String(), ExitInterrupted)
			}
		})
	}
}
