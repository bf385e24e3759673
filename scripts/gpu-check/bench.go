package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"tally/backends"
	"tally/backends/gomlx"
)

// benchRow is one configuration of one engine on one model; hf.py writes
// the same fields for transformers.
type benchRow struct {
	Engine string `json:"engine"` // "tally" or "transformers"
	Model  string `json:"model"`  // e.g. "llama-8b"
	Dir    string `json:"dir"`
	DType  string `json:"dtype"`
	// Cache is transformers' cache implementation ("" for tally).
	Cache  string `json:"cache,omitempty"`
	Batch  int    `json:"batch"`
	Prompt int    `json:"prompt"`
	New    int    `json:"new"`
	// Rows is the number of cache rows decoded together (tally's memory
	// plan may hold fewer than Batch: then the prompts run in waves).
	Rows int `json:"rows"`
	// PrefillSeconds is the time until every row had its first token,
	// DecodeSeconds the rest; both from the timed (second) run.
	PrefillSeconds float64 `json:"prefill_s"`
	DecodeSeconds  float64 `json:"decode_s"`
	PrefillTokS    float64 `json:"prefill_tok_s"`
	DecodeTokS     float64 `json:"decode_tok_s"`
	// DecodeMsPerStep is DecodeSeconds over the New−1 steps after the
	// first token.
	DecodeMsPerStep float64 `json:"decode_ms_per_step"`
	// WarmSeconds is the first (compiling) run, which stops each row after
	// two tokens; CompileSeconds its excess over the timed run's prefill
	// and first step.
	WarmSeconds    float64 `json:"warm_s"`
	CompileSeconds float64 `json:"compile_s"`
	// Compilations is the number of graphs the warm run compiled;
	// TimedCompilations those the timed run still compiled (0 when the
	// warm run covered every shape).
	Compilations      int `json:"compilations"`
	TimedCompilations int `json:"timed_compilations"`
	// PeakGPUMiB is the GPU memory in use at its highest while this
	// configuration ran (nvidia-smi; the process's allocator keeps what
	// earlier configurations took, so it never goes down), -1 without a
	// GPU; PeakRSSBytes the process's peak resident memory so far.
	PeakGPUMiB   int64 `json:"peak_gpu_mib"`
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// Plan is the memory plan (tally), PlanNeedBytes its weights + KV
	// cache + workspace (reserve excluded).
	Plan          string `json:"plan,omitempty"`
	PlanNeedBytes int64  `json:"plan_need_bytes,omitempty"`
	// FirstIDs are the first 8 generated ids of the first 4 rows, to
	// compare engines.
	FirstIDs [][]int `json:"first_ids,omitempty"`
	Error    string  `json:"error,omitempty"`
	Skipped  string  `json:"skipped,omitempty"`
}

