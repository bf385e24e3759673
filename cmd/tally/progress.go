package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"tally/generate"
)

// progress reports samples done, prompt tokens prefilled, tokens
// generated, tokens/s and the time left, estimated from tokens, on stderr:
// a progress bar on a terminal, plain lines (at most one every 5 seconds)
// otherwise. Failed samples are printed as they happen.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	bar     *progressbar.ProgressBar
	total   int
	done    int
	tokens  int
	start   time.Time
	lastOut time.Time
	// From generate.TokenProgress: prompt tokens and budget announced,
	// and, over finished samples, prompt tokens prefilled, budget spent
	// and tokens generated.
	promptTotal, budgetTotal       int
	prefilled, budgetDone, genDone int
	failed                         int
	// terminal draws the bar whatever w is (tests).
	terminal bool
}

// barThrottle is the least time between two drawings of the bar.
var barThrottle = 100 * time.Millisecond

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
	if p.terminal || isTerminal(p.w) {
		// The bar's own prediction is off: the description's eta, from
		// tokens, is the one estimate shown (the bar's, from samples, was
		// a second one that disagreed); the bracket shows the time elapsed.
		p.bar = progressbar.NewOptions(samples, progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription("generating"),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(false), progressbar.OptionShowElapsedTimeOnFinish(),
			progressbar.OptionThrottle(barThrottle), progressbar.OptionClearOnFinish())
		_ = p.bar.RenderBlank()
	} else {
		fmt.Fprintf(p.w, "generating %s\n", plural(samples, "sample", "samples"))
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

// Work announces the prompt tokens to prefill and the token budget.
func (p *progress) Work(promptTokens, budget int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.promptTotal, p.budgetTotal = promptTokens, budget
}

// SampleEnded counts a finished sample's tokens and prints its failure at
// once.
func (p *progress) SampleEnded(id string, promptTokens, budget, generated int, errText string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prefilled += promptTokens
	p.budgetDone += budget
	p.genDone += generated
	if errText != "" {
		p.failed++
		if p.bar != nil {
			p.bar.Clear()
		}
		fmt.Fprintf(p.w, "tally: sample %s failed: %s\n", id, errText)
	}
}

// Waiting says, on its own line, whose claims the process waits for and
// when their lease ends.
func (p *progress) Waiting(w generate.Wait) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Clear()
	}
	fmt.Fprintf(p.w, "tally: %s\n", w)
}

// etaFromTokens estimates the time left from tokens: the budget not yet
// spent, scaled by the share of their budget finished samples actually
// generated, at the generation rate so far. ok is false until tokens have
// been generated.
func etaFromTokens(elapsed time.Duration, generated, budgetTotal, budgetDone, genDone int) (time.Duration, bool) {
	if generated <= 0 || elapsed <= 0 || budgetTotal <= 0 {
		return 0, false
	}
	fill := 1.0
	if budgetDone > 0 {
		fill = float64(genDone) / float64(budgetDone)
	}
	left := float64(max(budgetTotal-budgetDone, 0))*fill - float64(generated-genDone)
	if left < 0 {
		left = 0
	}
	rate := float64(generated) / elapsed.Seconds()
	return time.Duration(left / rate * float64(time.Second)).Round(time.Second), true
}

func (p *progress) report(final bool) {
	el := time.Since(p.start)
	tps := 0.0
	if el > 0 {
		tps = float64(p.tokens) / el.Seconds()
	}
	eta := "?"
	if p.done == p.total {
		eta = "0s"
	} else if d, ok := etaFromTokens(el, p.tokens, p.budgetTotal, p.budgetDone, p.genDone); ok {
		eta = d.String()
	} else if p.done > 0 && p.done < p.total {
		eta = (time.Duration(el.Seconds()/float64(p.done)*float64(p.total-p.done)) * time.Second).Round(time.Second).String()
	}
	prefill := fmt.Sprintf("%d", p.prefilled)
	if p.promptTotal > 0 {
		prefill += fmt.Sprintf("/%d", p.promptTotal)
	}
	failed := ""
	if p.failed > 0 {
		failed = fmt.Sprintf(", %d failed", p.failed)
	}
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("generating (%s prompt tokens prefilled, %d generated, %.1f tok/s, eta %s%s)", prefill, p.tokens, tps, eta, failed))
		return
	}
	if !final && time.Since(p.lastOut) < 5*time.Second {
		return
	}
	p.lastOut = time.Now()
	fmt.Fprintf(p.w, "%d/%d samples, %s prompt tokens prefilled, %d tokens generated, %.1f tok/s, eta %s%s\n",
		p.done, p.total, prefill, p.tokens, tps, eta, failed)
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
