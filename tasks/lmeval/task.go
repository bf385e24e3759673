// Package lmeval runs lm-evaluation-harness task files (YAML) in tally:
// generate_until tasks whose prompts, few-shot examples, filters and
// metrics need no Python, or need Python functions tally has Go ports of
// (hooks.go: recognised by their module's SHA-256; MMLU-Pro, MMLU-ProX,
// llama3 instruct, LongBench, BabiLong, RULER). It reads them as lm-eval
// does at commit
// 4e7e0d47f33bc71070c1d38394bafbb52b117163 of
// github.com/EleutherAI/lm-evaluation-harness (2026-08-21): includes
// (lm_eval/tasks/_yaml_loader.py, with PyYAML's YAML 1.1 scalars),
// TaskConfig and FewshotConfig (lm_eval/config/task.py), prompts
// (ConfigurableTask.fewshot_context and build_qa_turn in
// lm_eval/api/task.py, with lm_eval/api/utils.py), templates
// (lm_eval/utils.py apply_template: jinja2 with StrictUndefined and
// keep_trailing_newline), the samplers (lm_eval/api/samplers.py: the
// default one draws with random.Random(1234), reproduced by
// tally/internal/pyrandom; first_n), the filters (lm_eval/filters: regex,
// take_first, remove_whitespace, lowercase, uppercase, map; patterns in
// Python's re syntax through tally/internal/pyre) and exact_match
// (lm_eval/api/metrics.py, tally/scoring/exactmatch) with
// ConfigurableTask.process_results's rules for generate_until, bleu, chrf
// and ter (sacrebleu's corpus scores, tally/scoring/sacrebleu), and the
// multi_choice_regex filter.
//
// The Python behaviour these need is reproduced exactly by hand-written
// code (tally/internal/pyre, pyrandom, pystr, pyliteral and the ports),
// not a library: no Go library reproduces Python's re, random, str
// methods, jinja2's rendering or the functions of lm-eval's task folders
// to the character, which decides prompts and scores.
//
// What tally cannot reproduce is refused with one line naming the field
// (*Refusal): Python code it has no port of (!function, class), other
// output types, other metrics and filters, sampling.
//
// Opt-in (UsePython: tally's --python), the functions with no Go port run
// in Python instead, in one worker process of the user's interpreter
// (pybridge.go; pyhooks.go says how each is called): process_docs,
// doc_to_text and doc_to_target functions, process_results, filter
// classes and custom filter functions, metric functions. Such a task's
// variant and scoring key on the digest of its functions' folder's .py
// files (Task.PythonModules).
package lmeval

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"tally/datasets"
	"tally/internal/pyliteral"
	"tally/internal/pyrandom"
	"tally/internal/pyre"
	"tally/internal/pystr"
	"tally/scoring"
)

// Commit is the lm-evaluation-harness commit whose behaviour is
// reproduced.
const Commit = "4e7e0d47f33bc71070c1d38394bafbb52b117163"

// FormatName is the loader name tally shows for these tasks.
const FormatName = "lm-eval"

// UntilSetting is the name of the stop setting made from the task's
// generation_kwargs.until.
const UntilSetting = "until"

// DefaultFewshotSeed is lm-eval's default fewshot_random_seed.
const DefaultFewshotSeed = 1234

// lmevalKeys are keys that only an lm-eval task file has (a tally task
// file has "loader").
var lmevalKeys = []string{"include", "dataset_path", "doc_to_text", "doc_to_target", "output_type", "group", "class",
	"test_split", "validation_split", "training_split", "task_list", "metric_list", "generation_kwargs", "filter_list", "dataset_name"}

// IsTaskFile reports whether a YAML document is an lm-eval task (or
// group) file rather than a tally task file.
func IsTaskFile(data []byte) bool {
	keys, ok := topKeys(data)
	if !ok || keys["loader"] {
		return false
	}
	for _, k := range lmevalKeys {
		if keys[k] {
			return true
		}
	}
	return false
}

// Task is a loaded lm-eval task file.
type Task struct {
	c    *config
	seed int64
	// zeroShot is set when the file sets num_fewshot: 0 and a --fewshot
	// (lm-eval's --num_fewshot) was ignored for it, as lm-eval ignores it.
	zeroShot bool
}

