package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress reports samples done, tokens/s and ETA on stderr: a progress
// bar on a terminal, plain lines (at most one every 5 seconds) otherwise.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	bar     *progressbar.ProgressBar
	total   int
	done    int
	tokens  int
	start   time.Time
	lastOut time.Time
}

func newProgress(w io.Writer) *progress { return &progress{w: w} }

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Start announces the samples to generate.
func (p *progress) Start(samples int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total, p.start, p.lastOut = samples, time.Now(), time.Now()
	if samples == 0 {
		return
	}
	if isTerminal(p.w) {
		p.bar = progressbar.NewOptions(samples, progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription("generating"),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	} else {
		fmt.Fprintf(p.w, "generating %d samples\n", samples)
	}
}

// Tokens counts newly generated tokens.
func (p *progress) Tokens(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tokens += n
	p.report(false)
}

// SampleDone counts a finished sample.
func (p *progress) SampleDone() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if p.bar != nil {
		p.bar.Add(1)
	}
	p.report(false)
}

func (p *progress) report(final bool) {
	el := time.Since(p.start).Seconds()
	tps := 0.0
	if el > 0 {
		tps = float64(p.tokens) / el
	}
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("generating (%.1f tok/s)", tps))
		return
	}
	if !final && time.Since(p.lastOut) < 5*time.Second {
		return
	}
	p.lastOut = time.Now()
	eta := "?"
	if p.done > 0 && p.done < p.total {
		eta = (time.Duration(el/float64(p.done)*float64(p.total-p.done)) * time.Second).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "%d/%d samples, %d tokens, %.1f tok/s, eta %s\n", p.done, p.total, p.tokens, tps, eta)
}

// Finish ends the bar or prints the last line.
func (p *progress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.total == 0 {
		return
	}
	if p.bar != nil {
		p.bar.Finish()
		return
	}
	p.report(true)
}
