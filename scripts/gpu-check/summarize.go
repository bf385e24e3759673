package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The folders of a gpu-check work folder.
const (
	stepsDir   = "steps"   // one stepRecord per step
	resultsDir = "results" // what the steps measured
)

// deviceInfo is hf.py device's measurement of the GPU (results/device.json).
type deviceInfo struct {
	GPU string `json:"gpu"`
	// BandwidthGBs is a large device-to-device copy's rate counting bytes
	// read and written; BF16TFLOPs an 8192³ bf16 matrix product's.
	BandwidthGBs float64           `json:"bandwidth_gbps"`
	BF16TFLOPs   float64           `json:"bf16_tflops"`
	Versions     map[string]string `json:"versions"`
	Error        string            `json:"error,omitempty"`
	// Nominal is set when the figures are the H100 SXM datasheet's, not
	// measured.
	Nominal bool `json:"nominal,omitempty"`
}

// H100 SXM datasheet figures, used when the device was not measured.
const (
	nominalBandwidthGBs = 3350
	nominalBF16TFLOPs   = 989
)

// target is one of issue 25's targets as the run measured it.
type target struct {
	Name     string `json:"name"`
	Wanted   string `json:"wanted"`
	Measured string `json:"measured"`
	// Met is "yes", "no" or "n/a" (not measured: the step failed, was
	// skipped, or this is a dry run).
	Met string `json:"met"`
}

// longResult is the long-context step: the plan tally printed before the
// run and what the run took.
type longResult struct {
	Plan           string  `json:"plan"`
	PredictedBytes int64   `json:"predicted_bytes"` // weights + KV cache + workspace
	ReserveBytes   int64   `json:"reserve_bytes"`
	MeasuredBytes  int64   `json:"measured_bytes"` // peak GPU memory in use minus before (-1: unknown)
	PeakRSSBytes   int64   `json:"peak_rss_bytes"`
	Seconds        float64 `json:"seconds"`
	Completed      bool    `json:"completed"`
	Generated      int     `json:"generated_tokens"`
	Errors         int     `json:"errors"`
}

// dropResult is the real DROP run: the first run, the report, the rerun.
type dropResult struct {
	First        map[string]any `json:"first"`
	Rerun        map[string]any `json:"rerun"`
	Report       string         `json:"report"`
	Stored       bool           `json:"stored"`
	AnsweredOnce bool           `json:"answered_from_storage"`
}

// summary is gpu-check.json.
type summary struct {
	GeneratedAt string            `json:"generated_at"`
	Env         map[string]string `json:"env"`
	Device      deviceInfo        `json:"device"`
	Targets     []target          `json:"targets"`
	Steps       []stepRecord      `json:"steps"`
	Parity      []parityRow       `json:"parity"`
	Bench       []benchRow        `json:"bench"`
	Long        *longResult       `json:"long,omitempty"`
	Drop        *dropResult       `json:"drop,omitempty"`
}

func runSummarize(_ context.Context, args []string) error {
	fl := flag.NewFlagSet("summarize", flag.ContinueOnError)
	work := fl.String("work", "", "gpu-check work folder")
	out := fl.String("out", "", "folder for gpu-check.md and gpu-check.json")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *work == "" || *out == "" {
		return errors.New("want -work DIR -out DIR")
	}
	s, err := collect(*work)
	if err != nil {
		return err
	}
	s.Targets = targets(s)
	if err := writeJSONFile(filepath.Join(*out, "gpu-check.json"), s); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(*out, "gpu-check.md"), []byte(markdown(s)), 0o644)
}

