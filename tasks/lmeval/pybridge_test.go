package lmeval

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tally/internal/lmevalref"
	"tally/internal/pyref"
	"tally/scoring"
)

// bridgeUtils is a task folder's module for the bridge's tests: one
// function of each kind lm-eval calls, and some that misbehave.
const bridgeUtils = `import os, sys, time

def process_docs(dataset):
    return dataset.filter(lambda d: d["keep"]).map(lambda d: {"q2": d["q"].upper()})

def doc_to_text(doc):
    print("noise on stdout must not reach the protocol")
    return "Q: " + doc["q2"] + "\nA:"

def doc_to_target(doc):
    return doc["a"]

def process_results(doc, results):
    return {"em": int(results[0].strip() == doc["a"]), "len": float(len(results[0])), "nan": float("nan")}

class FirstWord:
    def __init__(self, lower=False):
        self.lower = lower
    def apply(self, resps, docs):
        out = []
        for rs, d in zip(resps, docs):
            w = [r.split()[0] if r.split() else "" for r in rs]
            out.append([x.lower() if self.lower else x for x in w])
        return out

def custom_fn(resps, docs):
    return [[r + "!" for r in rs] for rs in resps]

def starts(references, predictions, prefix=""):
    return float(predictions[0].startswith(prefix + references[0]))

def shots():
    return [{"q": "zero", "a": "0", "keep": True, "q2": "ZERO"}]

def agg_max_len(items):
    return max(len(i[1]) for i in items)

def pair_metric(items):
    gold, pred = items
    return 1.0 if gold == pred else 0.0

def dies(doc, results):
    sys.stderr.write("about to die\n")
    os._exit(3)

def hangs(doc, results):
    time.sleep(60)

def raises(doc, results):
    return {"x": doc["missing"]}

def bad_value(doc, results):
    return {"x": object()}
`

const bridgeData = `{"q": "one", "a": "1", "keep": true}
{"q": "two", "a": "2", "keep": false}
{"q": "three", "a": "3", "keep": true}
`

// bridgeTask writes a task folder (utils.py, test.jsonl and the YAML of
// body after the common fields) and returns the YAML's path.
func bridgeTask(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	writeTask(t, dir, "utils.py", bridgeUtils)
	writeTask(t, dir, "test.jsonl", bridgeData)
	return writeTask(t, dir, "task.yaml", "task: bridged\ntest_split: test\n"+body)
}

// withPython turns the bridge on for one test, with python3.
func withPython(t *testing.T) *pyBridge {
	t.Helper()
	py := pyref.Python(t)
	_, stop := UsePython(context.Background(), py)
	t.Cleanup(stop)
	b, _ := activeBridge()
	return b
}

const pyHooksYAML = `process_docs: !function utils.process_docs
doc_to_text: !function utils.doc_to_text
doc_to_target: !function utils.doc_to_target
`

