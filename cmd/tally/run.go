package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"tally/backends"
	"tally/backends/gomlx"
	"tally/generate"
	"tally/internal/demostory"
	"tally/internal/lmevalcli"
	"tally/report"
	"tally/rescore"
	"tally/store"
	"tally/tasks"
	"tally/tasks/variant"
)

// runFlags are the flags shared by run, rerun, demo, plan, rescore and
// compare.
type runFlags struct {
	// noDocs loads tasks without their samples' data rows (tasks.LoadOptions).
	noDocs    bool
	model     string
	device    string
	dtype     string
	tasks     []string
	stops     []string
	maxTokens int
	// limit is --limit: a number of samples, or below 1 a fraction of
	// each task's (lm-eval's rule).
	limit     lmevalcli.Limit
	samples   []string
	storePath string
	// conc is --concurrency as given (a number or auto), and concurrency
	// its number (0: tally's choice), set by validate.
	conc        lmevalcli.Concurrency
	concurrency int
	json        bool
	data        string
	skipBad     bool
	set         []string
	lease       time.Duration
	claimBatch  int
	// worker is --worker: "" when not given, else the worker's name
	// (workerAuto for the host name).
	worker string
	fs     *pflag.FlagSet
	// Model flags for server backends and instruct models (model.go).
	baseURL, modelRevision string
	chat                   bool
	outputPath             string
	// fewshot is --fewshot (lm-eval's --num_fewshot), applied as --set
	// fewshot=N when given; modelArgs is lm-eval's --model_args, applied
	// by lmevalcli.ApplyModelArgs before the command runs.
	fewshot   int
	modelArgs string
	// python is --python: the interpreter of the Python bridge (read by
	// the root's pre-run, usePython).
	python string
	// deviceMemory is --device-memory as given ("" when not), and
	// deviceBytes its value in bytes (validate parses it).
	deviceMemory string
	deviceBytes  int64
}

// modelRevisionHelp is --model-revision's help; docs/servers.md says the
// same (TestHelpIsTheReference).
const modelRevisionHelp = "openai:NAME only: a label kept in the model fingerprint, for a server whose /v1/models says nothing about the weights " +
	"(TGI, Ollama's /v1; vLLM and llama.cpp's server do): new weights under the same name, a new label (an ollama:NAME model is fingerprinted by the digest its server reports)"

// register adds the run flags to cmd, except those omit names (flags that
// would change nothing there: giving one is refused, saying why).
func (f *runFlags) register(cmd *cobra.Command, defModel string, defTasks []string, omit omitted) {
	fl := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	defer func() {
		addFlags(cmd, fl, omit)
		f.fs = cmd.Flags()
	}()
	fl.StringVar(&f.model, "model", defModel, modelHelp)
	fl.StringVar(&f.device, "device", "", `native backend device: cpu (default), xla or cuda`)
	fl.StringVar(&f.dtype, "dtype", "auto", "native backend: the dtype of the matrix products: auto (the checkpoint's where this CPU is fast in it, else float32), float32 (reference parity), bfloat16 or float16")
	fl.StringVar(&f.deviceMemory, "device-memory", "", "native backend: the memory the model may use in all, weights included (e.g. 79GiB): the plan sizes the batch and prefill chunks to it; on xla/cuda there is no plan without it (default on cpu: the host's available memory)")
	fl.StringSliceVar(&f.tasks, "tasks", defTasks, `tasks: built-in names or YAML paths (see "tally tasks")`)
	fl.StringArrayVar(&f.stops, "stop", nil, `named stop setting NAME=SEQ[,SEQ...], repeatable (e.g. --stop dot=. --stop nl='\n'); replaces the tasks' defaults (an lm-eval task keeps its "until" beside them)`)
	fl.IntVar(&f.maxTokens, "max-tokens", 0, "token budget per sample (default: the task's)")
	fl.Var(&f.limit, "limit", "use only the first N samples of each task, or below 1 that fraction of each task's samples (lm-eval's rule: ceil(total × limit))")
	fl.StringSliceVar(&f.samples, "samples", nil, "use only these sample ids")
	fl.StringVar(&f.storePath, "store", defaultStore(), "results store: a SQLite file, or a PostgreSQL URL postgres://… shared by workers (default from $TALLY_STORE, else tally.db)")
	fl.Var(&f.conc, "concurrency", "requests in flight at once (native: the batch size); auto, the default, is tally's choice: the native engine's batch of up to 8 rows that its memory plan fits, 4 for a server")
	fl.BoolVar(&f.json, "json", false, "print one JSON object instead of tables")
	fl.StringVar(&f.data, "data", "", "data file for the task (overrides the task's own)")
	fl.BoolVar(&f.skipBad, "skip-bad", false, "skip malformed data lines (counted) instead of failing")
	fl.StringVar(&f.baseURL, "base-url", "", "openai: the server's API root, e.g. http://127.0.0.1:8000/v1 (default $OPENAI_BASE_URL); the key is read from $OPENAI_API_KEY")
	fl.StringVar(&f.modelRevision, "model-revision", "", modelRevisionHelp)
	fl.BoolVar(&f.chat, "chat", false, "prompt through the model's chat template (instruct models; default: the tasks' chat setting)")
	fl.StringVar(&f.outputPath, "output-path", "", "also write lm-evaluation-harness files (results_*.json, samples_*.jsonl) under this folder")
	fl.StringArrayVar(&f.set, "set", nil, "override a task config field, KEY=VALUE (repeatable; e.g. --set max_prompt_tokens=4000)")
	fl.IntVar(&f.fewshot, "fewshot", 0, "solved examples put before each prompt (default: the task's; lm-eval's --num_fewshot)")
	fl.StringVar(&f.python, "python", "", pythonHelp)
	fl.StringVar(&f.modelArgs, "model-args", "", "lm-eval's --model_args: --model hf --model-args pretrained=PATH is --model PATH")
	fl.MarkHidden("model-args")
	fl.Bool("log-samples", false, "lm-eval's --log_samples: accepted; --output-path always writes the samples files")
	fl.MarkHidden("log-samples")
	fl.DurationVar(&f.lease, "lease", generate.DefaultLease, "how long a work claim holds without renewal (processes sharing a store take over a dead one's claims after it)")
	fl.MarkHidden("lease")
	fl.IntVar(&f.claimBatch, "claim-batch", 0, "how many generations a process claims at a time (default max(16, 4 × the backend's slots), doubled up to 256 while batches are fast)")
	fl.MarkHidden("claim-batch")
}

