package generate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"tally/backends"
	"tally/scoring/stats"
	"tally/store"
)

// Progress receives progress reports; implementations must be safe for
// concurrent use.
type Progress interface {
	// Start announces the number of samples that need model work.
	Start(samples int)
	// Tokens reports n newly generated tokens.
	Tokens(n int)
	// SampleDone reports one finished sample.
	SampleDone()
	// Finish ends the report.
	Finish()
}

// Options tune Execute.
type Options struct {
	RunID    int64
	Progress Progress
	// FlushEvery bounds how long a finished generation waits before it is
	// committed (default 200ms); FlushSize bounds how many wait (default 64).
	FlushEvery time.Duration
	FlushSize  int
}

// Summary is what a run did, as `tally run --json` prints it.
type Summary struct {
	Samples              int                                      `json:"samples"`
	GenerationsNew       int                                      `json:"generations_new"`
	GenerationsReused    int                                      `json:"generations_reused"`
	GenerationsContinued int                                      `json:"generations_continued"`
	GeneratedTokens      int                                      `json:"generated_tokens"`
	PromptTokens         int                                      `json:"prompt_tokens"`
	Errors               int                                      `json:"errors"`
	Seconds              float64                                  `json:"seconds"`
	Scores               map[string]map[string]map[string]float64 `json:"scores"`
	// GenSeconds is the time spent in model work (for throughput).
	GenSeconds float64 `json:"-"`
	// Overflowed names the samples (task/id) whose prompt did not fit the
	// model's context; they are stored with finish reason "context".
	Overflowed []string `json:"-"`
	// ErrorSamples lists the samples that failed, as "task/id: message".
	ErrorSamples []string `json:"-"`
	// Unscorable lists the (sample, setting) pairs a metric could not
	// score, with the metric's error.
	Unscorable []string `json:"-"`
}

// result is one finished request on its way to the store.
type result struct {
	it  *Item
	gen store.Generation
}

