package lmeval

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"tally/internal/fsguard"
	"tally/scoring"
)

// This file makes hooks of the Python bridge (pybridge.go): a !function
// tally has no Go port of, run by the user's interpreter where the user
// opted in (UsePython), called as lm-eval calls it (lm_eval/api/task.py
// ConfigurableTask at the commit tally follows: doc_to_text(doc),
// doc_to_target(doc), process_docs(dataset), process_results(doc,
// [filtered response]); a filter class instantiated with its step's
// options and applied to the responses and documents, or found by name
// in lm-eval's filter registry; a metric function called with
// references=[gold], predictions=[result] and the entry's options; an
// aggregation function on the metric's per-sample values, where lm-eval's
// files are written).

// optInHint is what a refusal of Python code says about the bridge.
const optInHint = "; --python python3 (or " + EnvPython + "=python3) runs it in Python, which runs the task folder's code"

// bridgedHook is the bridge's hook for a !function with no Go port, or the
// refusal (why wraps errNoPort) when the user has not opted in or the
// bridge cannot run that kind of function.
func bridgedHook(f Function, path, name string, kind hookKind, why error) (*pyHook, error) {
	b, static := activeBridge()
	if b == nil && !static {
		return nil, fmt.Errorf("%w%s", why, optInHint)
	}
	if kind == hookDataset {
		return nil, fmt.Errorf("%w; the Python bridge does not run a custom_dataset function (tally reads the documents from --data)", why)
	}
	digest, err := modulesDigest(path)
	if err != nil {
		return nil, fmt.Errorf("!function %s: %w", f.Name, err)
	}
	h := &pyHook{fn: f, path: path, digest: digest, bridged: true, name: name, aggregation: kind == hookAggregation}
	if static {
		// The survey: counted as the bridge would load it, no Python run.
		h.doc = func(*Map) (any, error) { return nil, fmt.Errorf("!function %s: not run in a survey", f.Name) }
		h.docs = func([]*Map) ([]*Map, error) { return nil, fmt.Errorf("!function %s: not run in a survey", f.Name) }
		h.results = func(*Map, []any) (*Map, error) { return nil, fmt.Errorf("!function %s: not run in a survey", f.Name) }
		h.samples = func() (any, error) { return []any{}, nil }
		return h, nil
	}
	d, err := b.describe(path, name)
	if err != nil {
		return nil, fmt.Errorf("!function %s: %w", f.Name, err)
	}
	h.bridge, h.handle, h.repr, h.class = b, d.Handle, d.Repr, d.Kind == "class"
	if d.Name != "" {
		h.name = d.Name
	}
	if d.Source != nil {
		h.source = *d.Source
	}
	what := func(op string) string { return fmt.Sprintf("%s %s (Python)", op, f.Name) }
	h.doc = func(doc *Map) (any, error) {
		v, err := b.call(what("doc"), map[string]any{"op": "doc", "handle": h.handle, "doc": doc})
		return v, workerError(err)
	}
	h.docs = func(docs []*Map) ([]*Map, error) {
		v, err := b.call(what("process_docs"), map[string]any{"op": "docs", "handle": h.handle, "docs": docs})
		if err != nil {
			return nil, workerError(err)
		}
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("process_docs %s gave %s, not documents", f.Name, pyStr(v))
		}
		out := make([]*Map, len(list))
		for i, e := range list {
			if out[i], ok = e.(*Map); !ok {
				return nil, fmt.Errorf("process_docs %s: document %d is %s, not a mapping", f.Name, i, pyStr(e))
			}
		}
		return out, nil
	}
	h.samples = func() (any, error) {
		v, err := b.call(what("fewshot_config.samples"), map[string]any{"op": "call0", "handle": h.handle})
		return v, workerError(err)
	}
	h.aggregate = func(items []any) (any, error) {
		v, err := b.call(what("aggregation"), map[string]any{"op": "agg", "handle": h.handle, "items": items})
		return v, workerError(err)
	}
	h.results = func(doc *Map, results []any) (*Map, error) {
		v, err := b.call(what("process_results"), map[string]any{"op": "results", "handle": h.handle, "doc": doc, "results": results})
		if err != nil {
			return nil, workerError(err)
		}
		m, ok := v.(*Map)
		if !ok {
			return nil, fmt.Errorf("process_results %s gave %s, not a dict", f.Name, pyStr(v))
		}
		return m, nil
	}
	return h, nil
}