// TestPythonBridgeHooks loads tasks whose functions only the bridge runs
// and checks prompts, targets and scores as lm-eval's calls give them.
func TestPythonBridgeHooks(t *testing.T) {
	withPython(t)
	cases := []struct {
		name, body string
		pred       string
		want       map[string]float64
	}{
		{"process_results", pyHooksYAML + "process_results: !function utils.process_results\nmetric_list:\n  - metric: em\n    aggregation: mean\n    higher_is_better: true\n  - metric: len\n    aggregation: mean\n    higher_is_better: true\n",
			" 1", map[string]float64{"em,none": 1, "len,none": 2, "nan,none": math.NaN()}},
		{"filter class", pyHooksYAML + "filter_list:\n  - name: fw\n    filter:\n      - function: !function utils.FirstWord\n        lower: true\n      - function: take_first\n",
			"1 and more", map[string]float64{"exact_match,fw": 1}},
		{"custom filter", pyHooksYAML + "filter_list:\n  - name: c\n    filter:\n      - function: custom\n        filter_fn: !function utils.custom_fn\n      - function: take_first\n",
			"1", map[string]float64{"exact_match,c": 0}},
		{"metric function", pyHooksYAML + "metric_list:\n  - metric: !function utils.starts\n    aggregation: mean\n    higher_is_better: true\n    prefix: \"x\"\n",
			"x1", map[string]float64{"starts,none": 1}},
		{"metric function, pair", pyHooksYAML + "metric_list:\n  - metric: !function utils.pair_metric\n    aggregation: mean\n    higher_is_better: true\n",
			"1", map[string]float64{"pair_metric,none": 1}},
		{"aggregation function", pyHooksYAML + "metric_list:\n  - metric: f1\n    aggregation: !function utils.agg_max_len\n    higher_is_better: true\n",
			"1", map[string]float64{"py:f1#0,none": 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := bridgeTask(t, c.body)
			task, err := Load(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			l, err := task.Load(filepath.Join(filepath.Dir(path), "test.jsonl"), false)
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Samples) != 2 {
				t.Fatalf("%d samples, want 2 (process_docs keeps two)", len(l.Samples))
			}
			if p := l.Samples[1].Prompt; p != "Q: THREE\nA:" {
				t.Errorf("prompt %q", p)
			}
			got, err := task.Scorer()(c.pred, l.Samples[0])
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Errorf("scores %v, want %v", got, c.want)
			}
			for k, w := range c.want {
				if g, ok := got[k]; !ok || !(g == w || math.IsNaN(g) && math.IsNaN(w)) {
					t.Errorf("%s = %v, want %v (all: %v)", k, g, w, got)
				}
			}
			if v, ok, err := task.Aggregate("f1", []any{[]any{"1", "abc"}, []any{"3", "de"}}); ok && (err != nil || v != int64(3)) {
				t.Errorf("Aggregate: %v, %v; want 3", v, err)
			}
			if len(task.PythonModules()) != 1 {
				t.Errorf("PythonModules %v: want the task's folder", task.PythonModules())
			}
		})
	}
}

// TestPythonBridgeRefusal: without the opt-in, a function tally has no
// port of is refused in one line that says how to opt in.
func TestPythonBridgeRefusal(t *testing.T) {
	path := bridgeTask(t, pyHooksYAML)
	_, err := Load(path, nil)
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("err %v, want a refusal", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "--python python3") || strings.Contains(msg, "\n") {
		t.Errorf("refusal %q: want one line naming --python", msg)
	}
}

// TestPythonBridgeFailures: a Python error is the call's error, in one
// line naming the hook; a worker that dies or hangs is an error wrapping
// ErrPythonWorker and scoring.ErrUnavailable (a run stops on it), and
// every later call fails with it too.
func TestPythonBridgeFailures(t *testing.T) {
	cases := []struct {
		fn, want string
		fatal    bool
	}{
		{"raises", "process_results utils.raises (Python): Python raised KeyError: 'missing' (utils.py:", false},
		{"bad_value", "cannot be given to tally", false},
		{"dies", "the worker exited (exit status 3): about to die", true},
		{"hangs", "no answer within 500ms", true},
	}
	for _, c := range cases {
		t.Run(c.fn, func(t *testing.T) {
			b := withPython(t)
			b.timeout = 500 * time.Millisecond
			if c.fn != "hangs" {
				b.timeout = time.Minute
			}
			path := bridgeTask(t, pyHooksYAML+"process_results: !function utils."+c.fn+"\nmetric_list:\n  - metric: x\n    aggregation: mean\n    higher_is_better: true\n")
			task, err := Load(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			l, err := task.Load(filepath.Join(filepath.Dir(path), "test.jsonl"), false)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = task.Scorer()("1", l.Samples[0])
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v, want one line containing %q", err, c.want)
			}
			if time.Since(start) > 10*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
			if fatal := errors.Is(err, scoring.ErrUnavailable) && errors.Is(err, ErrPythonWorker); fatal != c.fatal {
				t.Errorf("err %v: fatal %v, want %v", err, fatal, c.fatal)
			}
			if c.fatal {
				if _, err2 := task.Scorer()("1", l.Samples[1]); !errors.Is(err2, ErrPythonWorker) {
					t.Errorf("a later call: %v, want the worker's error", err2)
				}
				if PythonError() == nil {
					t.Error("PythonError is nil after the worker died")
				}
			} else if _, err := task.Scorer()("1", l.Samples[1]); err != nil && !strings.Contains(err.Error(), c.want) {
				t.Errorf("the worker goes on after a Python error; the next call: %v", err)
			}
		})
	}
}