// Execute does the plan's work: it scores what stored generations already
// answer, runs the rest on the backend, and commits every finished
// generation together with its scores as it arrives. On cancellation it
// commits what had finished and returns the context's error.
func Execute(ctx context.Context, st *store.Store, be backends.Backend, p *Plan, opt Options) (Summary, error) {
	start := time.Now()
	if opt.FlushEvery <= 0 {
		opt.FlushEvery = 200 * time.Millisecond
	}
	if opt.FlushSize <= 0 {
		opt.FlushSize = 64
	}
	sum := Summary{Samples: len(p.Items)}

	// 1. Score what the store already answers: no model work.
	var scores []store.Score
	for _, it := range p.Items {
		if it.Stored == nil || it.NewTokens > 0 {
			continue
		}
		sum.GenerationsReused++
		for k, stt := range it.Statuses {
			if stt == Answerable {
				sc, warn := scoreSetting(it, it.Stored, k, opt.RunID)
				if warn != "" {
					sum.Unscorable = append(sum.Unscorable, warn)
				}
				scores = append(scores, sc...)
			}
		}
	}
	if err := st.PutScores(ctx, scores); err != nil {
		return sum, fmt.Errorf("store scores: %w", err)
	}

	// 2. Model work, streamed into the store.
	work := p.Work()
	if opt.Progress != nil {
		opt.Progress.Start(len(work))
		defer opt.Progress.Finish()
	}
	tp, _ := opt.Progress.(TokenProgress)
	if tp != nil {
		tp.Work(workTokens(work))
	}
	genStart := time.Now()
	results := make(chan result, 256)
	written := make(chan writeOutcome, 1)
	go func() { written <- writeResults(st, results, opt) }()

	reqs := make([]backends.Request, len(work))
	states := make([]*reqState, len(work))
	for i, it := range work {
		r := backends.Request{Index: i, Prompt: it.Sample.Prompt, PromptIDs: it.PromptIDs, MaxTokens: it.NewTokens,
			StopHint: sharedStops(it.Job.Settings), ShareKey: it.Sample.ShareKey}
		s := &reqState{it: it, matcher: NewMatcher(it.Job.Settings), started: time.Now()}
		if it.Continue {
			r.Prefix = it.Stored.IDs
			r.PrefixText = it.Stored.Text
			s.text = []byte(it.Stored.Text)
			s.ids = append([]int(nil), it.Stored.IDs...)
			s.offsets = append([]int(nil), it.Stored.Offsets...)
			s.matcher.Feed(it.Stored.Text)
		}
		reqs[i], states[i] = r, s
	}
	var mu sync.Mutex // guards sum counters updated from the sink
	sink := func(ev backends.Event) bool {
		s := states[ev.Index]
		for j, id := range ev.IDs {
			s.offsets = append(s.offsets, len(s.text))
			s.ids = append(s.ids, id)
			if j == len(ev.IDs)-1 {
				s.text = append(s.text, ev.Text...)
			}
		}
		newTokens := len(ev.IDs)
		if len(ev.IDs) == 0 && ev.Text != "" {
			// A server backend streams text pieces without ids: count
			// each piece as a token for progress.
			s.text = append(s.text, ev.Text...)
			newTokens = 1
		}
		if newTokens > 0 && opt.Progress != nil {
			opt.Progress.Tokens(newTokens)
		}
		done := s.matcher.Feed(ev.Text)
		if ev.Done {
			g := s.record(p.Fingerprint, ev, opt.RunID)
			mu.Lock()
			newTok := g.NTokens
			if s.it.Continue {
				newTok -= s.it.Stored.NTokens
				sum.GenerationsContinued++
			} else {
				sum.GenerationsNew++
			}
			sum.GeneratedTokens += max(newTok, 0)
			if g.Finish != backends.FinishContext { // an overflowing prompt is never prefilled
				sum.PromptTokens += ev.PromptTokens
			}
			if g.Finish == backends.FinishError || g.Finish == backends.FinishContext {
				sum.Errors++
			}
			if g.Finish == backends.FinishContext {
				sum.Overflowed = append(sum.Overflowed, s.it.Sample.Task+"/"+s.it.Sample.ID)
			}
			if g.Finish == backends.FinishError {
				sum.ErrorSamples = append(sum.ErrorSamples, s.it.Sample.Task+"/"+s.it.Sample.ID+": "+g.Error)
			}
			mu.Unlock()
			results <- result{it: s.it, gen: g}
			if tp != nil {
				tp.SampleEnded(s.it.Sample.Task+"/"+s.it.Sample.ID, ev.PromptTokens, s.it.NewTokens, max(newTok, 0), g.Error)
			}
			if opt.Progress != nil {
				opt.Progress.SampleDone()
			}
			return false
		}
		return !done
	}
	var genErr error
	if len(reqs) > 0 {
		genErr = be.Generate(ctx, reqs, sink)
	}
	close(results)
	wo := <-written
	werr := wo.err
	sum.Unscorable = append(sum.Unscorable, wo.unscorable...)
	sum.GenSeconds = time.Since(genStart).Seconds()
	sum.Seconds = time.Since(start).Seconds()
	if genErr == nil {
		genErr = ctx.Err()
	}
	if err := errors.Join(werr, genErr); err != nil {
		return sum, err
	}
	return sum, nil
}

type reqState struct {
	it      *Item
	matcher *Matcher
	text    []byte
	ids     []int
	offsets []int
	started time.Time
}

