package lmeval

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"tally/scoring"
	"tally/scoring/exactmatch"
	_ "tally/scoring/sacrebleu" // registers bleu, chrf and ter
)

// Refusal is a task file that tally cannot run as lm-eval would: the
// field and the reason, in one line. Kind groups refusals for
// `tally tasks --lm-eval` (e.g. "output_type: multiple_choice").
type Refusal struct {
	File   string
	Field  string
	Reason string
	Kind   string
}

// Error is the one-line message.
func (r *Refusal) Error() string {
	return fmt.Sprintf("lm-eval task %s: %s: %s", r.File, r.Field, r.Reason)
}

// taskFields are TaskConfig's fields (lm_eval/config/task.py) and the
// structural keys the task factory removes (tag, group, task_list).
var taskFields = map[string]bool{
	"task": true, "task_alias": true, "tag": true, "group": true, "task_list": true, "custom_dataset": true,
	"dataset_path": true, "dataset_name": true, "dataset_kwargs": true, "training_split": true, "validation_split": true,
	"test_split": true, "fewshot_split": true, "process_docs": true, "doc_to_text": true, "doc_to_target": true,
	"doc_to_image": true, "doc_to_audio": true, "unsafe_code": true, "doc_to_choice": true, "process_results": true,
	"use_prompt": true, "description": true, "target_delimiter": true, "fewshot_delimiter": true, "fewshot_config": true,
	"num_fewshot": true, "metric_list": true, "output_type": true, "generation_kwargs": true, "repeats": true,
	"filter_list": true, "should_decontaminate": true, "doc_to_decontamination_query": true, "gen_prefix": true,
	"metadata": true,
}

// textField is a doc_to_text, doc_to_target, description or gen_prefix
// value: a column name of the evaluation split, else a Jinja template; or
// (doc_to_target only) a literal int or list; or (doc_to_text,
// doc_to_target) a Python function tally has a port of (hooks.go).
type textField struct {
	spec    string
	tmpl    *template
	literal any // an int or a list given in the YAML
	hook    *pyHook
	set     bool
}

// value is the field for one document: the column's value when spec names
// a column (features), else the rendered template; a function's value.
func (f *textField) value(doc *Map, features map[string]bool) (any, error) {
	if f.hook != nil {
		return f.hook.doc(doc)
	}
	if f.literal != nil {
		return f.literal, nil
	}
	if features[f.spec] {
		v, _ := doc.Get(f.spec)
		return v, nil
	}
	return f.tmpl.render(doc)
}

// resolve is Task.resolve_field (description, a few-shot gen_prefix): the
// document's own field when spec names one, else the rendered template.
func (f *textField) resolve(doc *Map) (any, error) {
	if f.hook != nil {
		return f.hook.doc(doc)
	}
	if v, ok := doc.Get(f.spec); ok {
		return v, nil
	}
	return f.tmpl.render(doc)
}

// fewshotConfig is FewshotConfig: what formats and supplies the shots.
type fewshotConfig struct {
	sampler                   string // "default" or "first_n"
	split                     string
	processDocs               *pyHook // FewshotConfig.process_docs: the task's unless it sets its own
	samples                   []*Map
	hasSamples                bool
	docToText, docToTarget    *textField
	genPrefix                 *textField
	fewshotDelim, targetDelim string
}

// metricConfig is one metric_list entry: exact_match, or a corpus
// metric (bleu, chrf, ter: sacrebleu's, tally/scoring/sacrebleu).
type metricConfig struct {
	name           string
	aggregation    string
	higherIsBetter bool
	em             *exactmatch.Metric
	corpus         *scoring.CorpusMetric
	options        map[string]any
	// skip, for an aggregation that is the mean of the values but one
	// (a ported function's), is that value: a sample giving it is left
	// out of the metric's scores.
	skip *float64
	// flatMean: the metric's values are lists, aggregated by a ported
	// function that flattens and averages them (scored as statistics).
	flatMean bool
	// py is a metric function the Python bridge runs, with the entry's
	// other keys as its keyword arguments.
	py       *pyHook
	pyKwargs *Map
	// pyAgg is an aggregation function the bridge runs (pyAggregation);
	// passthrough marks a registered metric whose per-sample value is the
	// [gold, result] pair it aggregates.
	pyAgg       *pyHook
	passthrough bool
}