// describe imports a module in the worker and describes its callable.
func (b *pyBridge) describe(path, name string) (*pyCallable, error) {
	b.mu.Lock()
	d := b.described[[2]string{path, name}]
	b.mu.Unlock()
	if d != nil {
		return d, nil
	}
	v, err := b.call("import "+filepath.Base(path)+" for "+name, map[string]any{"op": "describe", "module": path, "name": name})
	if err != nil {
		return nil, err
	}
	m, ok := v.(*Map)
	if !ok {
		return nil, fmt.Errorf("%w: describe %s: an answer that is not an object", ErrPythonWorker, name)
	}
	d = &pyCallable{}
	if n, ok := m.Vals["handle"].(int64); ok {
		d.Handle = int(n)
	}
	d.Repr, _ = m.Vals["repr"].(string)
	if s, ok := m.Vals["source"].(string); ok {
		d.Source = &s
	}
	d.Kind, _ = m.Vals["kind"].(string)
	d.Name, _ = m.Vals["name"].(string)
	b.mu.Lock()
	b.described[[2]string{path, name}] = d
	b.mu.Unlock()
	return d, nil
}

// modulesDigest is the identity of the Python a bridged hook runs: the
// SHA-256 of each .py file in the module's folder (the module and the
// siblings it may import), by name. A changed file there is another
// digest, so another variant and stale scores.
func modulesDigest(path string) (string, error) {
	dir := filepath.Dir(path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("digest the Python of %s: %w", dir, err)
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".py") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		data, err := fsguard.ReadFile("", filepath.Join(dir, n), true, maxModuleFile)
		if err != nil {
			return "", fmt.Errorf("digest the Python of %s: %w", dir, err)
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(h, "%s %x\n", n, sum)
	}
	return "py:" + hex.EncodeToString(h.Sum(nil)), nil
}

// PythonModules are the folders (by name) whose Python the task runs through the
// bridge, each with modulesDigest's identity (empty when it runs none):
// they enter the task's variant, so that a changed utils.py is another
// variant.
func (t *Task) PythonModules() map[string]string {
	out := map[string]string{}
	for _, h := range t.c.hooks {
		if h.bridged {
			out["python:"+filepath.Base(filepath.Dir(h.path))] = h.digest
		}
	}
	for _, p := range t.c.filters {
		for _, st := range p.steps {
			if st.py != nil && st.py.path != "" { // a registered filter is lm-eval's, like its packages
				out["python:"+filepath.Base(filepath.Dir(st.py.path))] = st.py.digest
			}
		}
	}
	for _, m := range t.c.metrics {
		if m.py != nil {
			out["python:"+filepath.Base(filepath.Dir(m.py.path))] = m.py.digest
		}
	}
	return out
}

// pyMetric reads a metric_list entry whose metric is a !function (no
// process_results): the bridge calls it on each filtered response as
// lm-eval's ConfigurableTask.process_results calls a metric function for
// generate_until, with the entry's keys other than metric, aggregation,
// higher_is_better and hf_evaluate as keyword arguments. Its name is the
// function's __name__; its aggregation must be mean (an aggregation
// function runs only as a Go port), and higher_is_better given (lm-eval
// looks a missing one up in its registry, under the function's name).
func (c *config) pyMetric(m *Map, field string, f Function) (*metricConfig, error) {
	h, err := c.hook(field+".metric", f, hookMetric)
	if err != nil {
		return nil, err
	}
	mc := &metricConfig{name: h.name, aggregation: "mean", py: h, pyKwargs: NewMap(),
		options: map[string]any{"function": f.Name, "module": h.digest}}
	for _, k := range []string{"aggregation", "higher_is_better"} {
		if _, ok := m.Get(k); !ok {
			return nil, c.refuse(field+"."+k, "bad value", "missing for metric function %s (lm-eval looks it up in its registry of metrics)", f.Name)
		}
	}
	for _, k := range m.Keys {
		val := m.Vals[k]
		switch k {
		case "metric", "hf_evaluate":
		case "aggregation":
			if agg, isFn := val.(Function); isFn {
				if err := c.pyAggregation(mc, field, agg); err != nil {
					return nil, err
				}
			} else if val != "mean" {
				return nil, c.refuse(field+".aggregation", "aggregation "+pyStr(val), "%s is not supported for a metric function (mean or a function)", pyStr(val))
			}
		case "higher_is_better":
			b, isBool := val.(bool)
			if !isBool {
				return nil, c.refuse(field+".higher_is_better", "bad value", "%s is not a bool", pyStr(val))
			}
			mc.higherIsBetter = b
		default:
			mc.pyKwargs.Set(k, val)
		}
	}
	mc.options["kwargs"] = mc.pyKwargs
	return mc, nil
}