// Load reads a task file, resolving its includes, with fields overridden
// by set (KEY=VALUE, the value read as YAML, as --set gives them; the key
// "fewshot" is num_fewshot, and "fewshot_seed" sets the sampler's seed,
// lm-eval's --seed's fourth value).
func Load(path string, set map[string]string) (*Task, error) {
	raw, err := loadTaskFile(path)
	if err != nil {
		return nil, err
	}
	return fromRaw(path, raw, set)
}

// fromRaw checks a merged config, with set applied, into a Task.
func fromRaw(path string, raw *Map, set map[string]string) (*Task, error) {
	t := &Task{seed: DefaultFewshotSeed}
	for _, k := range sortedKeys(set) {
		v, err := parseYAML([]byte(set[k]), "--set "+k)
		if err != nil {
			return nil, err
		}
		switch k {
		case "fewshot_seed":
			n, ok := v.(int64)
			if !ok {
				return nil, fmt.Errorf("--set fewshot_seed=%s: not an int", set[k])
			}
			t.seed = n
			continue
		case "fewshot":
			// lm-eval's --num_fewshot never overrides a task file's
			// num_fewshot: 0 (simple_evaluate: "Manual configuration will
			// be ignored").
			if n, ok := raw.Get("num_fewshot"); ok && pyEqual(n, int64(0)) {
				t.zeroShot = true
				continue
			}
			k = "num_fewshot"
		}
		raw.Set(k, v)
	}
	c, err := parseConfig(path, raw)
	if err != nil {
		return nil, err
	}
	t.c = c
	return t, nil
}

// Name is the task name (lm-eval's "task").
func (t *Task) Name() string { return t.c.task }

// Alias is task_alias ("" when none).
func (t *Task) Alias() string { return t.c.alias }

// Tags are the task's tags.
func (t *Task) Tags() []string { return t.c.tags }

// Version is metadata.version (nil when none).
func (t *Task) Version() any { return t.c.version }

// Until is generation_kwargs.until: the task's default stop setting.
func (t *Task) Until() []string { return t.c.until }

// MaxGenToks is generation_kwargs.max_gen_toks (lm-eval's default 256).
func (t *Task) MaxGenToks() int { return t.c.maxGenToks }

// NumFewshot is the number of few-shot examples.
func (t *Task) NumFewshot() int { return t.c.numFewshot }

// FewshotSeed is the sampler's seed.
func (t *Task) FewshotSeed() int64 { return t.seed }

// Filters are the filter pipelines' names, as lm-eval names them.
func (t *Task) Filters() []string {
	out := make([]string, len(t.c.filters))
	for i, f := range t.c.filters {
		out[i] = f.name
	}
	return out
}

// Metric is one metric as lm-eval's results files describe it.
type Metric struct {
	Name           string
	Aggregation    string
	HigherIsBetter bool
}

// Metrics are the task's metrics.
func (t *Task) Metrics() []Metric {
	out := make([]Metric, len(t.c.metrics))
	for i, m := range t.c.metrics {
		out[i] = Metric{m.name, m.aggregation, m.higherIsBetter}
	}
	return out
}

// ScoreKeys are the keys of the scores a sample gets, as lm-eval names its
// results: "METRIC,FILTER" for each filter pipeline and metric.
func (t *Task) ScoreKeys() []string {
	var out []string
	for _, f := range t.c.filters {
		for _, m := range t.c.metrics {
			out = append(out, m.name+","+f.name)
		}
	}
	return out
}

// ConfigDict is the task file's fields after includes and overrides, as
// JSON decodes them (numbers as float64): what keys the task's variant
// (tally/tasks/variant). lm-eval's results file writes ToDict.
func (t *Task) ConfigDict() map[string]any {
	var out map[string]any
	if b, err := json.Marshal(t.c.raw); err == nil {
		json.Unmarshal(b, &out)
	}
	return out
}

// FilterPipelines maps the name of each filter_list entry of ConfigDict
// to its pipeline (the entry's "filter" list), as lm-eval's results files
// describe the filter a metric key names ("exact_match,strict-match").
func (t *Task) FilterPipelines() map[string][]map[string]any {
	out := map[string][]map[string]any{}
	var fl []struct {
		Name   string           `json:"name"`
		Filter []map[string]any `json:"filter"`
	}
	if raw, err := json.Marshal(t.ConfigDict()["filter_list"]); err == nil && json.Unmarshal(raw, &fl) == nil {
		for _, f := range fl {
			out[f.Name] = f.Filter
		}
	}
	return out
}