// config is a task file read and checked.
type config struct {
	file                                      string
	raw                                       *Map
	task, alias                               string
	tags                                      []string
	datasetPath, datasetName                  string
	trainingSplit, validationSplit, testSplit string
	fewshotSplit                              string
	docToText, docToTarget, description       *textField
	genPrefix                                 *textField
	targetDelim, fewshotDelim                 string
	numFewshot                                int
	fewshot                                   fewshotConfig
	until                                     []string
	maxGenToks                                int
	genKwargs                                 *Map
	filters                                   []*pipeline
	metrics                                   []*metricConfig
	version                                   any
	// processDocs is process_docs, a ported Python function (nil: none);
	// hooks are every ported function the config names, by its YAML
	// value (TaskConfig.to_dict writes their source or repr).
	processDocs *pyHook
	hooks       map[Function]*pyHook
	// processResults is process_results (nil: lm-eval's own scoring);
	// customDataset what a custom_dataset function loads (nil: none).
	processResults *pyHook
	customDataset  *datasetSpec
}

// hookField resolves field of raw, a !function, with hook (nil: raw has
// no such field); a value that is not a function is refused.
func (c *config) hookField(raw *Map, field string, kind hookKind) (*pyHook, Function, error) {
	v, ok := raw.Get(field)
	if !ok || v == nil {
		return nil, Function{}, nil
	}
	f, isFn := v.(Function)
	if !isFn {
		return nil, f, c.refuse(field, field, "%s is not a function", pyStr(v))
	}
	h, err := c.hook(field, f, kind)
	return h, f, err
}

// hook resolves a !function of the config for field, refusing one tally
// has no port of as it refuses Python code.
func (c *config) hook(field string, f Function, kind hookKind) (*pyHook, error) {
	h, err := resolveHook(f, kind)
	if err != nil {
		if errors.Is(err, errNoPort) {
			return nil, c.refuse(field, "!function", "%s", strings.TrimPrefix(err.Error(), errNoPort.Error()+": "))
		}
		return nil, c.refuse(field, "!function", "%v", err)
	}
	if c.hooks == nil {
		c.hooks = map[Function]*pyHook{}
	}
	c.hooks[f] = h
	return h, nil
}

// hookFields are the fields whose !function tally runs where it has a
// port: every other !function is refused.
var hookFields = map[string]bool{"doc_to_text": true, "doc_to_target": true, "process_docs": true, "fewshot_config": true,
	"process_results": true, "custom_dataset": true, "metric_list": true, "filter_list": true}

// refuse builds the Refusal for a field.
func (c *config) refuse(field, kind, format string, args ...any) *Refusal {
	return &Refusal{File: c.file, Field: field, Reason: fmt.Sprintf(format, args...), Kind: kind}
}

