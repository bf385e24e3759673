package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"strings"
	"time"
)

// stepRecord is one step of gpu-check.sh as the report shows it.
type stepRecord struct {
	Name string `json:"name"`
	// Status is ok, failed, timeout (stopped by its time limit) or skipped
	// (not run: no time left, not selected, or what it needs is missing).
	Status  string  `json:"status"`
	RC      int     `json:"rc"`
	Seconds float64 `json:"seconds"`
	Note    string  `json:"note,omitempty"`
	// LogTail is the end of the step's log for a step that did not pass.
	LogTail string `json:"log_tail,omitempty"`
	At      string `json:"at"`
}

// logTailBytes is how much of a failed step's log the report keeps.
const logTailBytes = 3000

func runStep(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("step", flag.ContinueOnError)
	var r stepRecord
	fs.StringVar(&r.Name, "name", "", "step name")
	fs.StringVar(&r.Status, "status", "", "ok, failed, timeout or skipped")
	fs.IntVar(&r.RC, "rc", 0, "exit status")
	fs.Float64Var(&r.Seconds, "seconds", 0, "wall time")
	fs.StringVar(&r.Note, "note", "", "one line about the step")
	logPath := fs.String("log", "", "the step's log (its tail is kept unless the step passed)")
	out := fs.String("out", "", "JSON file to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case r.Name == "" || *out == "":
		return errors.New("want -name NAME -status S -out FILE")
	case r.Status != "ok" && r.Status != "failed" && r.Status != "timeout" && r.Status != "skipped":
		return errors.New("-status: want ok, failed, timeout or skipped")
	}
	if r.Status != "ok" && *logPath != "" {
		r.LogTail = tailOf(*logPath, logTailBytes)
	}
	r.At = time.Now().UTC().Format(time.RFC3339)
	return writeJSONFile(*out, r)
}

// tailOf is the last n bytes of a file, from a line start ("" when it
// cannot be read).
func tailOf(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(data) > n {
		data = data[len(data)-n:]
		if i := strings.IndexByte(string(data), '\n'); i >= 0 && i < len(data)-1 {
			data = data[i+1:]
		}
	}
	return strings.ToValidUTF8(string(data), "?")
}