// pyScore is a metric function's values for a filtered response, by the
// names it gives (its __name__, or the keys of the dict it returns).
func (m *metricConfig) pyScore(res, gold any, multi bool) (*Map, error) {
	h := m.py
	if h.bridge == nil {
		return nil, fmt.Errorf("metric %s: not run in a survey", h.fn.Name)
	}
	v, err := h.bridge.call(fmt.Sprintf("metric %s (Python)", h.fn.Name), map[string]any{"op": "metric", "handle": h.handle,
		"kwargs": m.pyKwargs, "gold": gold, "result": res, "multiple": multi})
	if err != nil {
		return nil, workerError(err)
	}
	out, ok := v.(*Map)
	if !ok {
		return nil, fmt.Errorf("metric %s gave %s", h.fn.Name, pyStr(v))
	}
	return out, nil
}

// pyFilterStep reads a filter step that Python runs: "function: !function
// MOD.Class" (lm-eval instantiates the class with the step's other keys
// and calls its apply(resps, docs)), or "function: custom" with
// "filter_fn: !function MOD.fn" (lm-eval's CustomFilter calls
// fn(resps, docs)).
func (c *config) pyFilterStep(m *Map, field string, f Function, custom bool) (filterStep, error) {
	key := "function"
	if custom {
		key = "filter_fn"
	}
	h, err := c.hook(field+"."+key, f, hookFilter)
	if err != nil {
		return filterStep{}, err
	}
	st := filterStep{function: "!function " + f.Name, py: h, pyKwargs: NewMap(), pyCustom: custom}
	for _, k := range m.Keys {
		if k != "function" && k != "filter_fn" {
			st.pyKwargs.Set(k, m.Vals[k])
		}
	}
	return st, nil
}

// pyApply runs a Python filter step on one document's responses: lm-eval
// applies a filter to every document's list at once; tally gives it one
// document's, which is the same for a filter that treats documents one
// by one (every filter of lm-eval's task folders at the commit followed).
func (st filterStep) pyApply(list []any, doc *Map) (any, error) {
	h := st.py
	if h.bridge == nil {
		return nil, fmt.Errorf("filter %s: not run in a survey", h.fn.Name)
	}
	var docs []any
	if doc != nil {
		docs = []any{doc}
	} else {
		docs = []any{nil}
	}
	v, err := h.bridge.call(fmt.Sprintf("filter %s (Python)", h.fn.Name), map[string]any{"op": "filter", "handle": h.handle,
		"kwargs": st.pyKwargs, "custom": st.pyCustom, "resps": []any{list}, "docs": docs})
	if err != nil {
		return nil, workerError(err)
	}
	out, ok := v.([]any)
	if !ok || len(out) != 1 {
		return nil, fmt.Errorf("filter %s gave %s, not one result for the one document", h.fn.Name, pyStr(v))
	}
	return out[0], nil
}

// PythonMetricValues are the values a task's metric functions (run by the
// Python bridge) give for a response to a document under a filter
// pipeline, ints and floats as the functions give them, as lm-eval's
// samples file writes each line's metric values; nil when the task has
// none. refs is the sample's references (doc_to_target's value) and
// multi lm-eval's multiple_target.
func (t *Task) PythonMetricValues(filter, resp string, docJSON, refs []byte, multi bool) (*Map, error) {
	var pys []*metricConfig
	for _, m := range t.c.metrics {
		if m.py != nil || m.passthrough {
			pys = append(pys, m)
		}
	}
	if len(pys) == 0 {
		return nil, nil
	}
	gold, err := decodeJSON(refs)
	if err != nil {
		return nil, fmt.Errorf("references: %w", err)
	}
	res, err := t.FilteredValue(filter, resp, docJSON)
	if err != nil {
		return nil, err
	}
	out := NewMap()
	for _, m := range pys {
		if m.passthrough {
			out.Set(m.name, passthroughItem(res, gold, multi))
			continue
		}
		vals, err := m.pyScore(res, gold, multi)
		if err != nil {
			return nil, err
		}
		for _, k := range vals.Keys {
			out.Set(k, vals.Vals[k])
		}
	}
	return out, nil
}