// parseConfig checks a merged task config (includes resolved, --set
// applied) and reads it into a config, refusing in one line whatever
// tally cannot run as lm-eval would.
func parseConfig(file string, raw *Map) (*config, error) {
	c := &config{file: file, raw: raw, targetDelim: " ", fewshotDelim: "\n\n", maxGenToks: 256}
	if _, ok := raw.Get("class"); ok {
		return nil, c.refuse("class", "class (a Python task)", "a Python task class; tally reads YAML tasks only")
	}
	if _, ok := raw.Get("group"); ok {
		return nil, c.refuse("group", "group file", "a group of tasks, not a task: run its tasks' files")
	}
	if ot, ok := mustGet(raw, "output_type").(string); ok && ot != "generate_until" {
		return nil, c.refuse("output_type", "output_type: "+ot, "%s is not supported (tally runs generate_until tasks)", ot)
	}
	// Any other !function is Python code tally does not run.
	for _, k := range raw.Keys {
		if hookFields[k] {
			continue
		}
		if f := findFunction(raw.Vals[k]); f != "" {
			return nil, c.refuse(k, "!function", "!function %s is Python code, which tally does not run", f)
		}
	}
	for _, k := range raw.Keys {
		if !taskFields[k] {
			return nil, c.refuse(k, "unknown field", "not a field of lm-eval's TaskConfig (lm-eval refuses it too)")
		}
	}
	str := func(key string) (string, bool, error) {
		v, ok := raw.Get(key)
		if !ok || v == nil {
			return "", false, nil
		}
		s, isStr := v.(string)
		if !isStr {
			return "", false, c.refuse(key, "bad value", "%s is not a string", pyStr(v))
		}
		return s, true, nil
	}
	var err error
	if c.task, _, err = str("task"); err != nil {
		return nil, err
	}
	if c.task == "" {
		return nil, c.refuse("task", "no task name", "missing: a task file names its task")
	}
	if c.alias, _, err = str("task_alias"); err != nil {
		return nil, err
	}
	switch t := mustGet(raw, "tag").(type) {
	case string:
		c.tags = []string{t}
	case []any:
		for _, e := range t {
			c.tags = append(c.tags, pyStr(e))
		}
	}
	if c.processDocs, _, err = c.hookField(raw, "process_docs", hookDocs); err != nil {
		return nil, err
	}
	if c.processResults, _, err = c.hookField(raw, "process_results", hookResults); err != nil {
		return nil, err
	}
	if h, f, err := c.hookField(raw, "custom_dataset", hookDataset); err != nil {
		return nil, err
	} else if h != nil {
		// lm-eval calls it with **metadata, **dataset_kwargs.
		kw := NewMap()
		for _, key := range []string{"metadata", "dataset_kwargs"} {
			if m, ok := mustGet(raw, key).(*Map); ok {
				for _, k := range m.Keys {
					kw.Set(k, m.Vals[k])
				}
			}
		}
		spec, err := h.dataset(kw)
		if err != nil {
			return nil, c.refuse("custom_dataset", "!function", "%s: %v", f.Name, err)
		}
		c.customDataset = &spec
	}
	for _, key := range []string{"doc_to_image", "doc_to_audio", "use_prompt", "doc_to_choice"} {
		if v, ok := raw.Get(key); ok && v != nil && v != false {
			return nil, c.refuse(key, key, "not supported")
		}
	}
	if v, _ := raw.Get("unsafe_code"); v == true {
		return nil, c.refuse("unsafe_code", "unsafe_code", "the task runs model-written code, which tally does not")
	}
	if v, ok := raw.Get("repeats"); ok && v != nil && v != int64(1) {
		return nil, c.refuse("repeats", "repeats", "%s: tally decodes greedily, once", pyStr(v))
	}
	for key, dst := range map[string]*string{"dataset_path": &c.datasetPath, "dataset_name": &c.datasetName,
		"training_split": &c.trainingSplit, "validation_split": &c.validationSplit, "test_split": &c.testSplit,
		"fewshot_split": &c.fewshotSplit} {
		if *dst, _, err = str(key); err != nil {
			return nil, err
		}
	}
	if c.testSplit == "" && c.validationSplit == "" {
		return nil, c.refuse("test_split", "no evaluation split", "neither test_split nor validation_split is set")
	}
	if v, ok, err := str("target_delimiter"); err != nil {
		return nil, err
	} else if ok {
		c.targetDelim = v
	}
	if v, ok, err := str("fewshot_delimiter"); err != nil {
		return nil, err
	} else if ok {
		c.fewshotDelim = v
	}
	if c.docToText, err = c.textField("doc_to_text", false); err != nil {
		return nil, err
	}
	if c.docToTarget, err = c.textField("doc_to_target", true); err != nil {
		return nil, err
	}
	if c.description, err = c.textField("description", false); err != nil {
		return nil, err
	}
	if c.genPrefix, err = c.textField("gen_prefix", false); err != nil {
		return nil, err
	}
	if !c.docToText.set {
		return nil, c.refuse("doc_to_text", "no doc_to_text", "missing")
	}
	if !c.docToTarget.set {
		return nil, c.refuse("doc_to_target", "no doc_to_target", "missing")
	}
	switch v := mustGet(raw, "num_fewshot").(type) {
	case nil:
	case int64:
		if v < 0 {
			return nil, c.refuse("num_fewshot", "bad value", "%d is negative", v)
		}
		c.numFewshot = int(v)
	default:
		return nil, c.refuse("num_fewshot", "bad value", "%s is not an int", pyStr(v))
	}
	if err := c.readFewshot(); err != nil {
		return nil, err
	}
	if err := c.readGeneration(); err != nil {
		return nil, err
	}
	if err := c.readFilters(); err != nil {
		return nil, err
	}
	if err := c.readMetrics(); err != nil {
		return nil, err
	}
	if md, ok := mustGet(raw, "metadata").(*Map); ok {
		c.version, _ = md.Get("version")
	}
	return c, nil
}