// Description is a one-line summary for listings.
func (t *Task) Description() string {
	return fmt.Sprintf("lm-eval task %s (%d-shot, filters %s)", t.c.task, t.c.numFewshot, strings.Join(t.Filters(), ", "))
}

// Loaded is a task's samples.
type Loaded struct {
	Samples []datasets.Sample
	// Skipped counts malformed lines skipped (with skipBad).
	Skipped int
	// MultipleTarget is lm-eval's multiple_target: the first document's
	// target is a list, so every target is read as a list of answers.
	MultipleTarget bool
	// Files are the data files read, in the order read.
	Files []string
}

// MetaMultipleTarget is the sample metadata key of lm-eval's
// multiple_target (the first document's target is a list), which decides
// how every target is scored; kept with each sample so that scoring needs
// no data file.
const MetaMultipleTarget = "multiple_target"

// Load reads the task's splits from data (--data: SPLIT=FILE,..., a
// folder in the Hub's layout, or one file with the evaluation split) and
// builds every document's prompt as lm-eval does, in document order (the
// few-shot sampler draws from one generator, document after document, so
// a prompt depends on the documents before it; selecting samples
// afterwards keeps every prompt as a full run builds it). Each sample
// carries what lm-eval's sample files log of its document: the document
// (Doc), its doc_id (Index) and its target as doc_to_target gives it
// (Target, the references' JSON when that is not a string).
func (t *Task) Load(data string, skipBad bool) (Loaded, error) {
	ds, err := parseDataSpec(data)
	if err != nil {
		return Loaded{}, err
	}
	c := t.c
	evalSplit := c.testSplit
	if evalSplit == "" {
		evalSplit = c.validationSplit
	}
	docs, skipped, err := t.readSplit(ds, evalSplit, evalSplit, skipBad)
	if err != nil {
		return Loaded{}, err
	}
	if docs, err = processDocs(c.processDocs, docs); err != nil {
		return Loaded{}, fmt.Errorf("task %s: split %s: %w", c.task, evalSplit, err)
	}
	if len(docs) == 0 {
		return Loaded{}, fmt.Errorf("task %s: split %s has no documents", c.task, evalSplit)
	}
	features := map[string]bool{}
	for _, d := range docs {
		for _, k := range d.Keys {
			features[k] = true
		}
	}
	var pool []*Map
	if c.numFewshot > 0 {
		if pool, err = t.fewshotPool(ds, evalSplit, docs); err != nil {
			return Loaded{}, err
		}
	}
	first, err := c.docToTarget.value(docs[0], features)
	if err != nil {
		return Loaded{}, fmt.Errorf("task %s: doc_to_target, document 0: %w", c.task, err)
	}
	first, err = targetValue(c.docToTarget, first)
	if err != nil {
		return Loaded{}, fmt.Errorf("task %s: doc_to_target, document 0: %w", c.task, err)
	}
	_, multi := first.([]any)
	rnd := pyrandom.New(t.seed)
	samples := make([]datasets.Sample, len(docs))
	for i, doc := range docs {
		prompt, system, err := t.context(doc, features, pool, rnd)
		if err != nil {
			return Loaded{}, fmt.Errorf("task %s: document %d: %w", c.task, i, err)
		}
		gold, err := c.docToTarget.value(doc, features)
		if err == nil {
			gold, err = targetValue(c.docToTarget, gold)
		}
		if err != nil {
			return Loaded{}, fmt.Errorf("task %s: doc_to_target, document %d: %w", c.task, i, err)
		}
		refs, err := marshalValue(gold)
		if err != nil {
			return Loaded{}, fmt.Errorf("task %s: document %d: %w", c.task, i, err)
		}
		docJSON, err := marshalValue(doc)
		if err != nil {
			return Loaded{}, fmt.Errorf("task %s: document %d: %w", c.task, i, err)
		}
		target := pyStr(gold) // str(doc_to_target(doc)), as lm-eval's files write it
		md := map[string]any{MetaMultipleTarget: multi}
		if system != "" {
			md["system_prompt"] = system
		}
		samples[i] = datasets.Sample{Task: c.task, ID: strconv.Itoa(i), Prompt: prompt, References: refs, Metadata: md,
			Doc: docJSON, Target: &target, Index: &i}
	}
	return Loaded{Samples: samples, Skipped: skipped, MultipleTarget: multi, Files: ds.read}, nil
}