// collect reads everything a work folder holds.
func collect(work string) (*summary, error) {
	res := filepath.Join(work, resultsDir)
	s := &summary{GeneratedAt: time.Now().UTC().Format(time.RFC3339), Env: readEnv(filepath.Join(res, "env.txt"))}
	steps, _ := filepath.Glob(filepath.Join(work, stepsDir, "*.json"))
	sort.Strings(steps)
	for _, p := range steps {
		var r stepRecord
		if err := readJSON(p, &r); err != nil {
			return nil, err
		}
		s.Steps = append(s.Steps, r)
	}
	if err := readJSON(filepath.Join(res, "device.json"), &s.Device); err != nil || s.Device.BandwidthGBs <= 0 || s.Device.BF16TFLOPs <= 0 {
		s.Device.BandwidthGBs, s.Device.BF16TFLOPs, s.Device.Nominal = nominalBandwidthGBs, nominalBF16TFLOPs, true
	}
	if err := readJSONLines(filepath.Join(res, "parity.jsonl"), func(b []byte) error {
		var r parityRow
		err := json.Unmarshal(b, &r)
		s.Parity = append(s.Parity, r)
		return err
	}); err != nil {
		return nil, err
	}
	benches, _ := filepath.Glob(filepath.Join(res, "bench-*.jsonl"))
	sort.Strings(benches)
	for _, p := range benches {
		if err := readJSONLines(p, func(b []byte) error {
			var r benchRow
			err := json.Unmarshal(b, &r)
			s.Bench = append(s.Bench, r)
			return err
		}); err != nil {
			return nil, err
		}
	}
	s.Long = readLong(res)
	s.Drop = readDrop(res)
	return s, nil
}

// readEnv reads KEY=VALUE lines.
func readEnv(path string) map[string]string {
	env := map[string]string{}
	data, err := os.ReadFile(path)
	if err != nil {
		return env
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok && k != "" {
			env[k] = v
		}
	}
	return env
}

// readJSON reads one JSON value; a missing file is an fs.ErrNotExist error.
func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// readJSONLines calls fn on each non-empty line of path (none when the
// file is missing); a line cut off by a timeout is skipped.
func readJSONLines(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || !json.Valid([]byte(line)) {
			continue
		}
		if err := fn([]byte(line)); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return sc.Err()
}

// memoryLine matches the plan tally prints ("memory: batch 1, cache 40960
// tokens (...), prefill chunk 2048; needs ... weights 14.96 GiB, KV cache
// 10.00 GiB, workspace 30.81 GiB, reserve 4.20 GiB").
var memoryLine = regexp.MustCompile(`memory: (batch .*weights ([0-9.]+) GiB, KV cache ([0-9.]+) GiB, workspace ([0-9.]+) GiB, reserve ([0-9.]+) GiB)`)

// readLong reads the long-context step's files (nil when it did not run).
func readLong(res string) *longResult {
	var w watchResult
	errText, _ := os.ReadFile(filepath.Join(res, "long-run.err"))
	if readJSON(filepath.Join(res, "long-watch.json"), &w) != nil && len(errText) == 0 {
		return nil
	}
	l := &longResult{MeasuredBytes: -1, Seconds: w.Seconds, PeakRSSBytes: w.PeakRSSBytes}
	if m := memoryLine.FindStringSubmatch(string(errText)); m != nil {
		l.Plan = m[1]
		gib := func(s string) int64 { f, _ := strconv.ParseFloat(s, 64); return int64(f * (1 << 30)) }
		l.PredictedBytes = gib(m[2]) + gib(m[3]) + gib(m[4])
		l.ReserveBytes = gib(m[5])
	}
	if w.PeakGPUMiB >= 0 && w.BaselineGPUMiB >= 0 {
		l.MeasuredBytes = (w.PeakGPUMiB - w.BaselineGPUMiB) << 20
	}
	var run map[string]any
	if readJSON(filepath.Join(res, "long-run.json"), &run) == nil {
		l.Generated = intField(run, "generated_tokens")
		l.Errors = intField(run, "errors")
		l.Completed = w.RC == 0 && intField(run, "generations_new") == 1 && l.Errors == 0
	}
	return l
}