func mustGet(m *Map, key string) any {
	v, _ := m.Get(key)
	return v
}

// findFunction returns the first !function inside v.
func findFunction(v any) string {
	switch x := v.(type) {
	case Function:
		return x.Name
	case []any:
		for _, e := range x {
			if f := findFunction(e); f != "" {
				return f
			}
		}
	case *Map:
		for _, k := range x.Keys {
			if f := findFunction(x.Vals[k]); f != "" {
				return f
			}
		}
	}
	return ""
}

// textField reads a template field; doc_to_target may also be an int or
// a list.
func (c *config) textField(key string, literalOK bool) (*textField, error) {
	return c.textFieldFrom(c.raw, key, key, literalOK)
}

func (c *config) textFieldFrom(m *Map, key, name string, literalOK bool) (*textField, error) {
	v, ok := m.Get(key)
	if !ok || v == nil {
		return &textField{}, nil
	}
	switch x := v.(type) {
	case Function:
		if key != "doc_to_text" && key != "doc_to_target" {
			return nil, c.refuse(name, "!function", "%s is Python code, which tally does not run here", x)
		}
		h, err := c.hook(name, x, hookDoc)
		if err != nil {
			return nil, err
		}
		return &textField{spec: x.String(), hook: h, set: true}, nil
	case string:
		t, err := compileTemplate(x)
		if err != nil {
			return nil, c.refuse(name, "template", "%v", err)
		}
		return &textField{spec: x, tmpl: t, set: true}, nil
	case int64, []any:
		if literalOK {
			return &textField{literal: x, set: true}, nil
		}
		return nil, c.refuse(name, name+": not a string", "%s: an int or list (multiple inputs) is not supported", pyStr(v))
	}
	return nil, c.refuse(name, name+": not a string", "%s is not a string or template", pyStr(v))
}