// targetValue is doc_to_target's rule for a rendered template: a text
// that looks like a list ("[...]") is read with ast.literal_eval when it
// can be.
func targetValue(f *textField, v any) (any, error) {
	s, rendered := v.(string)
	if !rendered || f.literal != nil || f.tmpl == nil {
		return v, nil
	}
	if len(s) >= 2 && s[0] == '[' && s[len(s)-1] == ']' {
		pv, err := pyliteral.Eval(s)
		if err != nil {
			return s, nil
		}
		return fromPy(pv)
	}
	return s, nil
}

// readSplit reads a split's documents from every file the source has
// for it.
func (t *Task) readSplit(ds *dataSource, split, evalSplit string, skipBad bool) ([]*Map, int, error) {
	name := t.c.datasetName
	if t.c.customDataset != nil {
		name = t.c.customDataset.name
	}
	files, err := ds.splitFiles(split, name, evalSplit)
	if err != nil {
		return nil, 0, fmt.Errorf("task %s: %w", t.c.task, err)
	}
	var docs []*Map
	skipped := 0
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return nil, 0, fmt.Errorf("task %s: split %s: %w", t.c.task, split, err)
		}
		d, n, err := readRows(f, skipBad)
		if err != nil {
			return nil, 0, fmt.Errorf("task %s: split %s: %w", t.c.task, split, err)
		}
		ds.read = append(ds.read, f)
		docs = append(docs, d...)
		skipped += n
	}
	return docs, skipped, nil
}

// fewshotPool is where the shots come from (ConfigurableTask.fewshot_docs):
// fewshot_config.split (fewshot_split), else fewshot_config.samples,
// else the training, validation or test split, the first the task has.
//
// The split's documents go through process_docs as lm-eval's do: the
// few-shot config's (the task's unless it sets its own) for its split,
// the task's for the others (training_docs, validation_docs, test_docs).
func (t *Task) fewshotPool(ds *dataSource, evalSplit string, evalDocs []*Map) ([]*Map, error) {
	c := t.c
	split := c.fewshot.split
	process := c.processDocs
	switch {
	case split != "":
		process = c.fewshot.processDocs
	case c.fewshot.hasSamples:
		return c.fewshot.samples, nil
	case c.trainingSplit != "":
		split = c.trainingSplit
	case c.validationSplit != "":
		split = c.validationSplit
	default:
		split = c.testSplit
	}
	if split == evalSplit && process == c.processDocs {
		return evalDocs, nil
	}
	docs, _, err := t.readSplit(ds, split, evalSplit, false)
	if err != nil {
		return nil, err
	}
	if docs, err = processDocs(process, docs); err != nil {
		return nil, fmt.Errorf("task %s: split %s: %w", c.task, split, err)
	}
	return docs, nil
}

// processDocs applies a process_docs function (nil: none) to a split's
// documents.
func processDocs(h *pyHook, docs []*Map) ([]*Map, error) {
	if h == nil {
		return docs, nil
	}
	out, err := h.docs(docs)
	if err != nil {
		return nil, fmt.Errorf("process_docs %s: %w", h.fn.Name, err)
	}
	return out, nil
}

// context is fewshot_context as plain text: the description, the shots
// (question, target delimiter, answer, few-shot delimiter), then the
// document's question (and gen_prefix). system is the description, which
// a chat prompt sends as the system message.
func (t *Task) context(doc *Map, features map[string]bool, pool []*Map, rnd *pyrandom.Random) (prompt, system string, err error) {
	c := t.c
	var b strings.Builder
	if c.description.set && c.description.spec != "" {
		v, err := c.description.resolve(doc)
		if err != nil {
			return "", "", fmt.Errorf("description: %w", err)
		}
		if truthy(v) {
			s, ok := v.(string)
			if !ok {
				return "", "", fmt.Errorf("description: %s is not a string", pyStr(v))
			}
			system = s
			b.WriteString(s)
		}
	}
	if c.numFewshot > 0 {
		shots, err := t.sample(doc, pool, rnd)
		if err != nil {
			return "", "", err
		}
		fc := c.fewshot
		for _, fs := range shots {
			q, err := fc.docToText.value(fs, features)
			if err != nil {
				return "", "", fmt.Errorf("few-shot doc_to_text: %w", err)
			}
			a, err := fc.docToTarget.value(fs, features)
			if err == nil {
				a, err = targetValue(fc.docToTarget, a)
			}
			if err != nil {
				return "", "", fmt.Errorf("few-shot doc_to_target: %w", err)
			}
			gp, err := prefix(fc.genPrefix, fs, features)
			if err != nil {
				return "", "", fmt.Errorf("few-shot gen_prefix: %w", err)
			}
			if err := qaTurn(&b, q, a, true, gp, fc.targetDelim, fc.fewshotDelim); err != nil {
				return "", "", fmt.Errorf("few-shot example: %w", err)
			}
		}
	}
	q, err := c.docToText.value(doc, features)
	if err != nil {
		return "", "", fmt.Errorf("doc_to_text: %w", err)
	}
	gp := ""
	if c.genPrefix.set {
		// doc_to_prefix: a column or a template, whatever its value.
		v, err := c.genPrefix.value(doc, features)
		if err != nil {
			return "", "", fmt.Errorf("gen_prefix: %w", err)
		}
		s, ok := v.(string)
		if !ok {
			return "", "", fmt.Errorf("gen_prefix: %s is not a string", pyStr(v))
		}
		gp = s
	}
	if err := qaTurn(&b, q, nil, false, gp, c.targetDelim, ""); err != nil {
		return "", "", err
	}
	return b.String(), system, nil
}