func (s *reqState) record(fp string, ev backends.Event, runID int64) store.Generation {
	it := s.it
	g := store.Generation{
		Key: it.Key, Fingerprint: fp, Task: it.Sample.Task, SampleID: it.Sample.ID,
		PromptTokens: len(it.PromptIDs), Text: string(s.text), IDs: s.ids, Offsets: s.offsets,
		NTokens: len(s.ids), Finish: ev.Finish, RunID: runID, GenSeconds: time.Since(s.started).Seconds(),
	}
	if ev.PromptTokens > 0 && g.PromptTokens == 0 {
		g.PromptTokens = ev.PromptTokens
	}
	if len(s.ids) == 0 {
		// A server backend that reports no ids: count its tokens.
		g.IDs, g.Offsets = nil, nil
		g.NTokens = ev.GenTokens
		if it.Continue {
			g.NTokens += it.Stored.NTokens
		}
	}
	g.Budget = it.NewTokens
	if it.Continue {
		g.Budget += it.Stored.NTokens
		g.Continued = it.Stored.Continued + 1
	}
	if ev.Err != nil {
		g.Error = ev.Err.Error()
	}
	stops := struct {
		Settings []StopSetting    `json:"settings"`
		Matches  map[string]Match `json:"matches"`
	}{it.Job.Settings, s.matcher.Matches()}
	g.Stops, _ = json.Marshal(stops)
	return g
}

// sharedStops returns the sequences that every setting has (the only ones a
// backend may stop on without cutting a generation another setting needs).
func sharedStops(settings []StopSetting) []string {
	if len(settings) == 0 {
		return nil
	}
	var out []string
	for _, q := range settings[0].Seqs {
		all := true
		for _, s := range settings[1:] {
			found := false
			for _, x := range s.Seqs {
				found = found || x == q
			}
			all = all && found
		}
		if all {
			out = append(out, q)
		}
	}
	return out
}

// writeOutcome is what the writer reports when the results are drained.
type writeOutcome struct {
	err        error
	unscorable []string
}

func writeResults(st *store.Store, results <-chan result, opt Options) writeOutcome {
	// Commits use a context of their own: on Ctrl-C the finished work is
	// still written.
	ctx := context.Background()
	var gens []store.Generation
	var scores []store.Score
	var firstErr error
	var unscorable []string
	flush := func() {
		if len(gens) == 0 {
			return
		}
		if err := st.PutGenerations(ctx, gens, scores); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("store generations: %w", err)
		}
		gens, scores = gens[:0], scores[:0]
	}
	tick := time.NewTicker(opt.FlushEvery)
	defer tick.Stop()
	for {
		select {
		case r, ok := <-results:
			if !ok {
				flush()
				return writeOutcome{firstErr, unscorable}
			}
			gens = append(gens, r.gen)
			if r.gen.Finish != backends.FinishError {
				for k := range r.it.Job.Settings {
					sc, warn := scoreSetting(r.it, &r.gen, k, opt.RunID)
					if warn != "" {
						unscorable = append(unscorable, warn)
					}
					scores = append(scores, sc...)
				}
			}
			if len(gens) >= opt.FlushSize {
				flush()
			}
		case <-tick.C:
			flush()
		}
	}
}

// Unscorable is the score stored for a (sample, setting) whose prediction
// the metric's reference cannot score (the reference raises): the run goes
// on, the sample is left out of that metric's mean, and this score (value
// 1) counts such samples.
const Unscorable = "unscorable"

// scoreSetting scores a generation under setting k of its job. A scorer
// error does not stop the run: the pair gets an Unscorable score and warn
// describes the error.
func scoreSetting(it *Item, g *store.Generation, k int, runID int64) (scores []store.Score, warn string) {
	set := it.Job.Settings[k]
	budget := it.Job.MaxTokens
	pred, ok, _ := Truncate(g, set, budget)
	if !ok {
		// The generation still cannot answer (it ended early on a stop that
		// only other settings share); leave it for a continuation.
		return nil, ""
	}
	vals, err := it.Job.Score(pred, *it.Sample)
	if err != nil {
		vals = map[string]float64{Unscorable: 1}
		warn = fmt.Sprintf("%s/%s under %s: %v", it.Sample.Task, it.Sample.ID, set.Name, err)
	}
	out := make([]store.Score, 0, len(vals))
	for m, v := range vals {
		out = append(out, store.Score{GenKey: g.Key, Task: it.Sample.Task, SampleID: it.Sample.ID, Setting: set.Name,
			SettingKey: set.Key(), Budget: budget, Metric: m, Value: v, Prediction: pred, RunID: runID})
	}
	return out, warn
}