// readDrop reads the DROP step's files (nil when it did not run).
func readDrop(res string) *dropResult {
	d := &dropResult{}
	e1 := readJSON(filepath.Join(res, "drop-run1.json"), &d.First)
	e2 := readJSON(filepath.Join(res, "drop-run2.json"), &d.Rerun)
	report, e3 := os.ReadFile(filepath.Join(res, "drop-report.md"))
	if e1 != nil && e2 != nil && e3 != nil {
		return nil
	}
	d.Report = string(report)
	d.Stored = e1 == nil && intField(d.First, "generations_new") > 0 && intField(d.First, "errors") == 0
	d.AnsweredOnce = e2 == nil && intField(d.Rerun, "generations_new") == 0 && intField(d.Rerun, "generated_tokens") == 0 &&
		intField(d.Rerun, "generations_reused") > 0
	return d
}

// intField reads a number field of a decoded JSON object (0 when absent).
func intField(m map[string]any, k string) int {
	if f, ok := m[k].(float64); ok {
		return int(f)
	}
	return 0
}

// modelFigures are the sizes the rooflines need.
type modelFigures struct {
	weightBytes float64 // bf16 weights
	kvPerToken  float64 // KV bytes per token in the engine's cache dtype
	matmul      float64 // parameters in the per-token matrix products (embeddings excluded)
	attn        float64 // 2·layers·heads·head_dim: causal attention FLOPs per T² per row
	head        float64 // 2·vocab·hidden: the last position's logits
}

// figures returns the sizes of row's model (ok false for an unknown one).
func figures(r benchRow) (modelFigures, bool) {
	s, ok := shapes[r.Model]
	if !ok {
		return modelFigures{}, false
	}
	cacheBytes := 2.0 // transformers keeps its cache in the model dtype
	if r.Engine == "tally" {
		cacheBytes = 4 // tally's KV cache is float32
	}
	layer := float64(s.Hidden*s.Heads*s.HeadDim*2 + 2*s.Hidden*s.KVHeads*s.HeadDim + 3*s.Hidden*s.Intermediate)
	return modelFigures{
		weightBytes: 2 * float64(s.params()),
		kvPerToken:  cacheBytes * 2 * float64(s.Layers*s.KVHeads*s.HeadDim),
		matmul:      float64(s.Layers) * layer,
		attn:        2 * float64(s.Layers*s.Heads*s.HeadDim),
		head:        2 * float64(s.Vocab*s.Hidden),
	}, true
}

// decodeRoofline is the share of the HBM roofline one decode step reached:
// the time to read the weights once and each row's cache (its mean context
// over the decode) at the device's bandwidth, over the measured step
// (-1: not computable; runs in waves mix prefills into the steps).
func decodeRoofline(r benchRow, d deviceInfo) float64 {
	f, ok := figures(r)
	if !ok || r.DecodeMsPerStep <= 0 || r.Rows != r.Batch {
		return -1
	}
	ctx := float64(r.Prompt) + float64(r.New)/2
	bytes := f.weightBytes + float64(r.Rows)*ctx*f.kvPerToken
	return bytes / (d.BandwidthGBs * 1e9) * 1000 / r.DecodeMsPerStep
}

// prefillShare is the prefill's useful FLOPs (the products of every
// prompt token, causal attention, one position's logits per row) per second
// over the device's bf16 peak (-1: not computable; runs in waves put a
// wave's decode inside the prefill time).
func prefillShare(r benchRow, d deviceInfo) float64 {
	f, ok := figures(r)
	if !ok || r.PrefillSeconds <= 0 || r.Rows != r.Batch {
		return -1
	}
	t := float64(r.Prompt)
	flops := float64(r.Batch) * (2*f.matmul*t + f.attn*t*t + f.head)
	return flops / r.PrefillSeconds / (d.BF16TFLOPs * 1e12)
}

// bestHF is transformers' fastest decode among its cache options for the
// configuration of r (nil when none ran).
func bestHF(rows []benchRow, r benchRow) *benchRow {
	var best *benchRow
	for i, h := range rows {
		if h.Engine == "transformers" && h.Model == r.Model && h.Batch == r.Batch && h.Prompt == r.Prompt && h.Error == "" && h.Skipped == "" && h.DecodeTokS > 0 {
			if best == nil || h.DecodeTokS > best.DecodeTokS {
				best = &rows[i]
			}
		}
	}
	return best
}