// prefix is resolve_field for a few-shot gen_prefix: "" when unset.
func prefix(f *textField, doc *Map, features map[string]bool) (string, error) {
	if f == nil || !f.set || f.spec == "" {
		return "", nil
	}
	v, err := f.resolve(doc)
	if err != nil {
		return "", err
	}
	if !truthy(v) {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s is not a string", pyStr(v))
	}
	return s, nil
}

// truthy is Python's bool() for document values.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case *Map:
		return x.Len() > 0
	}
	return true
}

// qaTurn is build_qa_turn rendered as text: the question, the target
// delimiter when an answer follows (or a gen_prefix needs one), then the
// answer and the few-shot delimiter, or the gen_prefix.
func qaTurn(b *strings.Builder, qv, a any, withAnswer bool, gp, tgt, few string) error {
	q, ok := qv.(string)
	if !ok {
		return fmt.Errorf("doc_to_text gave %s, not a string (lm-eval asserts a str)", pyStr(qv))
	}
	has := withAnswer && a != nil && !(isStr(a) && a.(string) == "")
	switch {
	case has && gp == "":
		b.WriteString(q + tgt)
	case gp != "" && requiresDelimiter(q, gp):
		b.WriteString(q + tgt)
	default:
		b.WriteString(q)
	}
	switch {
	case has:
		ans := a
		if l, isList := a.([]any); isList {
			if len(l) == 0 {
				return errors.New("the target is an empty list (lm-eval raises IndexError)")
			}
			ans = l[0]
		}
		s, ok := ans.(string)
		if !ok {
			return fmt.Errorf("the answer %s is not a string (lm-eval asserts a str)", pyStr(ans))
		}
		b.WriteString(maybeDelimit(gp, s, " ") + few)
	case gp != "":
		b.WriteString(gp)
	}
	return nil
}

func isStr(v any) bool {
	_, ok := v.(string)
	return ok
}

// maybeDelimit joins prefix and suffix with delim unless either has white
// space at the join.
func maybeDelimit(prefix, suffix, delim string) string {
	if prefix == "" {
		return suffix
	}
	if suffix == "" {
		return prefix
	}
	last, _ := utf8.DecodeLastRuneInString(prefix)
	first, _ := utf8.DecodeRuneInString(suffix)
	if pystr.IsSpace(last) || pystr.IsSpace(first) {
		return prefix + suffix
	}
	return prefix + delim + suffix
}

// requiresDelimiter is true when neither string has white space at the
// join.
func requiresDelimiter(prefix, suffix string) bool {
	if prefix == "" {
		return false
	}
	last, _ := utf8.DecodeLastRuneInString(prefix)
	first, _ := utf8.DecodeRuneInString(suffix)
	return !(pystr.IsSpace(last) || pystr.IsSpace(first))
}