// readFewshot reads fewshot_config, its fields defaulting to the task's
// (FewshotConfig.from_dict).
func (c *config) readFewshot() error {
	fc := fewshotConfig{sampler: "default", split: c.fewshotSplit, docToText: c.docToText, docToTarget: c.docToTarget,
		genPrefix: c.genPrefix, fewshotDelim: c.fewshotDelim, targetDelim: c.targetDelim, processDocs: c.processDocs}
	v, ok := c.raw.Get("fewshot_config")
	if ok && v != nil {
		m, isMap := v.(*Map)
		if !isMap {
			return c.refuse("fewshot_config", "bad value", "%s is not a mapping", pyStr(v))
		}
		for _, k := range m.Keys {
			val := m.Vals[k]
			field := "fewshot_config." + k
			if f := findFunction(val); f != "" && k != "doc_to_text" && k != "doc_to_target" && k != "process_docs" && k != "samples" {
				return c.refuse(field, "!function", "!function %s is Python code, which tally does not run", f)
			}
			switch k {
			case "sampler":
				s, _ := val.(string)
				if s != "default" && s != "first_n" {
					return c.refuse(field, "fewshot sampler "+pyStr(val), "%s is not supported (default, first_n)", pyStr(val))
				}
				fc.sampler = s
			case "split":
				if val != nil {
					s, isStr := val.(string)
					if !isStr {
						return c.refuse(field, "bad value", "%s is not a string", pyStr(val))
					}
					fc.split = s
				}
			case "samples":
				if f, isFn := val.(Function); isFn {
					// A function giving the shots (FewshotConfig's samples
					// callable): the Python bridge calls it, where opted in.
					h, err := c.hook(field, f, hookSamples)
					if err != nil {
						return err
					}
					if val, err = h.samples(); err != nil {
						return c.refuse(field, "!function", "%v", err)
					}
				} else if findFunction(val) != "" {
					return c.refuse(field, "!function", "!function %s is Python code, which tally does not run here", findFunction(val))
				}
				list, isList := val.([]any)
				if !isList {
					return c.refuse(field, "bad value", "%s is not a list of documents", pyStr(val))
				}
				for _, e := range list {
					d, isMap := e.(*Map)
					if !isMap {
						return c.refuse(field, "bad value", "%s is not a document (a mapping)", pyStr(e))
					}
					fc.samples = append(fc.samples, d)
				}
				fc.hasSamples = true
			case "fewshot_indices":
				// Accepted and, as in lm-eval at the commit tally follows,
				// without effect (the sampler is built without them).
			case "doc_to_text", "doc_to_target", "gen_prefix":
				tf, err := c.textFieldFrom(m, k, field, k == "doc_to_target")
				if err != nil {
					return err
				}
				if tf.set || val == nil {
					switch k {
					case "doc_to_text":
						fc.docToText = tf
					case "doc_to_target":
						fc.docToTarget = tf
					default:
						fc.genPrefix = tf
					}
				}
			case "fewshot_delimiter", "target_delimiter":
				s, isStr := val.(string)
				if !isStr {
					return c.refuse(field, "bad value", "%s is not a string", pyStr(val))
				}
				if k == "fewshot_delimiter" {
					fc.fewshotDelim = s
				} else {
					fc.targetDelim = s
				}
			case "process_docs":
				fc.processDocs = nil
				if val != nil {
					f, isFn := val.(Function)
					if !isFn {
						return c.refuse(field, "process_docs", "%s is not a function", pyStr(val))
					}
					h, err := c.hook(field, f, hookDocs)
					if err != nil {
						return err
					}
					fc.processDocs = h
				}
			case "doc_to_choice":
				if val != nil {
					return c.refuse(field, k, "not supported")
				}
			default:
				return c.refuse(field, "unknown field", "not a field of lm-eval's FewshotConfig")
			}
		}
	}
	c.fewshot = fc
	return nil
}

// budgetKeys are the token budget's spellings lm-eval's models read, first
// first (normalize_gen_kwargs' priority).
var budgetKeys = []string{"max_gen_toks", "max_new_tokens", "max_tokens", "max_completion_tokens"}

