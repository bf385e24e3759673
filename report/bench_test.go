package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tally/store"
)

// bigStore builds (once per benchmark) a store of 2 models × 2 tasks ×
// samplesPerTask samples, each generation scored 5 times (dot and nl × em
// and f1, none × em): 200,000 generations and 1,000,000 scores at 50,000.
func bigStore(b *testing.B, samplesPerTask, promptWords int) *store.Store {
	b.Helper()
	ctx := context.Background()
	// TALLY_BENCH_STORE=FILE keeps the big store there (reused when it
	// exists), for measuring the tally binary on it.
	path := os.Getenv("TALLY_BENCH_STORE")
	if path == "" || samplesPerTask != 50000 {
		dir, err := os.MkdirTemp("", "tally-bench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		path = filepath.Join(dir, "big.db")
	}
	_, statErr := os.Stat(path)
	st, err := store.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	if statErr == nil && samplesPerTask == 50000 {
		return st
	}
	for _, m := range []string{"m1", "m2"} {
		if _, err := st.StartRun(ctx, store.Run{Command: "run", Model: "org/" + m, Fingerprint: "fp-" + m, Config: json.RawMessage(`{}`)}); err != nil {
			b.Fatal(err)
		}
	}
	const batch = 5000
	for _, task := range []string{"drop", "other"} {
		var samples []store.Sample
		for i := range samplesPerTask {
			samples = append(samples, store.Sample{Task: task, ID: fmt.Sprint(i), Prompt: fmt.Sprintf("Passage %d: %s Question %d?", i, words(i, promptWords), i),
				Refs: json.RawMessage(`[["12.5"]]`), Metadata: json.RawMessage(`{}`)})
		}
		if err := st.PutSamples(ctx, samples); err != nil {
			b.Fatal(err)
		}
		for _, m := range []string{"m1", "m2"} {
			for lo := 0; lo < samplesPerTask; lo += batch {
				var gens []store.Generation
				var scores []store.Score
				for i := lo; i < min(lo+batch, samplesPerTask); i++ {
					key := fmt.Sprintf("%s-%s-%d", m, task, i)
					text := "12.5.\nPassage: more text that goes on"
					gens = append(gens, store.Generation{Key: key, Fingerprint: "fp-" + m, Task: task, SampleID: fmt.Sprint(i), Text: text,
						Finish: "length", Budget: 32, Stops: json.RawMessage(`{}`)})
					for _, s := range []struct{ name, key, pred string }{{"dot", ".", "12"}, {"nl", "\n", "12.5."}} {
						for _, metric := range []string{"em", "f1"} {
							scores = append(scores, store.Score{GenKey: key, Task: task, SampleID: fmt.Sprint(i), Setting: s.name, SettingKey: s.key,
								Budget: 32, Metric: metric, Value: float64(i % 2), Prediction: s.pred})
						}
					}
					scores = append(scores, store.Score{GenKey: key, Task: task, SampleID: fmt.Sprint(i), Setting: "none", Budget: 32,
						Metric: "em", Value: float64(i % 3 / 2), Prediction: text})
				}
				if err := st.PutGenerations(ctx, gens, scores); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return st
}

// words is n pseudo-random words (seeded by i), so prompts do not
// compress away.
func words(i, n int) string {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	vocab := strings.Fields("the of and to in a is that for it as was with be by on not he I this are or his from at which but have an they you were her she there one all we their")
	var b strings.Builder
	for range n {
		b.WriteString(vocab[r.IntN(len(vocab))])
		if r.IntN(7) == 0 {
			fmt.Fprintf(&b, " %d", r.IntN(10000))
		}
		b.WriteByte(' ')
	}
	return b.String()
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per op since start (with GOMAXPROCS=1
// the one-core figure, less sensitive than ns/op to other processes on a
// shared machine) and the peak resident set size so far.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/op")
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		b.ReportMetric(float64(ru.Maxrss)/1024, "peak-RSS-MB")
	}
}

// BenchmarkInventory is tally ls over 200,000 generations and 1,000,000
// scores.
func BenchmarkInventory(b *testing.B) {
	st := bigStore(b, 50000, 0)
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	for b.Loop() {
		inv, err := st.Inventory(context.Background())
		if err != nil || len(inv.Cells) != 12 {
			b.Fatalf("%v cells, %v", len(inv.Cells), err)
		}
	}
	reportCPU(b, start)
}

// BenchmarkReport is tally report (text) over 200,000 generations and
// 1,000,000 scores: read the scores, summarise every row, render.
func BenchmarkReport(b *testing.B) {
	st := bigStore(b, 50000, 0)
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	for b.Loop() {
		ds, err := LoadSummary(context.Background(), st, store.Filter{})
		if err != nil {
			b.Fatal(err)
		}
		var rows []Row
		for _, td := range ds.Tasks {
			rows = append(rows, td.Rows...)
		}
		if err := Text(io.Discard, rows, 10); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

// BenchmarkHTML10k writes the HTML report of 10,000 samples (2 models ×
// 2 tasks × 2,500, prompts of about 2,500 characters) and reports its
// size (TALLY_HTML_OUT=FILE keeps the page).
func BenchmarkHTML10k(b *testing.B) {
	st := bigStore(b, 2500, 400)
	ds, err := Load(context.Background(), st, store.Filter{})
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	b.ResetTimer()
	for b.Loop() {
		buf.Reset()
		if err := WriteHTML(&buf, ds); err != nil {
			b.Fatal(err)
		}
	}
	size := buf.Len()
	// TALLY_HTML_OUT keeps the page, for a scripted browser load.
	if out := os.Getenv("TALLY_HTML_OUT"); out != "" {
		if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size)/1e6, "MB")
}