// sample draws the shots for one document (ContextSampler.sample or
// FirstNSampler.sample). The document is excluded from its own shots when
// the few-shot split is the test split, as lm-eval excludes it.
func (t *Task) sample(doc *Map, pool []*Map, rnd *pyrandom.Random) ([]*Map, error) {
	c := t.c
	n := c.numFewshot
	exclude := c.fewshot.split == c.testSplit
	if c.fewshot.sampler == "first_n" {
		p := pool
		if exclude {
			p = withoutDoc(pool, doc)
		}
		if n > len(p) {
			return nil, fmt.Errorf("first_n sampler: %d shots requested, %d available", n, len(p))
		}
		return p[:n], nil
	}
	if len(pool) == 0 {
		return nil, errors.New("sampler: no documents available for sampling")
	}
	k := n
	if exclude {
		k = n + 1
	}
	idx, err := rnd.Sample(len(pool), k)
	if err != nil {
		return nil, fmt.Errorf("sampler: %w", err)
	}
	shots := make([]*Map, 0, k)
	for _, i := range idx {
		if exclude && pyEqual(pool[i], doc) {
			continue
		}
		shots = append(shots, pool[i])
	}
	if len(shots) > n {
		shots = shots[:n]
	}
	if len(shots) != n {
		return nil, fmt.Errorf("sampler: %d shots drawn, %d requested", len(shots), n)
	}
	return shots, nil
}

func withoutDoc(pool []*Map, doc *Map) []*Map {
	var out []*Map
	for _, d := range pool {
		if !pyEqual(d, doc) {
			out = append(out, d)
		}
	}
	return out
}

// scoreVersion names the revision of Score's behaviour; it enters the
// scoring spec, so a change recomputes stored scores.
//
// 2: a sample's regexes (filters, regexes_to_ignore) share a budget of
// pyre.MaxSteps and pyre.StepsPerRune a code point; past it the sample
// is unscorable, where a search could spend 50,000,000 steps before.
const scoreVersion = "2"

// ScoringSpec is what decides how a prediction is scored: the filters and
// the metrics with their options (whether targets are lists is in each
// sample's metadata).
func (t *Task) ScoringSpec() string {
	type step struct {
		Function string `json:"function"`
		Pattern  string `json:"regex_pattern,omitempty"`
		Group    int    `json:"group_select,omitempty"`
		Fallback string `json:"fallback,omitempty"`
		Mapping  *Map   `json:"mapping_dict,omitempty"`
		Default  any    `json:"default_value,omitempty"`
		// multi_choice_regex's
		IgnoreCase  bool     `json:"ignore_case,omitempty"`
		IgnorePunct bool     `json:"ignore_punctuation,omitempty"`
		Ignore      []string `json:"regexes_to_ignore,omitempty"`
		// a Python filter's: its folder's Python and its options
		Module string `json:"module,omitempty"`
		Kwargs *Map   `json:"kwargs,omitempty"`
	}
	type pipe struct {
		Name  string `json:"name"`
		Steps []step `json:"filter"`
	}
	type metric struct {
		Name    string         `json:"metric"`
		Options map[string]any `json:"options"`
	}
	sp := struct {
		Task    string   `json:"task"`
		Loader  string   `json:"loader"`
		Version string   `json:"version"`
		Filters []pipe   `json:"filters"`
		Metrics []metric `json:"metrics"`
	}{Task: t.c.task, Loader: FormatName + "@" + Commit[:12], Version: scoreVersion}
	for _, f := range t.c.filters {
		p := pipe{Name: f.name}
		for _, s := range f.steps {
			st := step{Function: s.function, Group: s.groupSelect, Mapping: s.mapping, Default: s.defaultVal,
				IgnoreCase: s.ignoreCase, IgnorePunct: s.ignorePunct}
			for _, re := range s.ignoreRes {
				st.Ignore = append(st.Ignore, re.String())
			}
			if s.re != nil {
				st.Pattern, st.Fallback = s.re.String(), s.fallback
			}
			if s.py != nil {
				st.Module, st.Kwargs = s.py.digest, s.pyKwargs
			}
			p.Steps = append(p.Steps, st)
		}
		sp.Filters = append(sp.Filters, p)
	}
	for _, m := range t.c.metrics {
		sp.Metrics = append(sp.Metrics, metric{m.name, m.options})
	}
	if h := t.c.processResults; h != nil {
		// The ported function, by name and its module's digest.
		sp.Metrics = append(sp.Metrics, metric{"process_results", map[string]any{"function": h.fn.Name, "module": h.digest}})
	}
	b, _ := json.Marshal(sp)
	return string(b)
}

