package generate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"tally/backends"
	"tally/store"
)

// Estimate is what a plan expects its model work to cost, from what the
// store holds of the model: where its stored generations stopped, and the
// speeds its earlier runs measured.
type Estimate struct {
	// Tokens is the number of tokens the work is expected to generate:
	// each request until every stop setting it runs for has matched, at
	// the token where the setting matched in the model's stored
	// generations (a setting with no sequence, or one they never matched:
	// the budget).
	Tokens int
	// Lengths counts the stored generations the stop positions were read
	// from (0: none; each request is then counted at its budget).
	Lengths int
	// Runs counts the earlier runs whose speeds the time rests on.
	Runs int
	// PrefillRate and DecodeRate are prompt tokens prefilled and tokens
	// generated per second of prefill and decode, measured over earlier
	// runs of the native engine (0: not measured apart); Overhead is the
	// mean of their other seconds of model work (compiling, the host's
	// share).
	PrefillRate, DecodeRate, Overhead float64
	// Rate is tokens generated per second of model work over earlier runs:
	// the time's basis where prefill and decode were not measured apart
	// (server backends, runs of an earlier tally).
	Rate float64
	// Seconds is the expected time of the work (-1: unknown, no earlier
	// run measured a speed).
	Seconds float64
	// Requests counts the requests estimated; MeasuredContext is the
	// longest prompt and generation among the stored generations read,
	// WorkContext the longest of the work's: a token far into a context
	// costs more than the speeds measured nearer its start say.
	Requests, MeasuredContext, WorkContext int
}

// estimateRuns and estimateLengths bound what an estimate reads: the
// latest runs of the model, and a sample of its stored generations per
// task (then of any task, when a task has fewer than minLengths).
const (
	estimateRuns    = 20
	estimateLengths = 512
	minLengths      = 16
)

// Basis says in a few words what the estimate rests on, for plan's output.
func (e Estimate) Basis() string {
	var parts []string
	switch {
	case e.Runs == 0:
		parts = append(parts, "no earlier run of this model measured a speed")
	case e.DecodeRate > 0:
		parts = append(parts, fmt.Sprintf("prefill %.0f and decode %.1f tokens/s measured over %s", e.PrefillRate, e.DecodeRate, runsWord(e.Runs)))
	default:
		parts = append(parts, fmt.Sprintf("%.1f generated tokens/s measured over %s (prefill and decode not measured apart)", e.Rate, runsWord(e.Runs)))
	}
	switch {
	case e.Requests == 0:
	case e.Lengths > 0:
		parts = append(parts, fmt.Sprintf("stop positions of %d stored generations", e.Lengths))
	default:
		parts = append(parts, "no stored generation of this model to read stop positions from: every request counted at its budget")
	}
	if e.Runs > 0 && e.MeasuredContext > 0 && e.WorkContext > 2*e.MeasuredContext {
		parts = append(parts, fmt.Sprintf("speeds measured at contexts up to %d tokens, and this work reaches %d: its tokens may cost more", e.MeasuredContext, e.WorkContext))
	}
	return strings.Join(parts, "; ")
}

func runsWord(n int) string {
	if n == 1 {
		return "1 earlier run"
	}
	return fmt.Sprintf("%d earlier runs", n)
}

// estimate sets p.Estimate (and the Throughput and EstimatedSeconds kept
// from it) from the store: the expected tokens of the plan's requests, and
// their time at the model's measured speeds.
func estimate(ctx context.Context, st *store.Store, p *Plan, ctxLen int) error {
	e := Estimate{Seconds: -1}
	work := p.Work()
	byJob := map[*Job][]*Item{}
	var jobs []*Job
	for _, it := range work {
		if overflows(it, ctxLen) {
			continue
		}
		if byJob[it.Job] == nil {
			jobs = append(jobs, it.Job)
		}
		byJob[it.Job] = append(byJob[it.Job], it)
		held := 0
		if it.Continue && it.Stored != nil {
			held = it.Stored.NTokens
		}
		e.Requests, e.WorkContext = e.Requests+1, max(e.WorkContext, it.promptLen+held+it.NewTokens)
	}
	var anyTask []store.Generation
	anyRead := false
	tokens := 0.0
	for _, j := range jobs {
		gens, err := st.Continuations(ctx, p.Fingerprint, j.Task, estimateLengths)
		if err != nil {
			return fmt.Errorf("plan: %w", err)
		}
		if len(gens) < minLengths {
			if !anyRead {
				if anyTask, err = st.Continuations(ctx, p.Fingerprint, "", estimateLengths); err != nil {
					return fmt.Errorf("plan: %w", err)
				}
				anyRead = true
			}
			gens = anyTask
		}
		e.Lengths = max(e.Lengths, len(gens))
		for _, g := range gens {
			e.MeasuredContext = max(e.MeasuredContext, g.PromptTokens+g.NTokens)
		}
		ls := stopLengths(gens, j.Settings)
		for _, it := range byJob[j] {
			tokens += ls.expected(it)
		}
	}
	e.Tokens = int(math.Round(tokens))
	runs, err := st.RunMeasures(ctx, p.Fingerprint, estimateRuns)
	if err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	e.measure(runs)
	switch {
	case e.DecodeRate > 0:
		e.Seconds = float64(e.Tokens)/e.DecodeRate + e.Overhead
		if p.PromptTokens > 0 {
			e.Seconds += float64(p.PromptTokens) / e.PrefillRate
		}
	case e.Rate > 0:
		e.Seconds = float64(e.Tokens) / e.Rate
	}
	if e.Requests == 0 && e.Seconds > 0 {
		e.Seconds = 0 // nothing to run (or only prompts beyond the context)
	}
	p.Estimate = e
	if e.Seconds >= 0 && e.Runs > 0 {
		p.Throughput, p.EstimatedSeconds = e.Rate, e.Seconds
	}
	return nil
}