func runBench(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	dir := fs.String("model", "", "model folder")
	name := fs.String("name", "", "model name for the report (e.g. llama-8b)")
	device := fs.String("device", "cuda", "cpu, xla or cuda")
	dtype := fs.String("dtype", "bfloat16", "--dtype")
	promptDir := fs.String("prompts", "", "folder of gpu-check prompts files")
	configs := fs.String("configs", "", "BATCHxPROMPT list, run in this order")
	newTokens := fs.Int("new", 128, "new tokens per prompt")
	memory := fs.Int64("device-memory", 0, "bytes the model may use (Options.DeviceMemory; 0: none)")
	deadline := fs.Int64("deadline", 0, "Unix time after which no configuration starts")
	out := fs.String("out", "", "JSON lines file to append each configuration's row to")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cs, err := parseConfigs(*configs)
	if err != nil {
		return err
	}
	if *dir == "" || *promptDir == "" || *out == "" || *newTokens < 2 {
		return errors.New("want -model DIR -prompts DIR -configs LIST -out FILE and -new ≥ 2")
	}
	mode, err := gomlx.ParseDType(*dtype)
	if err != nil {
		return err
	}
	maxBatch := 1
	for _, c := range cs {
		maxBatch = max(maxBatch, c.Batch)
	}
	f, err := os.OpenFile(*out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	loadStart := time.Now()
	m, err := gomlx.Open(ctx, *dir, gomlx.Options{Device: *device, DType: mode, MaxBatch: maxBatch,
		DeviceMemory: *memory, FingerprintCache: "-", Log: os.Stderr})
	if err != nil {
		return fmt.Errorf("open %s: %w", *dir, err)
	}
	defer m.Close()
	fmt.Fprintf(os.Stderr, "bench %s: loaded in %.1fs (%s, products in %s)\n", *name, time.Since(loadStart).Seconds(), m.Kernels(), m.Arithmetic().Products)
	var last time.Duration
	failed := 0
	for _, c := range cs {
		row := benchRow{Engine: "tally", Model: *name, Dir: *dir, DType: m.Arithmetic().Products, Batch: c.Batch, Prompt: c.Prompt, New: *newTokens}
		if *deadline > 0 && time.Now().Add(last).After(time.Unix(*deadline, 0)) {
			row.Skipped = "no time left in the step's budget"
		} else {
			start := time.Now()
			benchOne(ctx, m, promptFile(*promptDir, c), &row)
			last = time.Since(start)
		}
		if err := enc.Encode(row); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bench %s %s: prefill %.0f tok/s, decode %.1f tok/s (%.2f ms/step), rows %d, warm %.1fs, %d compilations, peak GPU %d MiB%s%s\n",
			*name, c, row.PrefillTokS, row.DecodeTokS, row.DecodeMsPerStep, row.Rows, row.WarmSeconds, row.Compilations, row.PeakGPUMiB,
			errSuffix(row.Error), errSuffix(row.Skipped))
		if row.Error != "" {
			failed++
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d configurations failed", failed)
	}
	return nil
}

// benchOne runs one configuration twice: a warm run that compiles the
// graphs (each row stops after two tokens, with the full budget so the
// cache is the timed run's), then the timed run.
func benchOne(ctx context.Context, m *gomlx.Model, promptPath string, row *benchRow) {
	prompts, err := readPrompts(promptPath)
	if err != nil {
		row.Error = err.Error()
		return
	}
	if len(prompts) != row.Batch || len(prompts[0]) != row.Prompt {
		row.Error = fmt.Sprintf("%s holds %d prompts of %d tokens", promptPath, len(prompts), len(prompts[0]))
		return
	}
	row.Rows = row.Batch
	if p, err := m.MemoryPlan(row.Prompt, row.New); err == nil {
		row.Plan = p.String()
		row.PlanNeedBytes = p.NeedBytes() - p.ReserveBytes
		row.Rows = min(row.Batch, p.Batch)
	} else {
		row.Plan = err.Error()
	}
	reqs := make([]backends.Request, len(prompts))
	for i, p := range prompts {
		reqs[i] = backends.Request{Index: i, PromptIDs: p, MaxTokens: row.New}
	}
	sampler := startGPUSampler()
	defer func() {
		row.PeakGPUMiB = sampler.stop()
		row.PeakRSSBytes = selfPeakRSS()
	}()
	before := m.Compilations()
	warm, err := timedGenerate(ctx, m, reqs, 2)
	if err != nil {
		row.Error = "warm run: " + err.Error()
		return
	}
	row.WarmSeconds = warm.total.Seconds()
	row.Compilations = m.Compilations() - before
	before = m.Compilations()
	t, err := timedGenerate(ctx, m, reqs, 0)
	if err != nil {
		row.Error = "timed run: " + err.Error()
		return
	}
	row.TimedCompilations = m.Compilations() - before
	row.PrefillSeconds = t.prefill.Seconds()
	row.DecodeSeconds = (t.total - t.prefill).Seconds()
	row.PrefillTokS = float64(row.Batch*row.Prompt) / row.PrefillSeconds
	if row.DecodeSeconds > 0 {
		row.DecodeTokS = float64(row.Batch*(row.New-1)) / row.DecodeSeconds
		row.DecodeMsPerStep = row.DecodeSeconds * 1000 / float64(row.New-1)
	}
	// The warm run is a prefill plus one step, with the compilations.
	row.CompileSeconds = max(0, row.WarmSeconds-row.PrefillSeconds-row.DecodeMsPerStep/1000)
	for i := range min(4, len(t.ids)) {
		row.FirstIDs = append(row.FirstIDs, t.ids[i][:min(8, len(t.ids[i]))])
	}
	for i, ids := range t.ids {
		if len(ids) != row.New {
			row.Error = fmt.Sprintf("row %d generated %d tokens, want %d", i, len(ids), row.New)
			return
		}
	}
}

// timing is one Generate call: its total time, the time until every row
// had its first token, and the ids.
type timing struct {
	total, prefill time.Duration
	ids            [][]int
}

// timedGenerate runs reqs, stopping each row after stopAfter tokens (0:
// its budget).
func timedGenerate(ctx context.Context, m *gomlx.Model, reqs []backends.Request, stopAfter int) (timing, error) {
	t := timing{ids: make([][]int, len(reqs))}
	started := 0
	var firstErr error
	start := time.Now()
	err := m.Generate(ctx, reqs, func(ev backends.Event) bool {
		if ev.Done {
			if ev.Err != nil && firstErr == nil {
				firstErr = fmt.Errorf("request %d: %w", ev.Index, ev.Err)
			}
			return true
		}
		if len(ev.IDs) == 0 {
			return true
		}
		if len(t.ids[ev.Index]) == 0 {
			if started++; started == len(reqs) {
				t.prefill = time.Since(start)
			}
		}
		t.ids[ev.Index] = append(t.ids[ev.Index], ev.IDs...)
		return stopAfter == 0 || len(t.ids[ev.Index]) < stopAfter
	})
	t.total = time.Since(start)
	if err == nil {
		err = firstErr
	}
	if err == nil && started < len(reqs) {
		err = fmt.Errorf("only %d of %d rows produced a token", started, len(reqs))
	}
	return t, err
}