// readGeneration reads generation_kwargs: until and the token budget
// (max_gen_toks, or max_new_tokens, max_tokens, max_completion_tokens as
// lm-eval's models read it), greedy decoding only
// (TaskConfig.__post_init__'s defaults when absent).
func (c *config) readGeneration() error {
	v, ok := c.raw.Get("generation_kwargs")
	c.until = []string{c.fewshotDelim}
	if !ok || v == nil {
		c.genKwargs = NewMap()
		return nil
	}
	m, isMap := v.(*Map)
	if !isMap {
		return c.refuse("generation_kwargs", "bad value", "%s is not a mapping", pyStr(v))
	}
	c.genKwargs = m
	budgetRank := -1
	doSample, hasDoSample := m.Get("do_sample")
	if doSample == true {
		return c.refuse("generation_kwargs.do_sample", "do_sample: true", "true samples; tally decodes greedily only")
	}
	for _, k := range m.Keys {
		val := m.Vals[k]
		field := "generation_kwargs." + k
		switch k {
		case "until":
			switch u := val.(type) {
			case string:
				c.until = []string{u}
			case []any:
				c.until = nil
				for _, e := range u {
					s, isStr := e.(string)
					if !isStr {
						return c.refuse(field, "bad value", "%s is not a string", pyStr(e))
					}
					c.until = append(c.until, s)
				}
			case nil:
				c.until = nil
			default:
				return c.refuse(field, "bad value", "%s is not a string or list", pyStr(val))
			}
		case "max_gen_toks", "max_new_tokens", "max_tokens", "max_completion_tokens":
			// lm-eval's normalize_gen_kwargs (lm_eval/models/utils.py)
			// takes the first of these it finds, in this order.
			n, isInt := val.(int64)
			if !isInt || n <= 0 {
				return c.refuse(field, "bad value", "%s is not a positive int", pyStr(val))
			}
			if rank := slices.Index(budgetKeys, k); budgetRank < 0 || rank < budgetRank {
				c.maxGenToks, budgetRank = int(n), rank
			}
		case "do_sample":
			if val != false && val != nil {
				return c.refuse(field, "do_sample: "+pyStr(val), "%s: tally decodes greedily only", pyStr(val))
			}
		case "temperature":
			f, isNum := number(val)
			if !isNum {
				return c.refuse(field, "bad value", "%s is not a number", pyStr(val))
			}
			if f != 0 && !(hasDoSample && doSample == false) {
				return c.refuse(field, "temperature > 0", "%s samples unless do_sample is false; tally decodes greedily only", pyStr(val))
			}
		case "top_p", "top_k", "min_p", "typical_p", "length_penalty":
			// No effect on greedy decoding.
		case "repetition_penalty", "num_beams":
			if f, isNum := number(val); !isNum || f != 1 {
				return c.refuse(field, "generation_kwargs."+k, "%s changes greedy decoding; tally decodes greedily only", pyStr(val))
			}
		case "max_length":
			return c.refuse(field, "generation_kwargs."+k, "not supported (max_gen_toks sets the budget)")
		default:
			return c.refuse(field, "generation_kwargs."+k, "not supported")
		}
	}
	if math.MaxInt32 < c.maxGenToks {
		return c.refuse("generation_kwargs.max_gen_toks", "bad value", "%d is too large", c.maxGenToks)
	}
	return nil
}