// Results reads the scores of the plan's items from the store: per task,
// setting and metric, the values in sample order (NaN-free: unscored
// samples are absent).
type Results map[string]map[string]map[string][]SampleScore

// SampleScore is one sample's value of one metric.
type SampleScore struct {
	SampleID   string
	Value      float64
	Prediction string
}

// ReadResults collects the stored scores for the plan's items.
func ReadResults(ctx context.Context, st *store.Store, p *Plan) (Results, error) {
	keys := make([]string, 0, len(p.Items))
	for _, it := range p.Items {
		keys = append(keys, it.Key)
	}
	all, err := st.ScoresFor(ctx, keys)
	if err != nil {
		return nil, err
	}
	type idx struct {
		key, task, sample, setKey string
		budget                    int
	}
	byIdx := map[idx][]store.Score{}
	for _, s := range all {
		k := idx{s.GenKey, s.Task, s.SampleID, s.SettingKey, s.Budget}
		byIdx[k] = append(byIdx[k], s)
	}
	out := Results{}
	for _, it := range p.Items {
		for _, set := range it.Job.Settings {
			for _, s := range byIdx[idx{it.Key, it.Sample.Task, it.Sample.ID, set.Key(), it.Job.MaxTokens}] {
				if out[s.Task] == nil {
					out[s.Task] = map[string]map[string][]SampleScore{}
				}
				if out[s.Task][set.Name] == nil {
					out[s.Task][set.Name] = map[string][]SampleScore{}
				}
				out[s.Task][set.Name][s.Metric] = append(out[s.Task][set.Name][s.Metric], SampleScore{s.SampleID, s.Value, s.Prediction})
			}
		}
	}
	return out, nil
}

// Means returns the mean of every metric, per task and setting.
func (r Results) Means() map[string]map[string]map[string]float64 {
	out := map[string]map[string]map[string]float64{}
	for task, bySet := range r {
		out[task] = map[string]map[string]float64{}
		for set, byMetric := range bySet {
			out[task][set] = map[string]float64{}
			for m, xs := range byMetric {
				vals := make([]float64, len(xs))
				for i, x := range xs {
					vals[i] = x.Value
				}
				out[task][set][m] = stats.Mean(vals)
			}
		}
	}
	return out
}

// Metrics returns the sorted metric names present for a task.
func (r Results) Metrics(task string) []string {
	seen := map[string]bool{}
	for _, byMetric := range r[task] {
		for m := range byMetric {
			seen[m] = true
		}
	}
	out := make([]string, 0, len(seen))
	for m := range seen {
		out = append(out, m)
	}
	sort.Strings(out)
	return out
}

// Rescore recomputes the scores of every (sample, setting) that a stored
// generation answers, with no model work, replacing stored scores. It
// returns how many (sample, setting) pairs were scored, and the pairs the
// metrics could not score.
func Rescore(ctx context.Context, st *store.Store, p *Plan, runID int64) (n int, unscorable []string, err error) {
	var scores []store.Score
	for _, it := range p.Items {
		if it.Stored == nil || it.Stored.Finish == backends.FinishError {
			continue
		}
		for k := range it.Job.Settings {
			sc, warn := scoreSetting(it, it.Stored, k, runID)
			if warn != "" {
				unscorable = append(unscorable, warn)
			}
			if len(sc) > 0 {
				n++
			}
			scores = append(scores, sc...)
		}
	}
	if err := st.PutScores(ctx, scores); err != nil {
		return 0, nil, fmt.Errorf("rescore: %w", err)
	}
	return n, unscorable, nil
}