// registeredFilter reads a filter step naming a filter tally does not
// have, which lm-eval finds in its registry (lm_eval.api.registry
// get_filter: its own filters, and those a task module registers with
// @register_filter when it is imported, as the task's other functions
// import it): with the bridge on, the worker looks it up and lm-eval's
// build_filter_ensemble's call is made, Filter(**the step's other
// keys).apply(resps, docs). ok is false when the bridge is off.
func (c *config) registeredFilter(m *Map, field, name string) (filterStep, bool, error) {
	b, static := activeBridge()
	if b == nil && !static {
		return filterStep{}, false, nil
	}
	st := filterStep{function: name, pyKwargs: NewMap()}
	for _, k := range m.Keys {
		if k != "function" {
			st.pyKwargs.Set(k, m.Vals[k])
		}
	}
	h := &pyHook{fn: Function{Name: name}, bridged: true, name: name, digest: "registered:" + name}
	st.py = h
	if static {
		return st, true, nil
	}
	v, err := b.call("filter "+name+" (Python: lm-eval's registry)", map[string]any{"op": "registered_filter", "name": name})
	if err != nil {
		return filterStep{}, false, c.refuse(field, "filter "+name, "%v", err)
	}
	d, _ := v.(*Map)
	if n, ok := d.Get("handle"); ok {
		h.handle = int(n.(int64))
	}
	h.bridge, h.class = b, true
	return st, true, nil
}

// pyAggregation sets a metric's aggregation to a Python function the
// bridge runs (refused without it): the metric's per-sample values, which
// may be any of Python's values (lm-eval's [gold, result] pairs, lists),
// are made again from the stored predictions when lm-eval's files are
// written, and aggregated there; tally's store keeps a marker for each sample (DeferredPrefix), so its own tables show the
// metric as n/a.
func (c *config) pyAggregation(mc *metricConfig, field string, agg Function) error {
	h, err := c.hook(field+".aggregation", agg, hookAggregation)
	if err != nil {
		return err
	}
	if !h.bridged {
		return c.refuse(field+".aggregation", "!function", "!function %s: tally's port of it aggregates process_results values only", agg.Name)
	}
	mc.aggregation, mc.pyAgg = h.fn.Name, h
	mc.options["aggregation"] = map[string]any{"function": h.fn.Name, "module": h.digest}
	return nil
}

// DeferredPrefix names the corpus metric under which tally stores a
// sample of a metric a Python function aggregates (scoring.DeferredPrefix:
// "py:f1#0,FILTER", 1 a sample), whose score is undefined: tally's tables
// show the metric as n/a, and lm-eval's files get the function's figure
// (Task.Aggregate).
const DeferredPrefix = scoring.DeferredPrefix

// passthroughMetrics are lm-eval's registered metrics whose function
// returns its items (lm_eval/api/metrics.py: acc, f1, mcc, …): called on a
// generate_until response with references= and predictions= it raises
// TypeError, and process_results falls back to fn([gold, result]), so a
// sample's value is the pair, which the metric's aggregation function
// takes.
var passthroughMetrics = map[string]bool{"acc": true, "acc_norm": true, "acc_mutual_info": true, "acc_bytes": true, "f1": true,
	"mcc": true, "brier_score": true, "likelihood": true}

// Aggregate runs a metric's Python aggregation function (through the
// bridge) on the metric's per-sample values, in document order, as
// lm-eval aggregates them; ok is false when the metric has none.
func (t *Task) Aggregate(metric string, items []any) (v any, ok bool, err error) {
	m := t.metric(metric)
	if m == nil || m.pyAgg == nil {
		return nil, false, nil
	}
	if m.pyAgg.aggregate == nil {
		return nil, true, fmt.Errorf("aggregation %s: not run in a survey", m.pyAgg.fn.Name)
	}
	if items == nil {
		items = []any{}
	}
	v, err = m.pyAgg.aggregate(items)
	return v, true, err
}

// PythonAggregated reports whether a metric is aggregated by a Python
// function (Aggregate).
func (t *Task) PythonAggregated(metric string) bool {
	m := t.metric(metric)
	return m != nil && m.pyAgg != nil
}

// passthroughItem is a passthrough metric's per-sample value, as
// ConfigurableTask.process_results makes it for generate_until: the pair
// [gold, result], gold cast to str when the result is a str and gold is
// not; with list targets (multiple_target) 1.0 when there is any target
// (each pair is truthy), else 0.0.
func passthroughItem(res, gold any, multi bool) any {
	if multi {
		golds, ok := gold.([]any)
		if !ok || len(golds) > 0 {
			return 1.0
		}
		return 0.0
	}
	if _, isStr := res.(string); isStr {
		if _, goldStr := gold.(string); !goldStr {
			gold = pyStr(gold)
		}
	}
	return []any{gold, res}
}