// phaseStats are the parts of a native engine's run stats (gomlx.Stats)
// that time its phases.
type phaseStats struct {
	PrefillSeconds, DecodeSeconds float64
}

// measure sets the estimate's speeds from earlier runs: prefill and decode
// rates over the runs whose stats time the two apart, else the rate of
// generated tokens over all of them.
func (e *Estimate) measure(runs []store.Run) {
	var gen, secs, phGen, prompt, pre, dec, over float64
	phased := 0
	for _, r := range runs {
		gen, secs = gen+float64(r.GeneratedTokens), secs+r.GenSeconds
		var ps phaseStats
		if json.Unmarshal(r.Stats, &ps) == nil && ps.PrefillSeconds > 0 && ps.DecodeSeconds > 0 {
			phased++
			phGen, prompt = phGen+float64(r.GeneratedTokens), prompt+float64(r.PromptTokens)
			pre, dec = pre+ps.PrefillSeconds, dec+ps.DecodeSeconds
			over += max(r.GenSeconds-ps.PrefillSeconds-ps.DecodeSeconds, 0)
		}
	}
	if secs > 0 && gen > 0 {
		e.Rate, e.Runs = gen/secs, len(runs)
	}
	if phased > 0 && prompt > 0 {
		e.PrefillRate, e.DecodeRate, e.Overhead, e.Runs = prompt/pre, phGen/dec, over/float64(phased), phased
	}
}

// lengths are the lengths at which a job's requests are expected to stop,
// one per stored generation read, ascending (+Inf: at the budget), with
// their running sums.
type lengths struct {
	ls   []float64
	sums []float64 // sums[i] = ls[0] + … + ls[i-1], finite entries only
}

// stopLengths reads from stored generations where a request of a job with
// these settings stops: the token at which the last of the settings
// matched (a setting that never matched in a generation that did not end
// on its own, or one with no sequence, stops at the budget: +Inf).
func stopLengths(gens []store.Generation, settings []StopSetting) lengths {
	var l lengths
	for i := range gens {
		l.ls = append(l.ls, stopLength(&gens[i], settings))
	}
	sort.Float64s(l.ls)
	l.sums = make([]float64, len(l.ls)+1)
	for i, x := range l.ls {
		if math.IsInf(x, 1) {
			x = 0
		}
		l.sums[i+1] = l.sums[i] + x
	}
	return l
}

// stopLength is the number of tokens g needed for every setting to match
// (+Inf when some setting would run to the budget).
func stopLength(g *store.Generation, settings []StopSetting) float64 {
	ended := g.Finish == backends.FinishEOS || g.Finish == backends.FinishContextFull
	n := 0.0
	for _, s := range settings {
		m, ok := FindStop(g.Text, s.Seqs)
		switch {
		case ok:
			n = max(n, tokensTo(g, m.Offset+len(m.Seq)))
		case ended:
			n = max(n, float64(g.NTokens))
		default:
			return math.Inf(1)
		}
	}
	return n
}

// tokensTo is the number of g's tokens that hold its first end bytes.
func tokensTo(g *store.Generation, end int) float64 {
	if len(g.Offsets) == g.NTokens && g.NTokens > 0 {
		// Offsets[i] is where token i starts: the tokens that start
		// before end hold it.
		return float64(sort.SearchInts(g.Offsets, end))
	}
	if len(g.Text) == 0 {
		return float64(g.NTokens)
	}
	return math.Ceil(float64(end) / float64(len(g.Text)) * float64(g.NTokens))
}

// expected is the number of tokens it is expected to generate: the mean,
// over the stored lengths beyond what it already holds, of the length
// capped by its budget, less what it holds; its budget when no stored
// length reaches beyond it (or none was read).
func (l lengths) expected(it *Item) float64 {
	held := 0
	if it.Continue && it.Stored != nil {
		held = it.Stored.NTokens
	}
	budget := float64(held + it.NewTokens)
	from := sort.Search(len(l.ls), func(i int) bool { return l.ls[i] > float64(held) })
	if from == len(l.ls) {
		return float64(it.NewTokens)
	}
	to := sort.Search(len(l.ls), func(i int) bool { return l.ls[i] >= budget }) // the rest run to the budget
	sum := l.sums[to] - l.sums[from] + float64(len(l.ls)-to)*budget
	return sum/float64(len(l.ls)-from) - float64(held)
}
