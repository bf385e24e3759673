package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tally/backends"
	"tally/generate"
	"tally/rescore"
	"tally/store"
	"tally/tasks"
)

// The scale benchmarks (issue 23, finding 9) run the tally binary on one
// generated store of 200,000 generations of the demo model: 20 tasks of
// 10,000 DROP-style samples each (the demo task's prompt, few-shot and
// stop settings: dot, nl, none × drop and drop-fixed, 2.4 million scores;
// 1% of the generations failed, as a backend error), made by the run
// pipeline itself (generate.Execute) with an instant backend that answers
// as the demo model does. BenchmarkScalePlan, BenchmarkScaleRescore and
// BenchmarkHTMLScale all read it. TALLY_BENCH_SCALE=DIR keeps the store
// and its task files there (reused when they exist).
const (
	scaleTasks   = 20
	scaleSamples = 10000
)

// scaleStore returns the store file and the --tasks value of the scale
// store, building it when needed.
func scaleStore(b *testing.B) (db, taskList string) {
	b.Helper()
	dir := os.Getenv("TALLY_BENCH_SCALE")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "tally-scale"); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
	}
	db = filepath.Join(dir, "scale.db")
	var specs []string
	for i := range scaleTasks {
		specs = append(specs, filepath.Join(dir, fmt.Sprintf("scale%02d.yaml", i)))
	}
	taskList = strings.Join(specs, ",")
	if _, err := os.Stat(db); err == nil {
		return db, taskList
	}
	start := time.Now()
	for i, spec := range specs {
		writeScaleTask(b, spec, i)
	}
	ctx := context.Background()
	st, err := store.Open(ctx, db+".tmp")
	if err != nil {
		b.Fatal(err)
	}
	be, err := openModel(ctx, "demo", modelOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	var jobs []*generate.Job
	for _, spec := range specs {
		cfg, err := tasks.Resolve(spec)
		if err != nil {
			b.Fatal(err)
		}
		loaded, err := cfg.Load(tasks.LoadOptions{})
		if err != nil {
			b.Fatal(err)
		}
		name := scaleVariant(b, st, cfg, loaded, spec, cfg.Task)
		j := &generate.Job{Task: name, Samples: loaded.Samples, Settings: cfg.Settings(), MaxTokens: cfg.MaxTokens, Score: cfg.Scorer(), Spec: cfg.ScoringSpec()}
		var samples []store.Sample
		for _, s := range loaded.Samples {
			samples = append(samples, rescore.ToStore(s))
		}
		if err := st.PutSamples(ctx, samples); err != nil {
			b.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	plan, err := generate.MakePlan(ctx, st, be, jobs)
	if err != nil {
		b.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"command": "run", "model": "demo", "tasks": specs})
	runID, err := st.StartRun(ctx, store.Run{Command: "run", Config: cfg, Model: "demo", Backend: be.Name(), Fingerprint: plan.Fingerprint})
	if err != nil {
		b.Fatal(err)
	}
	answer, err := be.Tokenizer().Encode(" 12.5\n\nPassage: Tom joined in 2017. Ann", false)
	if err != nil {
		b.Fatal(err)
	}
	sum, err := generate.Execute(ctx, st, instantModel{be, answer}, plan, generate.Options{RunID: runID, ClaimBatch: 256, FlushSize: 2048, FlushEvery: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := generate.CurrentResults(ctx, st, plan, generate.ScoreOptions{Write: true, RunID: runID}); err != nil {
		b.Fatal(err)
	}
	if err := st.FinishRun(ctx, runID, "done", sum.GeneratedTokens, sum.PromptTokens, sum.GenSeconds, nil); err != nil {
		b.Fatal(err)
	}
	counts, _ := st.Counts(ctx)
	st.Close()
	// The builder is also the one scripts/scale-bench.sh gives its BASE;
	// a BASE that predates variants writes the store as an earlier tally
	// stored tasks (by name: see scaleVariant), and a rescore with this
	// tree's binary leaves it as this tally's first writing command does
	// (its tasks their variants').
	if out, err := exec.Command(built, "rescore", "--model", "demo", "--tasks", taskList, "--store", db+".tmp").CombinedOutput(); err != nil {
		if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != ExitFailed {
			b.Fatalf("rescore the scale store: %v\n%s", err, out)
		}
	}
	if err := os.Rename(db+".tmp", db); err != nil {
		b.Fatal(err)
	}
	b.Logf("scale store: %v, built in %s", counts, time.Since(start).Round(time.Second))
	return db, taskList
}

// writeScaleTask writes task i of the scale store: the demo task's
// format over scaleSamples questions made from the demo's own.
func writeScaleTask(b *testing.B, spec string, i int) {
	b.Helper()
	base, err := os.ReadFile("../../tasks/builtin/demo.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	var rows []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(base)))
	for sc.Scan() {
		var row map[string]any
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			b.Fatal(err)
		}
		rows = append(rows, row)
	}
	data := strings.TrimSuffix(spec, ".yaml") + ".jsonl"
	f, err := os.Create(data)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for n := range scaleSamples {
		row := map[string]any{}
		for k, v := range rows[n%len(rows)] {
			row[k] = v
		}
		id := fmt.Sprintf("scale%02d-%05d", i, n)
		row["section_id"], row["query_id"] = id, id
		row["passage"] = fmt.Sprintf("%s Item %d of %d.", row["passage"], n, i)
		if err := enc.Encode(row); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	yaml := fmt.Sprintf(`task: scale%02d
loader: drop
data: %s
id: "{{.query_id}}"
prompt: "Passage: {{.passage}}\nQuestion: {{.question}}\nAnswer:"
target: " {{.target}}"
fewshot: 2
fewshot_separator: "\n\n"
fewshot_seed: 1234
share_key: "{{.section_id}}"
stop:
  dot: ["."]
  nl: ["\n"]
  none: []
max_tokens: 12
metrics: [drop, drop-fixed]
`, i, data)
	if err := os.WriteFile(spec, []byte(yaml), 0o644); err != nil {
		b.Fatal(err)
	}
}

// instantModel is the demo model answering every request at once with
// the same tokens (as many as the budget allows), except one request in a
// hundred (by its prompt), which fails.
type instantModel struct {
	backends.Backend
	answer []int
}

// Generate streams the answer's tokens to every request, then ends it.
func (m instantModel) Generate(ctx context.Context, reqs []backends.Request, sink backends.Sink) error {
	tok := m.Tokenizer()
	for _, r := range reqs {
		h := fnv.New32a()
		for _, id := range r.PromptIDs {
			h.Write([]byte{byte(id), byte(id >> 8), byte(id >> 16)})
		}
		if h.Sum32()%100 == 0 {
			sink(backends.Event{Index: r.Index, Done: true, Finish: backends.FinishError, PromptTokens: len(r.PromptIDs), Err: errors.New("instant model: a scripted failure")})
			continue
		}
		n := min(r.MaxTokens, len(m.answer))
		stopped := false
		for _, id := range m.answer[:n] {
			piece, _ := tok.Decode([]int{id}, true)
			if !sink(backends.Event{Index: r.Index, Text: piece, IDs: []int{id}}) {
				stopped = true
				break
			}
		}
		finish := backends.FinishLength
		if stopped {
			finish = backends.FinishStop
		}
		sink(backends.Event{Index: r.Index, Done: true, Finish: finish, PromptTokens: len(r.PromptIDs), GenTokens: n})
	}
	return ctx.Err()
}

// measure runs the tally binary with args, with tally's caches in the
// folder cache, and returns its wall time, its CPU time (user and system,
// on all cores) and its peak resident set size (MB).
func measure(b *testing.B, cache string, args ...string) (wall, cpu time.Duration, rssMB float64) {
	b.Helper()
	cmd := exec.Command(built, args...)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
	var errb strings.Builder
	cmd.Stderr = &errb
	start := time.Now()
	out, err := cmd.Output()
	wall = time.Since(start)
	if err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitFailed {
			b.Fatalf("tally %s: %v\n%s%s", strings.Join(args, " "), err, out, errb.String())
		}
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return wall, cpu, float64(ru.Maxrss) / 1024
}

// BenchmarkScaleStore builds the scale store (when TALLY_BENCH_SCALE
// names a folder that does not hold it yet): scripts/scale-bench.sh builds
// it once, with the code it compares against, for both sides.
func BenchmarkScaleStore(b *testing.B) {
	scaleStore(b)
	b.ReportMetric(0, "ns/op")
}

// BenchmarkScalePlan is `tally plan` on the scale store (issue 23's
// target: at most 2 s) as a user who planned before runs it: with the
// prompt keys an earlier plan kept (a plan made, untimed, first).
func BenchmarkScalePlan(b *testing.B) {
	db, list := scaleStore(b)
	cache := b.TempDir()
	args := []string{"plan", "--model", "demo", "--tasks", list, "--store", db}
	measure(b, cache, args...)
	benchCommand(b, func() string { return cache }, args...)
}

// BenchmarkScalePlanCold is `tally plan` on the scale store with no
// prompt keys kept: every prompt tokenised.
func BenchmarkScalePlanCold(b *testing.B) {
	db, list := scaleStore(b)
	benchCommand(b, b.TempDir, "plan", "--model", "demo", "--tasks", list, "--store", db)
}

// BenchmarkScaleRescore is `tally rescore` on the scale store (issue 23's
// target: streaming, at most 400 MB).
func BenchmarkScaleRescore(b *testing.B) {
	db, list := scaleStore(b)
	benchCommand(b, b.TempDir, "rescore", "--model", "demo", "--tasks", list, "--store", db)
}

// benchCommand runs tally with args b.N times, each with tally's caches
// in the folder cache() names, and reports the mean wall time (s/op) and
// CPU time (cpu-s/op, all cores: less sensitive than the wall time to
// other processes on a shared machine) and the largest peak RSS
// (peak-RSS-MB).
func benchCommand(b *testing.B, cache func() string, args ...string) {
	var wall, cpu time.Duration
	var peak float64
	b.ResetTimer()
	for range b.N {
		w, c, rss := measure(b, cache(), args...)
		wall, cpu, peak = wall+w, cpu+c, max(peak, rss)
	}
	b.ReportMetric(wall.Seconds()/float64(b.N), "s/op")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(peak, "peak-RSS-MB")
	b.ReportMetric(0, "ns/op")
}