// defaultStore is the store used when --store is not given: $TALLY_STORE
// (how a cluster's workers are pointed at one PostgreSQL store), else
// ./tally.db.
func defaultStore() string {
	if v := os.Getenv("TALLY_STORE"); v != "" {
		return v
	}
	return "tally.db"
}

// maxConcurrency bounds --concurrency (requests in flight, batch rows).
const maxConcurrency = 1 << 16

// validate checks the numeric flags: each, when given, must be positive
// and at most its bound (a budget or size that overflows is refused).
func (f *runFlags) validate() error {
	for _, c := range []struct {
		name    string
		v, most int
		want    string
	}{
		{"max-tokens", f.maxTokens, generate.MaxBudget, fmt.Sprintf("a positive token budget, at most %d (budgets are capped by the model's context)", generate.MaxBudget)},
		{"concurrency", f.conc.N, maxConcurrency, fmt.Sprintf("1 to %d requests in flight, or auto", maxConcurrency)},
	} {
		if c.v < 0 || c.v > c.most || (c.v == 0 && f.fs != nil && f.fs.Changed(c.name) && !(c.name == "concurrency" && f.conc.Auto)) {
			return fmt.Errorf("--%s %d: want %s", c.name, c.v, c.want)
		}
	}
	f.concurrency = f.conc.N
	if _, err := gomlx.ParseDType(f.dtype); err != nil {
		return fmt.Errorf("--dtype: %w", err)
	}
	if f.deviceMemory != "" {
		n, err := humanize.ParseBytes(f.deviceMemory)
		if err != nil || n == 0 || n > math.MaxInt64 {
			return fmt.Errorf("--device-memory %q: want a size such as 79GiB, 80GB or a number of bytes", f.deviceMemory)
		}
		f.deviceBytes = int64(n)
	}
	if f.fewshot < 0 {
		return fmt.Errorf("--fewshot %d: want 0 or more examples", f.fewshot)
	}
	if f.lease <= 0 && f.fs != nil && f.fs.Changed("lease") {
		return fmt.Errorf("--lease %v: want a positive duration", f.lease)
	}
	return nil
}

// session is what every model-facing command sets up: the store, the
// backend, the jobs.
type session struct {
	flags *runFlags
	st    *store.Store
	be    backends.Backend
	*loadedJobs
}

func (f *runFlags) settings() ([]generate.StopSetting, error) {
	var out []generate.StopSetting
	seen := map[string]bool{}
	for _, a := range f.stops {
		s, err := generate.ParseStop(a)
		if err != nil {
			return nil, err
		}
		if seen[s.Name] {
			return nil, fmt.Errorf("stop setting %q given twice", s.Name)
		}
		if err := generate.CheckSettingName(s.Name); err != nil {
			return nil, fmt.Errorf("--stop %q: %w", a, err)
		}
		seen[s.Name] = true
		out = append(out, s)
	}
	return out, nil
}

// setArgs is --set with --fewshot N added as fewshot=N when given.
func (f *runFlags) setArgs() []string {
	if f.fs == nil || !f.fs.Changed("fewshot") {
		return f.set
	}
	return append(slices.Clip(f.set), fmt.Sprintf("fewshot=%d", f.fewshot))
}

// listTasks reports whether --tasks is lm-eval's `--tasks list`.
func (f *runFlags) listTasks() bool { return len(f.tasks) == 1 && f.tasks[0] == "list" }

// loadedJobs are a command's tasks, loaded: per task (in order) its
// config, its job (under its variant's key) and its variant, and per key
// the number of samples in its data before --limit or --samples.
type loadedJobs struct {
	jobs     []*generate.Job
	cfgs     []*tasks.Config
	variants []variant.Record
	totals   map[string]int
}

