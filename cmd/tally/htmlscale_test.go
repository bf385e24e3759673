package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"tally/generate"
	"tally/store"
)

// htmlScaleStore builds a store like the one issue 23 measured: 20 tasks of
// 5,000 samples, 2 models, so 200,000 generations (1% of them failed: the
// prompt exceeded the context), each scored under dot and nl (em, f1) and
// none (em): 990,000 scores; prompts of about 100 words, continuations of
// about 12. TALLY_SCALE_STORE=FILE keeps it there and reuses it.
func htmlScaleStore(b *testing.B) string {
	b.Helper()
	path := os.Getenv("TALLY_SCALE_STORE")
	if path == "" {
		path = filepath.Join(b.TempDir(), "scale.db")
	} else if _, err := os.Stat(path); err == nil {
		return path
	}
	ctx := context.Background()
	st, err := store.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	vocab := strings.Fields("the of and to in a is that for it as was with be by on not he I this are or his from at which but have an they you were her she there one all we their Bulls Lions scored joined yards miles points")
	words := func(r *rand.Rand, n int) string {
		var sb strings.Builder
		for range n {
			sb.WriteString(vocab[r.IntN(len(vocab))])
			if r.IntN(6) == 0 {
				fmt.Fprintf(&sb, " %d", r.IntN(1000))
			}
			sb.WriteByte(' ')
		}
		return sb.String()
	}
	settings := []generate.StopSetting{{Name: "dot", Seqs: []string{"."}}, {Name: "nl", Seqs: []string{"\n"}}, {Name: "none"}}
	stops, _ := json.Marshal(map[string]any{"settings": settings})
	for _, m := range []string{"m1", "m2"} {
		cfg, _ := json.Marshal(map[string]any{"command": "run", "model": "org/" + m})
		if _, err := st.StartRun(ctx, store.Run{Command: "run", Model: "org/" + m, Fingerprint: "fp-" + m, Config: cfg}); err != nil {
			b.Fatal(err)
		}
	}
	const tasks, perTask = 20, 5000
	for ti := range tasks {
		task := fmt.Sprintf("task%02d", ti)
		r := rand.New(rand.NewPCG(uint64(ti), 1))
		var samples []store.Sample
		for i := range perTask {
			refs, _ := json.Marshal([][]string{{fmt.Sprint(r.IntN(100))}})
			samples = append(samples, store.Sample{Task: task, ID: fmt.Sprint(i), Prompt: "Passage: " + words(r, 100) + "\nQuestion: how many?\nAnswer:",
				Refs: refs, Metadata: json.RawMessage(`{"metadata":null,"share_key":""}`)})
		}
		if err := st.PutSamples(ctx, samples); err != nil {
			b.Fatal(err)
		}
		for _, m := range []string{"m1", "m2"} {
			var gens []store.Generation
			var scores []store.Score
			for i := range perTask {
				key := fmt.Sprintf("%s-%s-%d", m, task, i)
				g := store.Generation{Key: key, Fingerprint: "fp-" + m, Task: task, SampleID: fmt.Sprint(i), Budget: 32, Stops: stops, Finish: "length",
					Text: fmt.Sprintf(" %d.%d\n\nPassage: %s", r.IntN(100), r.IntN(10), words(r, 8))}
				if r.IntN(100) == 0 {
					g.Text, g.Finish, g.PromptTokens = "", "context", 2100
					gens = append(gens, g)
					continue
				}
				gens = append(gens, g)
				for _, set := range settings {
					pred, _, _ := generate.Truncate(&g, set, 32)
					for _, metric := range []string{"em", "f1"} {
						if set.Name == "none" && metric == "f1" {
							continue
						}
						scores = append(scores, store.Score{GenKey: key, Task: task, SampleID: g.SampleID, Setting: set.Name, SettingKey: set.Key(),
							Budget: 32, Metric: metric, Value: float64(r.IntN(2)), Prediction: pred})
					}
				}
			}
			if err := st.PutGenerations(ctx, gens, scores); err != nil {
				b.Fatal(err)
			}
		}
	}
	return path
}

