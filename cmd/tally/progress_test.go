package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"tally/generate"
)

var (
	_ generate.TokenProgress = (*progress)(nil)
	_ generate.WaitProgress  = (*progress)(nil)
)

func TestETAFromTokens(t *testing.T) {
	for _, tc := range []struct {
		name                                  string
		el                                    time.Duration
		gen, budgetTotal, budgetDone, genDone int
		want                                  time.Duration
		ok                                    bool
	}{
		{"nothing generated", time.Second, 0, 100, 0, 0, 0, false},
		{"no sample done: whole budget at 10 tok/s", 10 * time.Second, 100, 1000, 0, 0, 90 * time.Second, true},
		{"samples use half their budget", 10 * time.Second, 100, 1000, 200, 100, 40 * time.Second, true},
		{"all done", 10 * time.Second, 100, 200, 200, 100, 0, true},
	} {
		got, ok := etaFromTokens(tc.el, tc.gen, tc.budgetTotal, tc.budgetDone, tc.genDone)
		if ok != tc.ok || got != tc.want {
			t.Errorf("%s: %v %v, want %v %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

func TestProgressCountsTokensAndFailures(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b)
	p.Start(2)
	p.Work(1000, 64)
	p.Tokens(10)
	p.SampleEnded("drop/1", 500, 32, 10, "")
	p.SampleDone()
	p.SampleEnded("drop/2", 500, 32, 0, "backend: connection reset")
	if !strings.Contains(b.String(), "tally: sample drop/2 failed: backend: connection reset") {
		t.Errorf("failure not shown as it happened:\n%s", b.String())
	}
	p.SampleDone()
	p.Finish()
	last := b.String()[strings.LastIndex(strings.TrimSpace(b.String()), "\n")+1:]
	for _, want := range []string{"2/2 samples", "1000/1000 prompt tokens prefilled", "10 tokens generated", "eta 0s", "1 failed"} {
		if !strings.Contains(last, want) {
			t.Errorf("last line %q lacks %q", last, want)
		}
	}
}

// TestProgressSaysWhatItWaitsFor: a run waiting for a dead process's
// claims says so on its own line while it waits (issue 26).
func TestProgressSaysWhatItWaitsFor(t *testing.T) {
	var b bytes.Buffer
	p := newProgress(&b)
	p.Start(4)
	now := time.Now()
	p.Waiting(generate.Wait{Generations: 4, Now: now, Holders: []generate.Holder{{ID: "h/9/x", PID: 9, Claims: 4, LeaseEnd: now.Add(20 * time.Second), Stopped: true}}})
	if !strings.Contains(b.String(), "tally: waiting for 4 generations claimed by other processes: 4 by h/9/x (pid 9 on this host, no longer running): its lease ends at") {
		t.Errorf("wait not shown:\n%s", b.String())
	}
}

// TestBarShowsOneETA is item 6 of issue 34: the terminal bar showed two
// estimates of the time left that disagreed (its own from samples,
// "[2s:9s]", and the description's from tokens); it shows one, the
// description's, beside the time elapsed.
func TestBarShowsOneETA(t *testing.T) {
	defer func(d time.Duration) { barThrottle = d }(barThrottle)
	barThrottle = 0
	var b bytes.Buffer
	p := &progress{w: &b, terminal: true}
	p.Start(4)
	p.Work(400, 40)
	p.Tokens(5)
	p.SampleEnded("a", 100, 10, 5, "")
	p.SampleDone()
	frames := strings.Split(b.String(), "\r")
	last := frames[len(frames)-1]
	if !strings.Contains(last, "1/4") || strings.Count(last, "eta") != 1 {
		t.Fatalf("last frame %q: want the count and one eta", last)
	}
	if prediction := regexp.MustCompile(`\[[0-9hms.]+:[0-9hms.]+\]`); prediction.MatchString(b.String()) {
		t.Errorf("the bar shows its own estimate beside the description's eta: %q", last)
	}
}