// findBench finds tally's row for a configuration (nil: none measured).
func findBench(rows []benchRow, model string, batch, prompt int) *benchRow {
	for i, r := range rows {
		if r.Engine == "tally" && r.Model == model && r.Batch == batch && r.Prompt == prompt && r.Error == "" && r.Skipped == "" {
			return &rows[i]
		}
	}
	return nil
}

// targets evaluates issue 25's targets on what was measured.
func targets(s *summary) []target {
	var out []target
	// Parity.
	t := target{Name: "parity, --dtype float32 (TF32 off)", Wanted: "greedy ids identical, last logits within 1e-4 relative, every fixture", Met: "n/a", Measured: "not run"}
	pass, n, worst := 0, 0, 0.0
	for _, r := range s.Parity {
		if r.DType == "float32" {
			n++
			worst = math.Max(worst, r.WorstRelErr)
			if r.Pass {
				pass++
			}
		}
	}
	if n > 0 {
		t.Measured = fmt.Sprintf("%d/%d fixtures pass, worst rel err %.2g", pass, n, worst)
		t.Met = yesNo(pass == n)
	}
	out = append(out, t)
	// 8B batch-1 decode against the roofline.
	t = target{Name: "8B shape, batch-1 decode", Wanted: "≥ 60% of the HBM roofline", Met: "n/a", Measured: "not run"}
	if r := findBench(s.Bench, "llama-8b", 1, 512); r != nil {
		if f := decodeRoofline(*r, s.Device); f >= 0 {
			t.Measured = fmt.Sprintf("%.0f%% (%.1f tok/s, %.2f ms/step)", 100*f, r.DecodeTokS, r.DecodeMsPerStep)
			t.Met = yesNo(f >= 0.6)
		}
	}
	out = append(out, t)
	// 8B batch-32 decode against transformers.
	t = target{Name: "8B shape, batch-32 decode", Wanted: "≥ 3× transformers generate", Met: "n/a", Measured: "not run"}
	var parts []string
	all := true
	for _, p := range []int{512, 4096} {
		r := findBench(s.Bench, "llama-8b", 32, p)
		if r == nil {
			continue
		}
		h := bestHF(s.Bench, *r)
		if h == nil {
			parts = append(parts, fmt.Sprintf("prompt %d: %.0f tok/s, transformers not measured", p, r.DecodeTokS))
			all = false
			continue
		}
		ratio := r.DecodeTokS / h.DecodeTokS
		parts = append(parts, fmt.Sprintf("prompt %d: %.2f× (%.0f vs %.0f tok/s, %s cache)", p, ratio, r.DecodeTokS, h.DecodeTokS, h.Cache))
		all = all && ratio >= 3
	}
	if len(parts) > 0 {
		t.Measured = strings.Join(parts, "; ")
		t.Met = yesNo(all)
	}
	out = append(out, t)
	// Prefill at 4,096 tokens.
	t = target{Name: "8B shape, prefill of 4,096-token prompts", Wanted: "≥ 40% of the bf16 peak in useful FLOPs", Met: "n/a", Measured: "not run"}
	best, bestBatch := -1.0, 0
	for _, b := range []int{1, 8, 32} {
		if r := findBench(s.Bench, "llama-8b", b, 4096); r != nil {
			if f := prefillShare(*r, s.Device); f > best {
				best, bestBatch = f, b
			}
		}
	}
	if best >= 0 {
		t.Measured = fmt.Sprintf("%.0f%% (batch %d)", 100*best, bestBatch)
		t.Met = yesNo(best >= 0.4)
	}
	out = append(out, t)
	// Long context.
	t = target{Name: "8B shape, one 32,768-token prompt", Wanted: "completes; measured peak within 10% of the plan", Met: "n/a", Measured: "not run"}
	if l := s.Long; l != nil {
		switch {
		case !l.Completed:
			t.Measured, t.Met = "did not complete", "no"
		case l.MeasuredBytes < 0 || l.PredictedBytes <= 0:
			t.Measured = fmt.Sprintf("completed; peak not measured (plan: %s)", gibs(l.PredictedBytes))
		default:
			dev := float64(l.MeasuredBytes-l.PredictedBytes) / float64(l.PredictedBytes)
			t.Measured = fmt.Sprintf("completed; peak %s, plan %s (%+.0f%%)", gibs(l.MeasuredBytes), gibs(l.PredictedBytes), 100*dev)
			t.Met = yesNo(math.Abs(dev) <= 0.1)
		}
	}
	out = append(out, t)
	// The real run.
	t = target{Name: "tally run of DROP (1B shape, two stop settings)", Wanted: "stored, reported, rerun answers from storage (0 generated)", Met: "n/a", Measured: "not run"}
	if d := s.Drop; d != nil {
		t.Measured = fmt.Sprintf("first run: %d generated, %d errors; rerun: %d generated, %d reused; report %d bytes",
			intField(d.First, "generations_new"), intField(d.First, "errors"), intField(d.Rerun, "generations_new"),
			intField(d.Rerun, "generations_reused"), len(d.Report))
		t.Met = yesNo(d.Stored && d.AnsweredOnce && d.Report != "")
	}
	out = append(out, t)
	return out
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func gibs(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }

// markdown renders the report: the targets table first, then the details.
func markdown(s *summary) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	title := "tally GPU check"
	if s.Env["dryrun"] == "1" {
		title += " (CPU dry run: no GPU, tiny shapes; the figures say nothing about a GPU)"
	}
	w("# %s\n\n", title)
	w("%s · device %s · GPU %s · tally %s · budget %ss\n\n", s.GeneratedAt, orNA(s.Env["device"]), orNA(s.Env["gpu"]), orNA(s.Env["tally_version"]), orNA(s.Env["budget_s"]))
	w("| target | wanted | measured | met |\n|---|---|---|---|\n")
	for _, t := range s.Targets {
		w("| %s | %s | %s | %s |\n", t.Name, t.Wanted, cell(t.Measured), t.Met)
	}
	w("\n## Steps\n\n| step | status | seconds | note |\n|---|---|---|---|\n")
	for _, st := range s.Steps {
		w("| %s | %s | %.0f | %s |\n", st.Name, st.Status, st.Seconds, cell(st.Note))
	}
	w("\n## Setup\n\n")
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w("- %s: `%s`\n", k, s.Env[k])
	}
	how := "measured on the device"
	if s.Device.Nominal {
		how = "H100 SXM datasheet, not measured"
	}
	w("- rooflines: %.0f GB/s, %.0f TFLOP/s bf16 (%s)\n", s.Device.BandwidthGBs, s.Device.BF16TFLOPs, how)
	if len(s.Device.Versions) > 0 {
		vs := make([]string, 0, len(s.Device.Versions))
		for k, v := range s.Device.Versions {
			vs = append(vs, k+" "+v)
		}
		sort.Strings(vs)
		w("- Python side: %s\n", strings.Join(vs, ", "))
	}
	if len(s.Parity) > 0 {
		w("\n## Parity on the fixture models (against transformers' float32 logits and greedy ids)\n\n")
		w("| model | --dtype | arithmetic | worst rel err | greedy alone | greedy batched | tokens before first difference | first token equal | pass | s | compilations |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, r := range s.Parity {
			w("| %s | %s | %s | %.2g | %d/%d | %d/%d | %d/%d | %d/%d | %s | %.1f | %d |\n", r.Model, r.DType, r.Arithmetic, r.WorstRelErr,
				r.UnbatchedIdentical, r.Prompts, r.BatchedIdentical, r.Prompts, r.AgreeTokens, r.TotalTokens, r.FirstTokenEqual, r.Prompts,
				yesNo(r.Pass)+errSuffix(cell(r.Error)), r.Seconds, r.Compilations)
		}
	}
	if len(s.Bench) > 0 {
		w("\n## Throughput (random bf16 weights, greedy, %d new tokens)\n\n", s.Bench[0].New)
		w("Decode roofline: the weights and each row's cache (float32 for tally, bf16 for transformers) read once per step. ")
		w("Peak GPU memory is nvidia-smi's high-water mark while the configuration ran (the allocator keeps what earlier ones took).\n\n")
		w("| model | engine | batch × prompt | rows | prefill tok/s | prefill %% bf16 peak | decode tok/s | ms/step | decode %% roofline | decode vs transformers | peak GPU MiB | warm s | compilations | note |\n")
		w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for _, r := range s.Bench {
			engine := r.Engine
			if r.Cache != "" {
				engine += " (" + r.Cache + ")"
			}
			note := r.Error + r.Skipped
			if r.Rows > 0 && r.Rows < r.Batch {
				note += fmt.Sprintf(" the plan holds %d rows: the prompts ran in waves, so prefill and decode times mix", r.Rows)
			}
			if r.TimedCompilations > 0 {
				note += fmt.Sprintf(" %d compilations in the timed run", r.TimedCompilations)
			}
			vs := ""
			if r.Engine == "tally" && r.Error == "" && r.Skipped == "" {
				if h := bestHF(s.Bench, r); h != nil {
					vs = fmt.Sprintf("%.2f×", r.DecodeTokS/h.DecodeTokS)
				}
			}
			w("| %s | %s | %d × %d | %d | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s |\n", r.Model, engine, r.Batch, r.Prompt, r.Rows,
				num(r.PrefillTokS, 0), pct(prefillShare(r, s.Device)), num(r.DecodeTokS, 1), num(r.DecodeMsPerStep, 2),
				pct(decodeRoofline(r, s.Device)), vs, mib(r.PeakGPUMiB), num(r.WarmSeconds, 1), r.Compilations, cell(note))
		}
	}
	if l := s.Long; l != nil {
		w("\n## Long context (%s-token prompt, %s new tokens)\n\n", orNA(s.Env["long_tokens"]), orNA(s.Env["new_tokens"]))
		w("- plan printed before the run: `%s`\n", orNA(l.Plan))
		w("- predicted (weights + KV cache + workspace): %s, reserve %s\n", gibs(l.PredictedBytes), gibs(l.ReserveBytes))
		if l.MeasuredBytes >= 0 {
			w("- measured peak GPU memory in use (minus before the run): %s\n", gibs(l.MeasuredBytes))
		} else {
			w("- measured peak GPU memory: not measured (no nvidia-smi); peak RSS %s\n", gibs(l.PeakRSSBytes))
		}
		w("- completed: %s (%d tokens generated, %d errors, %.0f s)\n", yesNo(l.Completed), l.Generated, l.Errors, l.Seconds)
	}
	if d := s.Drop; d != nil {
		w("\n## DROP with tally run (random weights: the scores mean nothing)\n\n")
		w("- first run: %d generated, %d reused, %d tokens, %d errors\n", intField(d.First, "generations_new"),
			intField(d.First, "generations_reused"), intField(d.First, "generated_tokens"), intField(d.First, "errors"))
		w("- rerun on the same store: %d generated, %d reused, %d tokens\n", intField(d.Rerun, "generations_new"),
			intField(d.Rerun, "generations_reused"), intField(d.Rerun, "generated_tokens"))
		if d.Report != "" {
			w("\n<details><summary>tally report</summary>\n\n%s\n</details>\n", strings.TrimSpace(d.Report))
		}
	}
	var failed []stepRecord
	for _, st := range s.Steps {
		if st.LogTail != "" {
			failed = append(failed, st)
		}
	}
	if len(failed) > 0 {
		w("\n## Log tails of the steps that failed or were skipped\n")
		for _, st := range failed {
			w("\n### %s (%s, rc %d)\n\n```\n%s\n```\n", st.Name, st.Status, st.RC, strings.TrimRight(strings.ReplaceAll(st.LogTail, "```", "'''"), "\n"))
		}
	}
	return b.String()
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return s
}

// cell makes text safe for a table cell.
func cell(s string) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

func num(x float64, prec int) string {
	if x <= 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return ""
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

func pct(f float64) string {
	if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return ""
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}

func mib(n int64) string {
	if n < 0 {
		return "n/a"
	}
	return strconv.FormatInt(n, 10)
}