// Scorer scores one prediction (already cut at the stop setting's
// sequences, as lm-eval cuts at until) under every filter pipeline and
// metric: keys "METRIC,FILTER". The sample's references are its target;
// its metadata says whether the task's targets are lists. An error means
// lm-eval could not score it either (it would raise).
func (t *Task) Scorer() func(pred string, s datasets.Sample) (map[string]float64, error) {
	return func(pred string, s datasets.Sample) (map[string]float64, error) {
		multipleTarget, _ := s.Metadata[MetaMultipleTarget].(bool)
		gold, err := decodeJSON(s.References)
		if err != nil {
			return nil, fmt.Errorf("references of %s: %w", s.ID, err)
		}
		// Every regex that scores the sample (filters, regexes_to_ignore)
		// shares one budget of steps, sized by the text it may search.
		runes := utf8.RuneCountInString(pred)*len(t.c.filters) + utf8.RuneCountInString(string(s.References))
		var doc *Map
		if t.ScoresDocs() {
			if doc, err = docOf(s); err != nil {
				return nil, err
			}
			runes += utf8.RuneCount(s.Doc) * len(t.c.filters)
		}
		b := pyre.NewBudget(runes)
		out := map[string]float64{}
		for _, f := range t.c.filters {
			res, err := f.apply(pred, doc, b)
			if err != nil {
				return nil, err
			}
			if h := t.c.processResults; h != nil {
				vals, err := h.results(doc, []any{res})
				if err != nil && h.bridged {
					return nil, err // the bridge's error names the function
				}
				if err != nil {
					return nil, fmt.Errorf("process_results %s: %w", h.fn.Name, err)
				}
				for _, k := range vals.Keys {
					if m := t.metric(k); m != nil && m.pyAgg != nil {
						// Aggregated in Python from values made again
						// when lm-eval's files are written.
						out[scoring.CorpusStatKey(DeferredPrefix+k, 0, ","+f.name)] = 1
						continue
					}
					if m := t.metric(k); m != nil && m.flatMean {
						st, err := flatStats(vals.Vals[k])
						if err != nil {
							return nil, fmt.Errorf("process_results %s: %s: %w", h.fn.Name, k, err)
						}
						for i, x := range st {
							out[scoring.CorpusStatKey(k, i, ","+f.name)] = x
						}
						continue
					}
					x, ok := number(vals.Vals[k])
					if !ok {
						return nil, fmt.Errorf("process_results %s: %s is %s, not a number", h.fn.Name, k, pyStr(vals.Vals[k]))
					}
					if m := t.metric(k); m != nil && m.skip != nil && x == *m.skip {
						continue // the value the metric's aggregation leaves out
					}
					out[k+","+f.name] = x
				}
				continue
			}
			for _, m := range t.c.metrics {
				if m.pyAgg != nil {
					if m.py != nil {
						// The function runs, so that its errors are the
						// sample's, as in lm-eval.
						if _, err := m.pyScore(res, gold, multipleTarget); err != nil {
							return nil, fmt.Errorf("%s,%s: %w", m.name, f.name, err)
						}
					}
					out[scoring.CorpusStatKey(DeferredPrefix+m.name, 0, ","+f.name)] = 1
					continue
				}
				if m.py != nil {
					vals, err := m.pyScore(res, gold, multipleTarget)
					if err != nil {
						return nil, fmt.Errorf("%s,%s: %w", m.name, f.name, err)
					}
					for _, k := range vals.Keys {
						x, ok := number(vals.Vals[k])
						if !ok {
							return nil, fmt.Errorf("metric %s: %s is %s, not a number", m.py.fn.Name, k, pyStr(vals.Vals[k]))
						}
						out[k+","+f.name] = x
					}
					continue
				}
				if m.corpus != nil {
					st, err := m.corpusStats(res, gold, multipleTarget)
					if err != nil {
						return nil, fmt.Errorf("%s,%s: %w", m.name, f.name, err)
					}
					for i, v := range st {
						out[scoring.CorpusStatKey(m.name, i, ","+f.name)] = v
					}
					continue
				}
				v, err := m.score(res, gold, multipleTarget, b)
				if err != nil {
					return nil, fmt.Errorf("%s,%s: %w", m.name, f.name, err)
				}
				out[m.name+","+f.name] = v
			}
		}
		return out, nil
	}
}

// metric is the metric_list entry of a name (nil: none).
func (t *Task) metric(name string) *metricConfig {
	for _, m := range t.c.metrics {
		if m.name == name {
			return m
		}
	}
	return nil
}