// loadJobs resolves tasks and loads their samples, each task's under its
// variant's key; no model is needed.
func (f *runFlags) loadJobs(stderr io.Writer) (*loadedJobs, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	stops, err := f.settings()
	if err != nil {
		return nil, err
	}
	set, err := f.setMap()
	if err != nil {
		return nil, err
	}
	cfgs, specs, err := f.resolveTasks(set)
	if err != nil {
		return nil, err
	}
	for _, c := range cfgs {
		if lm := c.LMEval(); lm != nil && lm.ExplicitZeroShot() {
			// lm-eval's own line (simple_evaluate), said as lm-eval says it.
			fmt.Fprintf(stderr, "tally: num_fewshot has been set to 0 for %s in its config. Manual configuration will be ignored.\n", c.Task)
		}
	}
	chat, err := f.modelOptions(cfgs, nil).useChat()
	if err != nil {
		return nil, err
	}
	all, err := tasks.LoadAll(cfgs, tasks.LoadOptions{Data: f.data, Limit: f.limit.N, LimitFraction: f.limit.Fraction, IDs: f.samples, SkipBad: f.skipBad,
		NoDocs: f.noDocs, CacheDir: tasks.DefaultLoadCacheDir()})
	if err != nil {
		return nil, err
	}
	if f.conc.Auto {
		fmt.Fprintln(stderr, "tally: "+lmevalcli.AutoNote)
	}
	lj := &loadedJobs{cfgs: cfgs, totals: map[string]int{}}
	found := map[string]bool{}
	for i, cfg := range cfgs {
		loaded := all[i]
		rec := cfg.Variant(loaded, tasks.VariantOptions{Chat: chat, TaskSpec: specs[i], Set: set})
		tasks.Keyed(loaded, rec)
		lj.totals[rec.Key] = loaded.Total
		if loaded.Skipped > 0 {
			fmt.Fprintf(stderr, "tally: task %s: skipped %s\n", cfg.Task, plural(loaded.Skipped, "bad line", "bad lines"))
		}
		if rule := f.limit.Rule(loaded.Total); rule != "" && len(f.samples) == 0 {
			fmt.Fprintf(stderr, "tally: task %s: %s\n", cfg.Task, rule)
		}
		for _, s := range loaded.Samples {
			found[s.ID] = true
		}
		if len(loaded.Samples) == 0 && len(f.samples) == 0 {
			return nil, fmt.Errorf("task %s: no samples selected", cfg.Task)
		}
		j := &generate.Job{Task: rec.Key, Samples: loaded.Samples, Settings: cfg.SettingsWith(stops), MaxTokens: cfg.MaxTokens,
			Score: cfg.Scorer(), Spec: cfg.ScoringSpec()}
		if f.maxTokens > 0 {
			j.MaxTokens = f.maxTokens
		}
		lj.jobs, lj.variants = append(lj.jobs, j), append(lj.variants, rec)
	}
	if err := f.checkSampleIDs(found, lj.jobs); err != nil {
		return nil, err
	}
	return lj, nil
}

// setMap is --set (and --fewshot) as a map of fields to values.
func (f *runFlags) setMap() (map[string]string, error) {
	set := map[string]string{}
	for _, kv := range f.setArgs() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--set %q: want KEY=VALUE", kv)
		}
		if _, twice := set[k]; twice && k == "fewshot" && f.fs != nil && f.fs.Changed("fewshot") {
			return nil, fmt.Errorf("--fewshot and --set fewshot: give the number of examples once")
		}
		set[k] = v
	}
	return set, nil
}

// resolveTasks resolves --tasks under set: every config, with the
// --tasks entry each came from.
func (f *runFlags) resolveTasks(set map[string]string) (cfgs []*tasks.Config, specs []string, err error) {
	if len(f.tasks) == 0 {
		return nil, nil, fmt.Errorf("no tasks: pass --tasks")
	}
	if f.data != "" && len(f.tasks) > 1 {
		return nil, nil, fmt.Errorf("--data applies to one task; %d given", len(f.tasks))
	}
	if err := checkDataFile(f.data); err != nil {
		return nil, nil, err
	}
	for _, spec := range f.tasks {
		cs, err := tasks.ResolveAll(spec, set)
		if err != nil {
			return nil, nil, err
		}
		for range cs {
			specs = append(specs, spec)
		}
		cfgs = append(cfgs, cs...)
	}
	return cfgs, specs, nil
}