// timedRun runs a command and returns its wall time, CPU time (user and
// system) and peak resident set size (MB).
func timedRun(b *testing.B, cmd *exec.Cmd) (wall, cpu time.Duration, rssMB float64) {
	b.Helper()
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s: %v\n%.2000s", strings.Join(cmd.Args, " "), err, out)
	}
	wall = time.Since(start)
	ru, _ := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if ru == nil {
		return wall, 0, 0
	}
	return wall, time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), float64(ru.Maxrss) / 1024
}

// median is the middle of some durations.
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// BenchmarkHTMLScale is issue 23's scale finding for the HTML report, on
// a generated store of 200,000 generations (20 tasks): the time and peak
// memory of `tally report --format html` (the binary, as a user runs it),
// the page's size, and, with Chromium, the time to the first view of the
// page (headless Chromium's screenshot of its first screen, less that of
// an empty page) and the time the page's script takes to show the first
// page of samples (as the page records it). With
// TALLY_BASELINE_BIN=PATH (an older tally binary) the same figures are
// measured for it on the same store, in the same run, for comparison.
func BenchmarkHTMLScale(b *testing.B) {
	db := htmlScaleStore(b)
	bins := map[string]string{"": built}
	if base := os.Getenv("TALLY_BASELINE_BIN"); base != "" {
		bins["baseline-"] = base
	}
	chrome := chromiumBin()
	dir := b.TempDir()
	b.ResetTimer()
	for b.Loop() {
		for prefix, bin := range bins {
			page := filepath.Join(dir, prefix+"report.html")
			f, err := os.Create(page)
			if err != nil {
				b.Fatal(err)
			}
			cmd := exec.Command("sh", "-c", `exec "$0" report --store "$1" --format html > "$2"`, bin, db, page)
			wall, cpu, rss := timedRun(b, cmd)
			f.Close()
			st, _ := os.Stat(page)
			b.ReportMetric(wall.Seconds(), prefix+"report-s")
			b.ReportMetric(cpu.Seconds(), prefix+"report-cpu-s")
			b.ReportMetric(rss, prefix+"report-peak-RSS-MB")
			b.ReportMetric(float64(st.Size())/1e6, prefix+"page-MB")
			if chrome == "" {
				continue
			}
			// First view: headless Chromium's screenshot of the page's
			// first screen (taken once its script is idle), less that of
			// an empty page, medians of 3 interleaved runs.
			blank := filepath.Join(dir, "blank.html")
			os.WriteFile(blank, []byte("<!doctype html><title>x</title><body>x"), 0o644)
			flags := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
				"--disable-component-update", "--disable-sync", "--user-data-dir=" + b.TempDir(), "--virtual-time-budget=60000"}
			var blanks, views []time.Duration
			for range 3 {
				for _, p := range []string{blank, page} {
					w, _, _ := timedRun(b, exec.Command(chrome, append(flags, "--window-size=1280,900", "--screenshot="+filepath.Join(dir, "shot.png"), "file://"+p)...))
					if p == blank {
						blanks = append(blanks, w)
					} else {
						views = append(views, w)
					}
				}
			}
			b.ReportMetric((median(views) - median(blanks)).Seconds(), prefix+"first-view-s")
			// The sample browser's readiness, as the page measures it.
			out, err := exec.Command(chrome, append(flags, "--dump-dom", "file://"+page)...).Output()
			if err != nil {
				b.Fatalf("chromium: %v", err)
			}
			m := regexp.MustCompile(`data-load-ms="(\d+)"`).FindSubmatch(out)
			if m == nil || strings.Contains(string(out), "data-errors=") {
				b.Fatalf("%spage did not load: %.500s", prefix, regexp.MustCompile(`(?s)<div id="js-errors".*?</div>`).Find(out))
			}
			var ms float64
			fmt.Sscan(string(m[1]), &ms)
			b.ReportMetric(ms/1000, prefix+"browser-ready-s")
		}
	}
}