// ScoresDocs reports whether scoring reads each sample's document (its
// Doc): a filter that reads it (multi_choice_regex), so loads keep it.
func (t *Task) ScoresDocs() bool {
	if t.c.processResults != nil {
		return true
	}
	for _, f := range t.c.filters {
		if f.needsDoc() {
			return true
		}
	}
	return false
}

// docOf is a sample's document, for scoring that reads it.
func docOf(s datasets.Sample) (*Map, error) {
	if len(s.Doc) == 0 {
		return nil, fmt.Errorf("sample %s: its document is not stored, and its scoring reads it", s.ID)
	}
	v, err := decodeJSON(s.Doc)
	if err != nil {
		return nil, fmt.Errorf("sample %s: document: %w", s.ID, err)
	}
	doc, ok := v.(*Map)
	if !ok {
		return nil, fmt.Errorf("sample %s: its document is not a mapping", s.ID)
	}
	return doc, nil
}

// corpusStats are a sample's statistics for a corpus metric (bleu, chrf,
// ter), which lm-eval's process_results gives as the pair [gold, result]
// and its aggregation scores with sacrebleu over the task's pairs
// (_sacreformat: one reference a prediction): the filtered response
// against doc_to_target cast to a str. A task whose targets are lists
// makes lm-eval's aggregation fail (process_results gives 1.0, not a
// pair), and is refused here.
func (m *metricConfig) corpusStats(res, gold any, multi bool) ([]float64, error) {
	if multi {
		return nil, fmt.Errorf("metric %s with list targets: lm-eval's aggregation raises (its process_results gives a number, not a [reference, prediction] pair)", m.name)
	}
	var pred string
	switch r := res.(type) {
	case string:
		pred = r
	case []any:
		s, ok := r[0].(string)
		if len(r) != 1 || !ok {
			return nil, fmt.Errorf("filtered response %s is not a string", pyStr(res))
		}
		pred = s
	default:
		return nil, fmt.Errorf("filtered response %s is not a string", pyStr(res))
	}
	return m.corpus.Sample(pred, []string{pyStr(gold)}), nil
}

// score is process_results's exact_match for generate_until: the filtered
// response against doc_to_target, as a list of answers (1 when any
// matches) when the task's targets are lists, else cast to a string.
func (m *metricConfig) score(res, gold any, multi bool, b *pyre.Budget) (float64, error) {
	isList := false
	var pred string
	switch r := res.(type) {
	case string:
		pred = r
	case []any:
		// No take_first: lm-eval passes the list of responses, which NumPy
		// compares element by element (the same result) unless re.sub or
		// Python's list == needs a str.
		s, ok := r[0].(string)
		if len(r) != 1 || !ok {
			return 0, fmt.Errorf("filtered response %s is not a string", pyStr(res))
		}
		if m.em.IgnoresRegexes() {
			return 0, errors.New("regexes_to_ignore on a response list (no take_first): lm-eval raises TypeError")
		}
		pred, isList = s, true
	case nil:
		return 0, errNoMapping
	default:
		return 0, fmt.Errorf("filtered response %s is not a string", pyStr(res))
	}
	if multi {
		golds, ok := gold.([]any)
		if !ok {
			golds = []any{gold}
		}
		if len(golds) == 0 {
			return 0, nil // the mean of nothing is nan, not > 0
		}
		refs := make([]string, len(golds))
		for i, g := range golds {
			s, ok := g.(string)
			if !ok {
				return 0, fmt.Errorf("target %s is not a string", pyStr(g))
			}
			refs[i] = s
		}
		if isList && m.em.ComparesLists() {
			return 0, nil
		}
		preds := make([]string, len(refs))
		for i := range preds {
			preds[i] = pred
		}
		v, err := m.em.ScoreIn(preds, refs, b)
		if err != nil {
			return 0, err
		}
		if v > 0 {
			return 1, nil
		}
		return 0, nil
	}
	var ref string
	switch g := gold.(type) {
	case string:
		ref = g
	default:
		if isList {
			return 0, fmt.Errorf("target %s is not a string and the response is a list (lm-eval compares them as unequal types)", pyStr(g))
		}
		ref = pyStr(g) // type(result)(gold): str(gold)
	}
	if isList && m.em.ComparesLists() {
		return 0, nil
	}
	return m.em.ScoreIn([]string{pred}, []string{ref}, b)
}