// readMetrics reads metric_list (exact_match only); absent, the
// generate_until default: exact_match, mean, higher is better.
func (c *config) readMetrics() error {
	v, ok := c.raw.Get("metric_list")
	if c.processResults != nil {
		return c.readResultMetrics(v)
	}
	if list, isList := v.([]any); isList {
		for i, e := range list {
			m, isMap := e.(*Map)
			if !isMap {
				continue
			}
			for _, k := range m.Keys {
				if _, isFn := m.Vals[k].(Function); isFn && (k == "metric" || k == "aggregation") {
					continue
				}
				if f := findFunction(m.Vals[k]); f != "" {
					return c.refuse(fmt.Sprintf("metric_list[%d].%s", i, k), "!function", "!function %s is Python code, which tally does not run here", f)
				}
			}
		}
	} else if f := findFunction(v); f != "" {
		return c.refuse("metric_list", "!function", "!function %s is Python code, which tally does not run", f)
	}
	if !ok || v == nil {
		em, _ := exactmatch.New(exactmatch.Options{})
		c.metrics = []*metricConfig{{name: "exact_match", aggregation: "mean", higherIsBetter: true, em: em, options: map[string]any{}}}
		return nil
	}
	list, isList := v.([]any)
	if !isList {
		return c.refuse("metric_list", "bad value", "%s is not a list", pyStr(v))
	}
	seen := map[string]bool{}
	for i, e := range list {
		m, isMap := e.(*Map)
		field := fmt.Sprintf("metric_list[%d]", i)
		if !isMap {
			return c.refuse(field, "bad value", "%s is not a mapping", pyStr(e))
		}
		if f, isFn := mustGet(m, "metric").(Function); isFn {
			mc, err := c.pyMetric(m, field, f)
			if err != nil {
				return err
			}
			if seen[mc.name] {
				return c.refuse(field, "bad value", "metric %s listed twice", mc.name)
			}
			seen[mc.name] = true
			c.metrics = append(c.metrics, mc)
			continue
		}
		name, _ := mustGet(m, "metric").(string)
		if name == "" {
			return c.refuse(field, "bad value", "no metric name")
		}
		if seen[name] {
			return c.refuse(field, "bad value", "metric %s listed twice", name)
		}
		seen[name] = true
		if agg, isFn := mustGet(m, "aggregation").(Function); isFn {
			if !passthroughMetrics[name] {
				return c.refuse(field+".aggregation", "!function", "!function %s aggregating metric %s: tally runs an aggregation function for lm-eval's passthrough metrics (acc, f1, mcc, …) and metric functions", agg.Name, name)
			}
			mc := &metricConfig{name: name, higherIsBetter: true, passthrough: true, options: map[string]any{"passthrough": true}}
			if hib, isBool := mustGet(m, "higher_is_better").(bool); isBool {
				mc.higherIsBetter = hib
			}
			if err := c.pyAggregation(mc, field, agg); err != nil {
				return err
			}
			c.metrics = append(c.metrics, mc)
			continue
		}
		if cm, ok := scoring.Corpus(name); ok && corpusMetrics[name] {
			mc, err := c.corpusMetric(m, field, cm)
			if err != nil {
				return err
			}
			c.metrics = append(c.metrics, mc)
			continue
		}
		if name != "exact_match" {
			return c.refuse(field, "metric "+name, "metric %s is not supported (tally has exact_match, bleu, chrf, ter)", name)
		}
		mc := &metricConfig{name: name, aggregation: "mean", higherIsBetter: true, options: map[string]any{}}
		var opt exactmatch.Options
		for _, k := range m.Keys {
			val := m.Vals[k]
			switch k {
			case "metric", "hf_evaluate":
			case "aggregation":
				if val != "mean" {
					return c.refuse(field+".aggregation", "aggregation "+pyStr(val), "%s is not supported (mean is)", pyStr(val))
				}
			case "higher_is_better":
				b, isBool := val.(bool)
				if !isBool {
					return c.refuse(field+".higher_is_better", "bad value", "%s is not a bool", pyStr(val))
				}
				mc.higherIsBetter = b
			case "ignore_case", "ignore_punctuation", "ignore_numbers":
				// evaluate's exact_match tests each with "if": Python's
				// truth (afrobench's afriqa files give ignore_punctuation
				// a string, a YAML list that lost its key).
				b, ok := pyTruth(val)
				if !ok {
					return c.refuse(field+"."+k, "bad value", "%s is not a bool", pyStr(val))
				}
				mc.options[k] = b
				switch k {
				case "ignore_case":
					opt.IgnoreCase = b
				case "ignore_punctuation":
					opt.IgnorePunctuation = b
				default:
					opt.IgnoreNumbers = b
				}
			case "regexes_to_ignore":
				if val == nil {
					continue
				}
				rl, isList := val.([]any)
				if !isList {
					return c.refuse(field+".regexes_to_ignore", "bad value", "%s is not a list", pyStr(val))
				}
				opt.RegexesToIgnore = []string{}
				for _, r := range rl {
					s, isStr := r.(string)
					if !isStr {
						return c.refuse(field+".regexes_to_ignore", "bad value", "%s is not a string", pyStr(r))
					}
					opt.RegexesToIgnore = append(opt.RegexesToIgnore, s)
				}
				mc.options[k] = opt.RegexesToIgnore
			default:
				return c.refuse(field+"."+k, "metric option "+k, "exact_match has no option %s", k)
			}
		}
		em, err := exactmatch.New(opt)
		if err != nil {
			return c.refuse(field+".regexes_to_ignore", "regular expression", "%v", err)
		}
		mc.em = em
		c.metrics = append(c.metrics, mc)
	}
	if len(c.metrics) == 0 {
		return c.refuse("metric_list", "bad value", "empty")
	}
	return nil
}

