package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

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
// the scale store (scaleStore: 200,000 generations, 20 tasks, 2.4 million
// scores): the time and peak
// memory of `tally report --format html` (the binary, as a user runs it),
// the page's size, and, with Chromium, the time to the first view of the
// page (headless Chromium's screenshot of its first screen, less that of
// an empty page) and the time the page's script takes to show the first
// page of samples (as the page records it). With
// TALLY_BASELINE_BIN=PATH (an older tally binary) the same figures are
// measured for it, in the same run, for comparison: on the same store,
// or on TALLY_BASELINE_STORE=PATH (a copy of the store as the older tally
// has it, where this one has migrated its own).
func BenchmarkHTMLScale(b *testing.B) {
	db, _ := scaleStore(b)
	bins := map[string]string{"": built}
	stores := map[string]string{"": db, "baseline-": db}
	if base := os.Getenv("TALLY_BASELINE_BIN"); base != "" {
		bins["baseline-"] = base
	}
	if st := os.Getenv("TALLY_BASELINE_STORE"); st != "" {
		stores["baseline-"] = st
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
			cmd := exec.Command("sh", "-c", `exec "$0" report --store "$1" --format html > "$2"`, bin, stores[prefix], page)
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
