// Package lmevalref gives tests lm-evaluation-harness's and sacrebleu's own
// source, from the reference set (../shared/lm-eval/lm-eval-4e7e0d47.tar.xz
// and ../shared/sacrebleu/sacrebleu-2.6.0.tar.xz, found through
// tally/internal/sharedtest), extracted once per test process into a
// temporary folder that Cleanup removes; the repository keeps no copy of
// either. It also runs the reference harness (testdata/lmevalref/harness.py,
// lm-eval's own command line on local data with a scripted model) and
// compares JSON files as Python reads them (Diff).
package lmevalref

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"tally/internal/pyref"
	"tally/internal/sharedtest"
)

// LMEvalCommit is the lm-evaluation-harness commit the reference set holds.
const LMEvalCommit = "4e7e0d47f33bc71070c1d38394bafbb52b117163"

// Modules are the Python modules lm-eval 4e7e0d47 and sacrebleu 2.6.0
// import on the reference harness's path (what testdata/lmevalref/stubs
// does not stand in for): Debian's python3-yaml, -jinja2, -numpy, -tqdm,
// -requests, -packaging, -dill, -sqlitedict, -more-itertools (lm-eval),
// -portalocker, -tabulate, -colorama, -lxml, -regex (sacrebleu), -jieba
// and -fuzzywuzzy (LongBench's metrics.py imports both).
var Modules = []string{"yaml", "jinja2", "numpy", "tqdm", "requests", "packaging", "dill", "sqlitedict", "more_itertools",
	"portalocker", "tabulate", "colorama", "lxml", "regex", "jieba", "fuzzywuzzy"}

var (
	mu        sync.Mutex
	extracted = map[string]string{}
	tmpRoot   string
)

// Cleanup removes what this process extracted; call it from TestMain.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if tmpRoot != "" {
		os.RemoveAll(tmpRoot)
		tmpRoot = ""
		extracted = map[string]string{}
	}
}

// extract unpacks a .tar.xz of the reference set (elem names it under the
// reference set) once per process and returns the folder it unpacked to.
// The test is skipped with one line when tar cannot read xz here.
func extract(tb testing.TB, top string, elem ...string) string {
	tb.Helper()
	archive := sharedtest.Path(tb, elem...)
	mu.Lock()
	defer mu.Unlock()
	if dir, ok := extracted[archive]; ok {
		return filepath.Join(dir, top)
	}
	if tmpRoot == "" {
		d, err := os.MkdirTemp("", "tally-lmevalref-")
		if err != nil {
			tb.Fatal(err)
		}
		tmpRoot = d
	}
	dir := filepath.Join(tmpRoot, fmt.Sprint(len(extracted)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	if _, err := exec.LookPath("xz"); err != nil {
		tb.Skipf("xz not found: cannot unpack %s for the reference check (apt-get install -y xz-utils)", archive)
	}
	if out, err := exec.Command("tar", "-xJf", archive, "-C", dir).CombinedOutput(); err != nil {
		tb.Fatalf("unpacking %s: %v\n%s", archive, err, out)
	}
	extracted[archive] = dir
	return filepath.Join(dir, top)
}

// LMEval returns the folder holding lm-eval's lm_eval package at
// LMEvalCommit (its tasks under lm_eval/tasks).
func LMEval(tb testing.TB) string {
	tb.Helper()
	return extract(tb, "lm-eval-4e7e0d47", "lm-eval", "lm-eval-4e7e0d47.tar.xz")
}

// Sacrebleu returns the folder holding sacrebleu 2.6.0's package, with the
// sacrebleu/version.py its release build generates (the source tree lacks
// it), so that `import sacrebleu` works from it.
func Sacrebleu(tb testing.TB) string {
	tb.Helper()
	dir := extract(tb, "sacrebleu-2.6.0", "sacrebleu", "sacrebleu-2.6.0.tar.xz")
	v := filepath.Join(dir, "sacrebleu", "version.py")
	if _, err := os.Stat(v); err != nil {
		if err := os.WriteFile(v, []byte("__version__ = \"2.6.0\"\n"), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

// Case is one run of the reference harness: lm-eval's command line on a
// task file, with the data and the scripted model's outputs given.
type Case struct {
	Name string `json:"name"`
	// Task is the task (or group) file's path.
	Task string `json:"task"`
	// Data is the folder of DATA/[DATASET_NAME/]SPLIT.jsonl files.
	Data string `json:"data"`
	// Outputs are the scripted model's raw outputs: by task name then
	// doc_id, or under "*" a list that document i takes item i modulo its
	// length (for every task without its own).
	Outputs map[string]any `json:"outputs"`
	// Out is lm-eval's --output_path.
	Out string `json:"out"`
	// Args are more of lm-eval's command-line arguments (--num_fewshot 2).
	Args []string `json:"args,omitempty"`
	// Metadata is lm-eval's --metadata, when set.
	Metadata map[string]any `json:"metadata,omitempty"`
	// LocalDataset replaces the task's custom_dataset by the case's files
	// too (RULER's documents, which lm-eval synthesises).
	LocalDataset bool `json:"local_dataset,omitempty"`
}

// Result is what the harness says of a case.
type Result struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Error  string `json:"error"`
	Stdout string `json:"stdout"`
	// Requests are the generate_until requests the model saw: task,
	// doc_id, prompt, generation kwargs.
	Requests [][]any `json:"requests"`
}

// Harness runs the reference harness script on every case in one Python
// process (lm-eval's task index is built once), skipping the test with one
// line when no python3 here has Modules.
func Harness(tb testing.TB, script string, cases []Case) []Result {
	tb.Helper()
	in := map[string]any{"lm_eval": LMEval(tb), "sacrebleu": Sacrebleu(tb), "cases": cases}
	var out struct {
		Cases []Result `json:"cases"`
	}
	pyref.Run(tb, script, in, &out, Modules...)
	if len(out.Cases) != len(cases) {
		tb.Fatalf("the reference harness answered %d cases of %d", len(out.Cases), len(cases))
	}
	return out.Cases
}