// readResultMetrics reads the metric_list of a task whose
// process_results (a ported function) gives the metric values: lm-eval
// keeps each entry's aggregation and higher_is_better and calls no metric
// function of its own (other options are ignored, as lm-eval ignores
// them). tally aggregates by mean, so each entry says mean, and says
// higher_is_better (lm-eval's defaults for a name it does not register
// fail).
func (c *config) readResultMetrics(v any) error {
	list, isList := v.([]any)
	if !isList || len(list) == 0 {
		return c.refuse("metric_list", "bad value", "a task with process_results lists its metrics")
	}
	seen := map[string]bool{}
	for i, e := range list {
		m, isMap := e.(*Map)
		field := fmt.Sprintf("metric_list[%d]", i)
		if !isMap {
			return c.refuse(field, "bad value", "%s is not a mapping", pyStr(e))
		}
		for _, k := range m.Keys {
			if f := findFunction(m.Vals[k]); f != "" && k != "aggregation" {
				return c.refuse(field+"."+k, "!function", "!function %s is Python code, which tally does not run", f)
			}
		}
		name, _ := mustGet(m, "metric").(string)
		if name == "" {
			return c.refuse(field, "bad value", "no metric name")
		}
		if seen[name] {
			return c.refuse(field, "bad value", "metric %s listed twice", name)
		}
		seen[name] = true
		mc := &metricConfig{name: name, aggregation: "mean", options: map[string]any{}}
		switch agg := mustGet(m, "aggregation").(type) {
		case Function:
			h, err := c.hook(field+".aggregation", agg, hookAggregation)
			if err != nil {
				return err
			}
			mc.aggregation = h.fn.Name
			switch {
			case h.bridged:
				mc.pyAgg = h
			case h.flatMean:
				mc.flatMean = true
			default:
				mc.skip = &h.meanSkipping
			}
			mc.options["aggregation"] = map[string]any{"function": h.fn.Name, "module": h.digest}
		default:
			if agg != "mean" {
				return c.refuse(field+".aggregation", "aggregation "+pyStr(agg), "%s is not supported (mean is)", pyStr(agg))
			}
		}
		hib, isBool := mustGet(m, "higher_is_better").(bool)
		if !isBool {
			return c.refuse(field+".higher_is_better", "bad value", "%s is not a bool", pyStr(mustGet(m, "higher_is_better")))
		}
		mc.higherIsBetter = hib
		c.metrics = append(c.metrics, mc)
	}
	return nil
}

// corpusMetrics are lm-eval's registered metrics whose aggregation is
// sacrebleu's corpus score (lm_eval/api/metrics.py bleu, chrf, ter).
var corpusMetrics = map[string]bool{"bleu": true, "chrf": true, "ter": true}

// corpusMetric reads a bleu, chrf or ter entry: its aggregation is the
// metric's own (lm-eval's default; another would aggregate the
// [reference, prediction] pairs its per-sample value is, and fail),
// higher_is_better defaults as lm-eval registers the metric, true for all
// three (ter included, though a lower TER is better: lm_eval/api/metrics.py
// registers ter_fn with higher_is_better=True); other options, which
// lm-eval passes to a function that takes none and so ignores, are
// refused.
func (c *config) corpusMetric(m *Map, field string, cm scoring.CorpusMetric) (*metricConfig, error) {
	mc := &metricConfig{name: cm.Name, aggregation: cm.Name, higherIsBetter: true, corpus: &cm,
		options: map[string]any{"reference": cm.Reference}}
	for _, k := range m.Keys {
		val := m.Vals[k]
		switch k {
		case "metric":
		case "aggregation":
			if val != cm.Name {
				return nil, c.refuse(field+".aggregation", "aggregation "+pyStr(val), "%s for metric %s is not supported (%s is)", pyStr(val), cm.Name, cm.Name)
			}
		case "higher_is_better":
			b, isBool := val.(bool)
			if !isBool {
				return nil, c.refuse(field+".higher_is_better", "bad value", "%s is not a bool", pyStr(val))
			}
			mc.higherIsBetter = b
		default:
			return nil, c.refuse(field+"."+k, "metric option "+k, "%s has no option %s", cm.Name, k)
		}
	}
	return mc, nil
}

// sortedKeys lists a map's keys in order (for stable messages).
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// pyTruth is Python's truth of a value ("if v:"), and whether it has one
// tally knows (every value a task file holds does).
func pyTruth(v any) (bool, bool) {
	switch x := v.(type) {
	case nil:
		return false, true
	case bool:
		return x, true
	case int64:
		return x != 0, true
	case float64:
		return x != 0, true
	case string:
		return x != "", true
	case []any:
		return len(x) > 0, true
	case *Map:
		return x.Len() > 0, true
	}
	return false, false
}