// TestPythonBridgeCancel: a cancelled context ends a call at once.
func TestPythonBridgeCancel(t *testing.T) {
	py := pyref.Python(t)
	ctx, cancel := context.WithCancel(context.Background())
	_, stop := UsePython(ctx, py)
	defer stop()
	path := bridgeTask(t, pyHooksYAML+"process_results: !function utils.hangs\nmetric_list:\n  - metric: x\n    aggregation: mean\n    higher_is_better: true\n")
	task, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := task.Load(filepath.Join(filepath.Dir(path), "test.jsonl"), false)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err = task.Scorer()("1", l.Samples[0])
	if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrPythonWorker) {
		t.Errorf("err %v, want the cancellation", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %s after the cancellation", time.Since(start))
	}
}

// TestPythonModulesDigest: a changed sibling module is another identity.
func TestPythonModulesDigest(t *testing.T) {
	dir := t.TempDir()
	writeTask(t, dir, "utils.py", "x = 1\n")
	d1, err := modulesDigest(filepath.Join(dir, "utils.py"))
	if err != nil {
		t.Fatal(err)
	}
	writeTask(t, dir, "helpers.py", "y = 2\n")
	d2, _ := modulesDigest(filepath.Join(dir, "utils.py"))
	writeTask(t, dir, "helpers.py", "y = 3\n")
	d3, _ := modulesDigest(filepath.Join(dir, "utils.py"))
	if d1 == d2 || d2 == d3 || d1 == d3 {
		t.Errorf("digests %s %s %s: want three", d1, d2, d3)
	}
}

// TestWireRoundTrip: values keep their order and kinds through the
// protocol's JSON, non-finite floats included.
func TestWireRoundTrip(t *testing.T) {
	m := NewMap()
	m.Set("z", int64(1))
	m.Set("a", 1.0)
	m.Set("n", math.Inf(-1))
	m.Set("l", []any{"x", nil, true, 2.5e-7})
	b, err := marshalWire(m)
	if err != nil {
		t.Fatal(err)
	}
	v, err := decodeWire(b)
	if err != nil {
		t.Fatal(err)
	}
	got := v.(*Map)
	if strings.Join(got.Keys, ",") != "z,a,n,l" || got.Vals["z"] != int64(1) || got.Vals["a"] != 1.0 || !math.IsInf(got.Vals["n"].(float64), -1) {
		t.Errorf("round trip: %s", b)
	}
}

// FuzzReadFrame: the frame reader and the answer decoder never panic and
// never read past a frame's length.
func FuzzReadFrame(f *testing.F) {
	frame := func(s string) []byte {
		b := make([]byte, 4+len(s))
		binary.BigEndian.PutUint32(b, uint32(len(s)))
		copy(b[4:], s)
		return b
	}
	f.Add(frame(`{"id":1,"ok":{"a":[1,2.0,{"\u0000float":"nan"}]}}`))
	f.Add(frame(`{"id":1,"error":"KeyError: 'x'"}`))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 9, '{'})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		body, err := readFrame(r)
		if err != nil {
			return
		}
		if len(body) != int(binary.BigEndian.Uint32(data)) {
			t.Fatalf("body of %d bytes for a length of %d", len(body), binary.BigEndian.Uint32(data))
		}
		decodeWire(body)
	})
}

func init() {
	// The tests' worker must not inherit an opt-in from the environment.
	os.Unsetenv(EnvPython)
}

// TestPythonBridgePortsWin: with the bridge on, a function tally has a Go
// port of runs as Go (MMLU-Pro's, llama3's, LongBench's): no worker
// starts and the task keys on no Python folder.
func TestPythonBridgePortsWin(t *testing.T) {
	tasks := filepath.Join(lmevalref.LMEval(t), "lm_eval", "tasks")
	b := withPython(t)
	for _, f := range []string{"mmlu_pro/mmlu_pro_law.yaml", "llama3/instruct/mmlu_pro/mmlu_pro_law.yaml", "longbench/qasper.yaml", "ruler/niah_single_1.yaml"} {
		task, err := Load(filepath.Join(tasks, f), nil)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if m := task.PythonModules(); len(m) != 0 {
			t.Errorf("%s: keys on Python folders %v, want none (Go ports)", f, m)
		}
	}
	if b.started {
		t.Error("the Python worker started for tasks whose functions have Go ports")
	}
}