// checkSampleIDs refuses --samples ids that no task has (found holds the
// ids loaded), and a task left with no samples.
func (f *runFlags) checkSampleIDs(found map[string]bool, jobs []*generate.Job) error {
	var unknown []string
	for _, id := range f.samples {
		if !found[id] {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("--samples: unknown sample ids %s (not in task %s)", strings.Join(unknown, ","), strings.Join(f.tasks, ", "))
	}
	for _, j := range jobs {
		if len(j.Samples) == 0 {
			return fmt.Errorf("task %s: no samples selected", variant.Name(j.Task))
		}
	}
	return nil
}

// open sets up a session. A read-only session opens an existing store for
// reading only (never creating, migrating or writing it).
func (f *runFlags) open(ctx context.Context, stderr io.Writer, readOnly bool) (*session, error) {
	if f.model == "" {
		return nil, fmt.Errorf("no model: pass --model")
	}
	lj, err := f.loadJobs(stderr)
	if err != nil {
		return nil, err
	}
	st, be, err := f.openStoreAndModel(ctx, readOnly, f.modelOptions(lj.cfgs, lj.jobs), stderr)
	if err != nil {
		return nil, err
	}
	return &session{flags: f, st: st, be: be, loadedJobs: lj}, nil
}

// openStoreAndModel opens the store (read-only: an existing one only) and
// the model. A store this command would create is created once the model
// opened, so that a model that fails to open leaves no empty store behind.
func (f *runFlags) openStoreAndModel(ctx context.Context, readOnly bool, mo modelOptions, stderr io.Writer) (st *store.Store, be backends.Backend, err error) {
	openStore := func() (err error) {
		if readOnly {
			st, err = openStoreReadOnly(ctx, f.storePath, stderr)
		} else {
			st, err = store.Open(ctx, f.storePath)
		}
		return err
	}
	openBackend := func() (err error) {
		if be, err = openModel(ctx, f.model, mo); err != nil {
			return err
		}
		if m, ok := be.(*gomlx.Model); ok && m.Tokenizer() == nil {
			return fmt.Errorf("model %s has no tokenizer.json: tasks need one to tokenise their prompts (tally generate --ids works without)", f.model)
		}
		return nil
	}
	first, second := openStore, openBackend
	if !readOnly && !storeExists(f.storePath) {
		first, second = openBackend, openStore
	}
	if err = first(); err == nil {
		err = second()
	}
	if err != nil {
		if st != nil {
			st.Close()
		}
		if be != nil {
			be.Close()
		}
		return nil, nil, err
	}
	return st, be, nil
}

// Close releases the model and the store.
func (s *session) Close() {
	s.be.Close()
	s.st.Close()
}

func newRunCmd(name, short string) *cobra.Command {
	f := &runFlags{}
	defModel, defTasks := "", []string(nil)
	if name == "demo" {
		defModel, defTasks = "demo", []string{"demo"}
	}
	cmd := &cobra.Command{
		Use:   name,
		Short: short,
		Args:  noArgsWorker,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.listTasks() {
				return printTasks(cmd.OutOrStdout())
			}
			return runCommand(cmd.Context(), name, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f.register(cmd, defModel, defTasks, nil)
	f.registerWorker(cmd)
	return cmd
}

// noArgsWorker refuses arguments, as cobra.NoArgs does, and says how to
// name a worker when the argument follows a bare --worker (whose value,
// being optional, must be attached: --worker=NAME).
func noArgsWorker(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if fl := cmd.Flags().Lookup("worker"); fl != nil && fl.Changed && fl.Value.String() == workerAuto {
		return fmt.Errorf("unexpected argument %q: to name the worker, write --worker=%s", args[0], args[0])
	}
	return fmt.Errorf("unexpected argument %q for %q (flags only)", args[0], cmd.CommandPath())
}

// workerAuto is the value of a bare --worker: the worker is named after
// its host. The help shows it as the default of a bare --worker
// (--worker string[="$HOSTNAME"]), and the literal value means the same.
const workerAuto = "$HOSTNAME"

// registerWorker adds --worker to a command that does model work.
func (f *runFlags) registerWorker(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.worker, "worker", "", "run as one worker of a run shared through the store (a PostgreSQL URL, or a SQLite file on one machine): "+
		"register as worker NAME (default: the host name) with a unique id, claim work in portions, heartbeat, take over dead workers' claims, "+
		"leave once the whole run is stored, and exit 0 even when some samples failed (they are stored; tally plan lists them)")
	fl.Lookup("worker").NoOptDefVal = workerAuto
}

// workerID is the claim owner id of this process: for --worker NAME,
// NAME/pid/random; otherwise the default owner (host/pid/random).
func (f *runFlags) workerID() string {
	if f.worker == "" {
		return ""
	}
	name := f.worker
	if name == workerAuto {
		name, _ = os.Hostname()
	}
	return generate.NewOwnerNamed(name)
}

func runCommand(ctx context.Context, name string, f *runFlags, stdout, stderr io.Writer) error {
	s, err := f.open(ctx, stderr, false)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.storeSamples(ctx, stderr); err != nil {
		return err
	}
	plan, err := generate.MakePlan(ctx, s.st, s.be, s.jobs)
	if err != nil {
		return err
	}
	if name == "rerun" && plan.Counts[generate.Missing] == countCells(plan) {
		return fmt.Errorf("nothing stored for this model in %s%s: use `tally run`", store.Redact(f.storePath), supersededNote(plan))
	}
	if !f.json {
		printPlan(stderr, plan, s.labels())
	}
	// The native backend's memory plan for the work, before any of it (on
	// xla/cuda only with --device-memory), also beside --json's stdout.
	if mem := memoryPlan(s.be, plan); mem != "" {
		fmt.Fprintf(stderr, "memory: %s\n", mem)
	}
	cfg, _ := json.Marshal(map[string]any{"command": name, "model": f.model, "device": f.device, "tasks": f.tasks,
		"stops": f.stops, "max_tokens": f.maxTokens, "limit": f.limit.JSON(), "samples": f.samples, "concurrency": f.concurrency,
		"data": f.data, "set": f.setArgs(), "skip_bad": f.skipBad, "dtype": productsDType(s.be), "chat": s.chat()})
	host, _ := os.Hostname()
	started := time.Now()
	runID, err := s.st.StartRun(ctx, store.Run{Command: name, Config: cfg, Version: version(), Host: host,
		Backend: s.be.Name(), Model: f.model, Fingerprint: plan.Fingerprint, Lease: f.lease})
	if err != nil {
		return err
	}
	finishCtx, endFinish := store.WithGrace(ctx)
	defer endFinish()
	stopBeat := s.st.KeepRunAlive(runID, f.lease)
	sum, err := s.execute(ctx, name, plan, runID, started, stdout, stderr)
	stopBeat()
	return s.closeRun(finishCtx, runID, sum, err)
}

// closeRun records how run runID ended and returns err, or the error of
// recording it. ctx outlives an interrupt by store.CommitGrace (an
// interrupted run is closed too). Failed samples (exit status 3) end a
// run that completed.
func (s *session) closeRun(ctx context.Context, runID int64, sum generate.Summary, err error) error {
	status := store.EndStatus(err)
	if ee := (*exitError)(nil); errors.As(err, &ee) && ee.code == ExitFailed {
		status = store.RunDone
	}
	statsJSON, _ := json.Marshal(backendStats(s.be))
	if ferr := s.st.FinishRun(ctx, runID, status, sum.GeneratedTokens, sum.PromptTokens, sum.GenSeconds, statsJSON); ferr != nil && err == nil {
		return ferr
	}
	return err
}

// execute does a planned run's work (recorded as run runID) and reports
// it: the model work, the scores, the output files, the tables.
func (s *session) execute(ctx context.Context, name string, plan *generate.Plan, runID int64, started time.Time, stdout, stderr io.Writer) (generate.Summary, error) {
	f := s.flags
	owner := f.workerID()
	if owner != "" {
		fmt.Fprintf(stderr, "tally: worker %s on store %s\n", owner, store.Redact(f.storePath))
	}
	sum, err := generate.Execute(ctx, s.st, s.be, plan, generate.Options{RunID: runID, Progress: newProgress(stderr), Lease: f.lease,
		Owner: owner, Model: f.model, ClaimBatch: f.claimBatch})
	sum.Worker = owner
	if err != nil {
		return sum, err
	}
	warnUnscorable(stderr, sum.Unscorable)
	// Each failed sample was printed as it failed (progress); one line
	// sums up the prompts beyond the context.
	if n := len(sum.Overflowed); n > 0 {
		fmt.Fprintf(stderr, "tally: %s the model's context of %d tokens: recorded with finish reason \"context\", not truncated "+
			"(`tally plan` lists them; fewer few-shot examples, --fewshot, or a model with a longer context runs them)\n",
			plural(n, "prompt exceeds", "prompts exceed"), s.be.ContextLength())
	}
	if sum.ClaimsTakenOver > 0 {
		fmt.Fprintf(stderr, "tally: took over %d work claims of a process that stopped (lease expired)\n", sum.ClaimsTakenOver)
	}
	// Everything now stored, scored under the current inputs: a peer's
	// generations, and any score whose inputs changed, are (re)computed.
	res, rep, err := generate.CurrentResults(ctx, s.st, plan, generate.ScoreOptions{Write: true, RunID: runID})
	if err != nil {
		return sum, err
	}
	warnUnscorable(stderr, rep.Unscorable)
	sum.Recomputed += rep.Recomputed
	noteRecomputed(stderr, sum.Recomputed, true)
	runs := []report.RunResults{{Model: f.model, Chat: s.chat(), DType: productsDType(s.be), Plan: plan, Results: res}}
	ds, err := s.dataset(ctx, runs, f.outputPath != "", false)
	if err != nil {
		return sum, err
	}
	sum.Scores, sum.Counts = figures(ds)
	sum.FailedSamples = generate.FailedAsZero
	if err := writeOutputPath(ds, f.outputPath, s.lmevalOptions(started, runs, []backends.Backend{s.be}), stderr); err != nil {
		return sum, err
	}
	exit := failedExit(res.Failures())
	if owner != "" && exit != nil {
		// The run is complete: failed samples are stored as such, and a
		// scheduler restarting this worker would find nothing to do.
		fmt.Fprintf(stderr, "tally: worker %s: %v (exit status 0: the run is complete)\n", owner, exit)
		exit = nil
	}
	if f.json {
		if err := writeJSON(stdout, sum); err != nil {
			return sum, err
		}
		return sum, exit
	}
	if owner != "" {
		fmt.Fprintf(stderr, "tally: worker %s: generated %d, continued %d, %d by other workers, took over %d claims\n",
			owner, sum.GenerationsNew, sum.GenerationsContinued, sum.GenerationsByPeers, sum.ClaimsTakenOver)
	}
	fmt.Fprintf(stderr, "%s: %d generated, %d continued, %d reused, %d failed before and not retried, %d by other processes; %d tokens generated, %d prompt tokens, %d errors, %.1fs\n",
		plural(sum.Samples, "sample", "samples"), sum.GenerationsNew, sum.GenerationsContinued, sum.GenerationsReused, sum.GenerationsFailed, sum.GenerationsByPeers,
		sum.GeneratedTokens, sum.PromptTokens, sum.Errors, sum.Seconds)
	printRows(stdout, ds)
	if name == "demo" {
		for _, j := range s.jobs {
			fmt.Fprint(stdout, demostory.Summarize(j.Task, j.Settings, j.Samples, res))
		}
	}
	return sum, exit
}

// noteRecomputed says on stderr how many (sample, setting) pairs had stale
// scores that were recomputed (stored, or in memory only).
func noteRecomputed(w io.Writer, n int, stored bool) {
	if n == 0 {
		return
	}
	where := "and stored"
	if !stored {
		where = "in memory (this command never writes the store; `tally rescore` stores them)"
	}
	fmt.Fprintf(w, "tally: recomputed %s (data, metrics or task changed since they were stored) %s\n", plural(n, "stale score", "stale scores"), where)
}

// failedExit is the error that makes tally exit with ExitFailed when any
// sample of the results failed, nil otherwise.
func failedExit(f []string) error {
	if len(f) == 0 {
		return nil
	}
	return &exitError{code: ExitFailed, err: fmt.Errorf("%s and count as 0 in the means (first: %s); `tally plan` lists them, `tally rerun` retries backend errors",
		plural(len(f), "(sample, setting) pair failed", "(sample, setting) pairs failed"), f[0])}
}

// warnUnscorable names, on stderr, the (sample, setting) pairs a metric
// could not score (at most 5, then a count).
func warnUnscorable(w io.Writer, pairs []string) {
	sort.Strings(pairs)
	for i, u := range pairs {
		if i == 5 {
			fmt.Fprintf(w, "tally: … and %d more unscorable (stored as metric %q)\n", len(pairs)-i, generate.Unscorable)
			break
		}
		fmt.Fprintf(w, "tally: unscorable, left out of the means: %s\n", u)
	}
}

func countCells(p *generate.Plan) int {
	n := 0
	for _, c := range p.Counts {
		n += c
	}
	return n
}

// storeSamples stores the session's task variants and samples (a writing
// command's first step: what its generations and scores are of); a
// session loaded without data rows (noDocs) adds only the samples not
// stored, keeping the stored ones' rows.
func (s *session) storeSamples(ctx context.Context, stderr io.Writer) error {
	// A task an earlier tally stored by name, whose prompts are this
	// variant's, becomes this variant (store.AdoptLegacy).
	for _, j := range s.jobs {
		name := variant.Name(j.Task)
		if name == j.Task {
			continue
		}
		prompts := func() map[string]string {
			m := make(map[string]string, len(j.Samples))
			for _, smp := range j.Samples {
				m[smp.ID] = smp.Prompt
			}
			return m
		}
		adopted, err := s.st.AdoptLegacy(ctx, name, j.Task, prompts)
		if err != nil {
			return err
		}
		if adopted {
			fmt.Fprintf(stderr, "tally: task %s, stored by an earlier tally with these prompts, is now stored as this run's variant %s\n", name, j.Task)
		}
	}
	if err := s.st.PutVariants(ctx, s.variants); err != nil {
		return err
	}
	put := s.st.PutSamples
	if s.flags.noDocs {
		put = s.st.AddSamples
	}
	for _, j := range s.jobs {
		if s.flags.noDocs {
			// Samples stored whole already are kept (a rescore of a
			// variant a run stored adds nothing: 200,000 samples
			// converted for no row cost a third of its memory).
			n, err := s.st.CountSamples(ctx, j.Task)
			if err != nil {
				return err
			}
			if n >= len(j.Samples) {
				continue
			}
		}
		out := make([]store.Sample, len(j.Samples))
		for i, smp := range j.Samples {
			out[i] = rescore.ToStore(smp)
		}
		if err := put(ctx, out); err != nil {
			return err
		}
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func backendStats(be backends.Backend) any {
	if m, ok := be.(*gomlx.Model); ok {
		return m.Stats()
	}
	return struct{}{}
}

// planJSON is `tally plan --json`.
type planJSON struct {
	Fingerprint      string                  `json:"fingerprint"`
	Counts           map[generate.Status]int `json:"counts"`
	Requests         int                     `json:"requests"`
	TokensToGenerate int                     `json:"tokens_to_generate"`
	PromptTokens     int                     `json:"prompt_tokens"`
	// Untokenised counts the requests whose prompt length is unknown (a
	// server backend tokenises them): prompt_tokens leaves them out.
	Untokenised int `json:"prompts_untokenised"`
	// Throughput and EstimatedSeconds are null when no earlier run of the
	// model measured a throughput.
	Throughput       *float64 `json:"tokens_per_second"`
	EstimatedSeconds *float64 `json:"estimated_seconds"`
	// ExpectedTokens is the tokens the work is expected to generate (at
	// the stop positions of the model's stored generations; at most
	// tokens_to_generate), and EstimateBasis what the estimate rests on.
	ExpectedTokens int                          `json:"expected_tokens"`
	EstimateBasis  string                       `json:"estimate_basis"`
	Overflow       int                          `json:"context_overflow"`
	Stale          int                          `json:"stale_scores"`
	Tasks          map[string]map[string]counts `json:"tasks"`
	Failed         []failedSample               `json:"failed"`
	// Superseded lists this model's fingerprints under another arithmetic
	// that hold generations of the missing samples (not reused).
	Superseded []generate.Superseded `json:"other_arithmetic"`
}

// failedSample is a failed sample as plan lists it.
type failedSample struct {
	Task   string `json:"task"`
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

type counts map[generate.Status]int

// planSummary is the plan as `tally plan --json` prints it, tasks named
// by labels (variant.Labels; their names where labels is nil).
func planSummary(p *generate.Plan, labels map[string]string) planJSON {
	label := func(key string) string {
		if l, ok := labels[key]; ok {
			return l
		}
		return variant.Name(key)
	}
	out := planJSON{Fingerprint: p.Fingerprint, Counts: p.Counts, Requests: p.Requests, TokensToGenerate: p.TokensToGenerate,
		ExpectedTokens: min(p.Estimate.Tokens, p.TokensToGenerate), EstimateBasis: p.Estimate.Basis(),
		PromptTokens: p.PromptTokens, Untokenised: p.Untokenised, Overflow: p.Overflow, Stale: p.Stale,
		Tasks: map[string]map[string]counts{}, Failed: []failedSample{}, Superseded: p.Superseded}
	if out.Superseded == nil {
		out.Superseded = []generate.Superseded{}
	}
	if finite(p.Throughput) && p.Throughput > 0 && finite(p.EstimatedSeconds) && p.EstimatedSeconds >= 0 {
		tps, secs := p.Throughput, p.EstimatedSeconds
		out.Throughput, out.EstimatedSeconds = &tps, &secs
	}
	for _, s := range generate.AllStatuses() {
		if _, ok := out.Counts[s]; !ok {
			out.Counts[s] = 0
		}
	}
	for _, it := range p.Items {
		if it.FailReason != "" {
			out.Failed = append(out.Failed, failedSample{label(it.Sample.Task), it.Sample.ID, it.FailReason})
		}
		t := out.Tasks[label(it.Job.Task)]
		if t == nil {
			t = map[string]counts{}
			out.Tasks[label(it.Job.Task)] = t
		}
		for k, set := range it.Job.Settings {
			if t[set.Name] == nil {
				t[set.Name] = counts{}
			}
			t[set.Name][it.Statuses[k]]++
		}
	}
	return out
}

func printPlan(w io.Writer, p *generate.Plan, labels map[string]string) {
	sum := planSummary(p, labels)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "task\tsetting")
	for _, s := range generate.AllStatuses() {
		fmt.Fprintf(tw, "\t%s", s)
	}
	fmt.Fprintln(tw)
	taskNames := make([]string, 0, len(sum.Tasks))
	for t := range sum.Tasks {
		taskNames = append(taskNames, t)
	}
	sort.Strings(taskNames)
	for _, t := range taskNames {
		sets := make([]string, 0, len(sum.Tasks[t]))
		for s := range sum.Tasks[t] {
			sets = append(sets, s)
		}
		sort.Strings(sets)
		for _, s := range sets {
			fmt.Fprintf(tw, "%s\t%s", t, s)
			for _, st := range generate.AllStatuses() {
				fmt.Fprintf(tw, "\t%d", sum.Tasks[t][s][st])
			}
			fmt.Fprintln(tw)
		}
	}
	tw.Flush()
	eta := "unknown (" + p.Estimate.Basis() + ")"
	if sum.EstimatedSeconds != nil {
		eta = fmt.Sprintf("about %s (%s)", secondsText(*sum.EstimatedSeconds), p.Estimate.Basis())
	}
	var extra []string
	for i, fs := range sum.Failed {
		if i == 20 {
			extra = append(extra, fmt.Sprintf("… and %s (--json lists all)", plural(len(sum.Failed)-i, "more failed sample", "more failed samples")))
			break
		}
		extra = append(extra, fmt.Sprintf("failed: %s/%s: %s", fs.Task, fs.ID, fs.Reason))
	}
	if p.Stale > 0 {
		extra = append(extra, fmt.Sprintf("%s stale scores (data, metrics or task changed): they are recomputed, no model work",
			plural(p.Stale, "(sample, setting) pair has", "(sample, setting) pairs have")))
	}
	if p.Overflow > 0 {
		extra = append(extra, fmt.Sprintf("%s the context and will be recorded as context errors", plural(p.Overflow, "prompt exceeds", "prompts exceed")))
	}
	for _, o := range p.Superseded {
		extra = append(extra, fmt.Sprintf("not reused: %d of the missing samples are stored for this model under another arithmetic, %s (%s): the fingerprint differs, so they are generated again",
			o.Samples, o.Fingerprint, o.Why))
	}
	fmt.Fprintf(w, "work: %s, %s to generate, %s to prefill; time: %s\n%s",
		plural(p.Requests, "request", "requests"), tokensText(p), prefillText(p), eta, strings.Join(append(extra, ""), "\n"))
}

// tokensText says how many tokens the plan's work is expected to generate
// and at most (each request to its budget).
func tokensText(p *generate.Plan) string {
	most := plural(p.TokensToGenerate, "token", "tokens")
	if p.Estimate.Lengths == 0 || p.Estimate.Tokens >= p.TokensToGenerate {
		return "at most " + most
	}
	return fmt.Sprintf("about %s (at most %d)", plural(p.Estimate.Tokens, "token", "tokens"), p.TokensToGenerate)
}

// secondsText is a duration in seconds as a person reads it: 0.4s, 42s,
// 3m20s, 2h05m.
func secondsText(s float64) string {
	switch {
	case s < 10:
		return fmt.Sprintf("%.1fs", s)
	case s < 600:
		return fmt.Sprintf("%.0fs", s)
	case s < 36000:
		return fmt.Sprintf("%dm%02ds", int(s)/60, int(s)%60)
	}
	return fmt.Sprintf("%dh%02dm", int(s)/3600, int(s)%3600/60)
}

// prefillText says how many prompt tokens the plan's work prefills; the
// length of a prompt a server tokenises is unknown until the server says.
func prefillText(p *generate.Plan) string {
	switch {
	case p.Untokenised == 0:
		return plural(p.PromptTokens, "prompt token", "prompt tokens")
	case p.PromptTokens == 0:
		return fmt.Sprintf("an unknown number of prompt tokens (the server tokenises the %s)", plural(p.Untokenised, "prompt", "prompts"))
	}
	return fmt.Sprintf("%s and the %s the server tokenises", plural(p.PromptTokens, "prompt token", "prompt tokens"), plural(p.Untokenised, "prompt", "prompts"))
}

// supersededNote is " under its fingerprint FP, only under another
// arithmetic: …" when the store holds the plan's missing samples under this
// model's other fingerprints (see generate.Superseded), else "".
func supersededNote(p *generate.Plan) string {
	var parts []string
	for _, o := range p.Superseded {
		parts = append(parts, fmt.Sprintf("%d samples under %s (%s)", o.Samples, o.Fingerprint, o.Why))
	}
	if len(parts) == 0 {
		return ""
	}
	return " under its fingerprint " + p.Fingerprint + ", only under another arithmetic: " + strings.Join(parts, "; ")
}

// productsDType is the dtype of a native model's matrix products (what
// --dtype resolved to), for the run's config; "" for other backends.
func productsDType(be backends.Backend) string {
	if m, ok := be.(*gomlx.Model); ok {
		return m.Arithmetic().Products
	}
	return ""
}

// plannedCommand is a command that opens the store and model, plans the
// tasks without model work, and hands the plan to do.
func plannedCommand(use, short string, readOnly bool, do func(ctx context.Context, f *runFlags, s *session, p *generate.Plan, stdout, stderr io.Writer) error) *cobra.Command {
	f := &runFlags{noDocs: true} // a plan writes no sample's data row
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			s, err := f.open(ctx, cmd.ErrOrStderr(), readOnly)
			if err != nil {
				return err
			}
			defer s.Close()
			p, err := generate.MakePlan(ctx, s.st, s.be, s.jobs)
			if err != nil {
				return err
			}
			return do(ctx, f, s, p, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f.register(cmd, "", nil, omitPlan)
	return cmd
}

func newPlanCmd() *cobra.Command {
	return plannedCommand("plan", "Show, before any model work, what a run would reuse, continue, retry and generate (reads the store, never writes it)", true,
		func(ctx context.Context, f *runFlags, s *session, p *generate.Plan, stdout, _ io.Writer) error {
			mem := memoryPlan(s.be, p)
			claims, workers, err := claimsOfPlan(ctx, s.st, p)
			if err != nil {
				return err
			}
			if f.json {
				return writeJSON(stdout, struct {
					planJSON
					Memory string `json:"memory,omitempty"`
					planClaims
				}{planSummary(p, s.labels()), mem, claims})
			}
			printPlan(stdout, p, s.labels())
			if mem != "" {
				fmt.Fprintf(stdout, "memory: %s\n", mem)
			}
			if claims.Claimed > 0 {
				fmt.Fprintf(stdout, "claimed: %d of the %d requests are being generated by live workers\n", claims.Claimed, p.Requests)
			}
			return printWorkers(stdout, workers)
		})
}

// finite reports whether x is neither NaN nor infinite.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// memoryPlan describes how the native backend would lay out the plan's work
// in memory (batch, cache length, prefill chunk), or why it does not fit;
// "" for other backends or no work.
func memoryPlan(be backends.Backend, p *generate.Plan) string {
	m, ok := be.(*gomlx.Model)
	if !ok {
		return ""
	}
	longest, budget := 0, 0
	for _, it := range p.Work() {
		n := len(it.PromptIDs)
		if it.Continue {
			n += it.Stored.NTokens
		}
		longest, budget = max(longest, n), max(budget, it.NewTokens)
	}
	if longest == 0 {
		return ""
	}
	mp, err := m.MemoryPlan(longest, budget)
	if err != nil {
		return err.Error()
	}
	return mp.String()
}

func newRescoreCmd() *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "rescore",
		Short: "Recompute scores from stored generations, with no model work",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return rescoreCommand(cmd.Context(), f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f.register(cmd, "", nil, omitStored)
	return cmd
}

// rescoreGCPercent is the collection target (GOGC) of a rescore.
const rescoreGCPercent = 70

// rescoreCommand rescores the stored generations of the jobs a task at a
// time (generate.Rescore streams), summarising each task through the one
// source of figures (report.FromResults) before the next is read.
func rescoreCommand(ctx context.Context, f *runFlags, stdout, stderr io.Writer) error {
	// Only lm-eval files (--output-path) show the samples' data rows. Tasks
	// are rescored one at a time, but loaded at once: a lower collection
	// target keeps the process near what it holds, as the HTML report's
	// does (issue 23: 400 MB at 200,000 generations; GOGC 70 costs a few
	// per cent of CPU, 50 about a tenth; a memory limit, cheaper here,
	// would collect all the time on a store whose tasks alone pass it).
	f.noDocs = f.outputPath == ""
	defer debug.SetGCPercent(debug.SetGCPercent(rescoreGCPercent))
	s, err := f.open(ctx, stderr, false)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.storeSamples(ctx, stderr); err != nil {
		return err
	}
	started := time.Now()
	ds, failures := &report.Dataset{}, []string(nil)
	var runs []report.RunResults
	rep, err := generate.Rescore(ctx, s.st, s.be, s.jobs, func(j *generate.Job, p *generate.Plan, res generate.Results) error {
		runs = []report.RunResults{{Model: f.model, Chat: s.chat(), DType: productsDType(s.be), Plan: p, Results: res}}
		d, err := s.datasetOf(ctx, []*generate.Job{j}, runs, f.outputPath != "", false)
		if err != nil {
			return err
		}
		ds.Tasks = append(ds.Tasks, d.Tasks...)
		failures = append(failures, res.Failures()...)
		return nil
	})
	if err != nil {
		return err
	}
	warnUnscorable(stderr, rep.Unscorable)
	noteRecomputed(stderr, rep.Recomputed, true)
	if err := writeOutputPath(ds, f.outputPath, s.lmevalOptions(started, runs, []backends.Backend{s.be}), stderr); err != nil {
		return err
	}
	if f.json {
		means, counts := figures(ds)
		if err := writeJSON(stdout, map[string]any{"rescored": rep.Scored, "recomputed": rep.Recomputed, "scores": means,
			"counts": counts, "failed_samples": generate.FailedAsZero}); err != nil {
			return err
		}
		return failedExit(failures)
	}
	fmt.Fprintf(stderr, "rescored %d (sample, setting) pairs from stored generations\n", rep.Scored)
	printRows(stdout, ds)
	return failedExit(failures)
}