// TestPythonBridgeRegisteredFilter: a filter named by a name tally does
// not have is looked up in lm-eval's registry by the worker (here a
// stand-in lm_eval.api.registry), where a task module imported for the
// task's other functions registered it, and called as lm-eval calls a
// filter: Class(**the step's other keys).apply(resps, docs). Without the
// bridge it is refused, saying how to opt in.
func TestPythonBridgeRegisteredFilter(t *testing.T) {
	root := t.TempDir()
	for name, body := range map[string]string{
		"lm_eval/__init__.py":         "",
		"lm_eval/api/__init__.py":     "",
		"lm_eval/filters/__init__.py": "",
		"lm_eval/api/registry.py": "_F = {}\n\ndef register_filter(name):\n    def deco(cls):\n        _F[name] = cls\n        return cls\n    return deco\n\n" +
			"def get_filter(name):\n    return _F[name]\n",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeTask(t, filepath.Dir(p), filepath.Base(p), body)
	}
	t.Setenv("PYTHONPATH", root)
	dir := t.TempDir()
	writeTask(t, dir, "utils.py", "from lm_eval.api.registry import register_filter\n\ndef doc_to_text(doc):\n    return doc[\"q\"]\n\n"+
		"@register_filter(\"shout\")\nclass Shout:\n    def __init__(self, suffix=\"!\"):\n        self.suffix = suffix\n\n"+
		"    def apply(self, resps, docs):\n        return [[r.upper() + self.suffix for r in rs] for rs in resps]\n")
	writeTask(t, dir, "test.jsonl", "{\"q\": \"a\", \"a\": \"YES?\"}\n")
	path := writeTask(t, dir, "task.yaml", "task: reg\ntest_split: test\ndoc_to_text: !function utils.doc_to_text\ndoc_to_target: a\n"+
		"filter_list:\n  - name: s\n    filter:\n      - function: shout\n        suffix: \"?\"\n      - function: take_first\n")
	if _, err := Load(path, nil); err == nil || !strings.Contains(err.Error(), "--python") {
		t.Fatalf("without the bridge: %v, want a refusal naming --python", err)
	}
	withPython(t)
	task, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := task.Load(filepath.Join(dir, "test.jsonl"), false)
	if err != nil {
		t.Fatal(err)
	}
	got, err := task.Scorer()("yes", l.Samples[0])
	if err != nil || got["exact_match,s"] != 1 {
		t.Errorf("scores %v, %v; want exact_match,s 1 (YES? against YES?)", got, err)
	}
	if f, err := task.FilteredResponse("s", "no", l.Samples[0].Doc); err != nil || f != "NO?" {
		t.Errorf("filtered %q, %v; want NO?", f, err)
	}
}

// TestPythonBridgeSamples: fewshot_config.samples as a function (its
// shots, called once with no arguments, as FewshotConfig's callable
// samples are) through the bridge; refused without it.
func TestPythonBridgeSamples(t *testing.T) {
	body := pyHooksYAML + "num_fewshot: 1\nfewshot_config:\n  sampler: first_n\n  samples: !function utils.shots\n"
	path := bridgeTask(t, body)
	if _, err := Load(path, nil); err == nil || !strings.Contains(err.Error(), "--python") {
		t.Fatalf("without the bridge: %v, want a refusal naming --python", err)
	}
	withPython(t)
	task, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := task.Load(filepath.Join(filepath.Dir(path), "test.jsonl"), false)
	if err != nil {
		t.Fatal(err)
	}
	if p := l.Samples[0].Prompt; p != "Q: ZERO\nA: 0\n\nQ: ONE\nA:" {
		t.Errorf("prompt %q: want the function's shot before the document", p)
	}
}
