package lmeval

import (
	"fmt"
	"unicode/utf8"

	"tally/internal/pyre"
)

// This file holds what lm-eval's own sample and results files write of a
// task that tally's writer (tally/report) cannot know from the samples
// alone: the generation kwargs each request carried, and each filter's
// output as the samples file writes it.

// GenerationKwargs is the generation kwargs each request of the task
// carries, as lm-eval's samples file writes them (arguments' arg_1):
// generation_kwargs as the task file gives it, after TaskConfig's
// __post_init__ (lm_eval/config/task.py): temperature made a float, until
// added (the few-shot delimiter) when absent; default_gen_kwargs
// (temperature 0.0, do_sample false, max_gen_toks 256, until the few-shot
// delimiter) when the file gives none.
func (t *Task) GenerationKwargs() *Map {
	if t.c.genKwargs == nil || t.c.genKwargs.Len() == 0 {
		if v, ok := t.c.raw.Get("generation_kwargs"); !ok || v == nil {
			out := NewMap()
			out.Set("temperature", 0.0)
			out.Set("do_sample", false)
			out.Set("max_gen_toks", int64(256))
			out.Set("until", []any{t.c.fewshotDelim})
			return out
		}
	}
	out := t.c.genKwargs.Clone()
	if v, ok := out.Get("temperature"); ok {
		if f, isNum := number(v); isNum {
			out.Set("temperature", f)
		}
	}
	if _, ok := out.Get("until"); !ok {
		out.Set("until", []any{t.c.fewshotDelim})
	}
	return out
}

// FilteredResponse is what lm-eval's samples file writes as a line's
// filtered_resps entry for a response to a document (its JSON; nil when
// not known) under the named filter pipeline: the pipeline's output, made
// a string as sanitize_list does (str(): a list or a mapped value by its
// Python repr).
func (t *Task) FilteredResponse(filter, resp string, docJSON []byte) (string, error) {
	v, err := t.FilteredValue(filter, resp, docJSON)
	if err != nil {
		return "", err
	}
	return pyStr(v), nil
}

// FilteredValue is the filter pipeline's output for a response to a
// document as Python holds it: a str after take_first, else the list of
// the document's responses (which lm-eval's samples file writes as a
// list).
func (t *Task) FilteredValue(filter, resp string, docJSON []byte) (any, error) {
	var doc *Map
	if len(docJSON) > 0 {
		if v, err := decodeJSON(docJSON); err == nil {
			doc, _ = v.(*Map)
		}
	}
	for _, f := range t.c.filters {
		if f.name != filter {
			continue
		}
		out, err := f.apply(resp, doc, pyre.NewBudget(utf8.RuneCountInString(resp)+utf8.RuneCount(docJSON)))
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, fmt.Errorf("task %s has no filter %q", t.c.task, filter)
}

// PyStr is Python's str() of a value a task's document or target holds
// (a string as it is; a list, number or None by its repr), as lm-eval's
// files write a target.
func PyStr(v any) string { return pyStr(v) }

// VersionOrYaml is the task's version as lm-eval's results file writes it
// (versions[task], task.VERSION): metadata.version, else ConfigurableTask's
// "Yaml".
func (t *Task) VersionOrYaml() any {
	if t.c.version != nil {
		return t.c.version
	}
	return "Yaml"
}

// ExplicitZeroShot reports whether the task file sets num_fewshot: 0,
// which lm-eval's --num_fewshot never overrides.
func (t *Task) ExplicitZeroShot() bool { return t.zeroShot }

// taskConfigFields are TaskConfig's dataclass fields in their order
// (lm_eval/config/task.py): TaskConfig.to_dict() writes them so, less
// those that are None.
var taskConfigFields = []string{"task", "task_alias", "tag", "custom_dataset", "dataset_path", "dataset_name", "dataset_kwargs",
	"training_split", "validation_split", "test_split", "fewshot_split", "process_docs", "doc_to_text", "doc_to_target",
	"doc_to_image", "doc_to_audio", "unsafe_code", "doc_to_choice", "process_results", "use_prompt", "description",
	"target_delimiter", "fewshot_delimiter", "fewshot_config", "num_fewshot", "metric_list", "output_type",
	"generation_kwargs", "repeats", "filter_list", "should_decontaminate", "doc_to_decontamination_query", "gen_prefix",
	"metadata"}

// fewshotConfigFields are FewshotConfig's dataclass fields in their order.
var fewshotConfigFields = []string{"sampler", "split", "process_docs", "fewshot_indices", "samples", "doc_to_text",
	"doc_to_choice", "doc_to_target", "gen_prefix", "fewshot_delimiter", "target_delimiter"}

// ConfigSourceInline is the config_source lm-eval's task factory records
// for a task given as a file path on its command line (a config it loaded
// itself, not an entry of its task index).
const ConfigSourceInline = "inline"

// ToDict is the task's configuration as lm-eval's results file writes it
// (configs[task]: ConfigurableTask.dump_config(), TaskConfig.to_dict()):
// every TaskConfig field in the dataclass's order, None dropped, the
// defaults filled in (unsafe_code False, description "", target_delimiter
// " ", fewshot_delimiter "\n\n", output_type generate_until, repeats 1,
// should_decontaminate False), num_fewshot as simple_evaluate leaves it,
// generation_kwargs after __post_init__ (GenerationKwargs), fewshot_config
// as the FewshotConfig dataclass's dict (its None fields kept: asdict of a
// nested dataclass) and metadata as lm_eval/tasks/_factory.py
// _load_full_config leaves it: the file's metadata (a non-mapping under
// "_metadata"), then runtime (the command line's model arguments and
// --metadata, which lm-eval merges into every task's), then config_source.
// tag, group and task_list are what the factory removes before building
// the task, so they are not written.
func (t *Task) ToDict(runtime *Map, configSource string) *Map {
	raw := t.c.raw
	get := func(k string) (any, bool) {
		v, ok := raw.Get(k)
		return v, ok && v != nil
	}
	defaults := map[string]any{"unsafe_code": false, "description": "", "target_delimiter": " ", "fewshot_delimiter": "\n\n",
		"output_type": "generate_until", "repeats": int64(1), "should_decontaminate": false}
	out := NewMap()
	for _, k := range taskConfigFields {
		switch k {
		case "tag":
			continue
		case "fewshot_config":
			out.Set(k, t.fewshotDict())
			continue
		case "num_fewshot":
			out.Set(k, int64(t.c.numFewshot))
			continue
		case "generation_kwargs":
			out.Set(k, t.GenerationKwargs())
			continue
		case "metadata":
			md := NewMap()
			if v, ok := get(k); ok {
				if m, isMap := v.(*Map); isMap {
					md = m.Clone()
				} else {
					md.Set("_metadata", cloneValue(v))
				}
			}
			if runtime != nil {
				for _, rk := range runtime.Keys {
					md.Set(rk, cloneValue(runtime.Vals[rk]))
				}
			}
			md.Set("config_source", configSource)
			out.Set(k, md)
			continue
		}
		if v, ok := get(k); ok {
			if f, isFn := v.(Function); isFn {
				// serialize_function: the function's source, else str().
				out.Set(k, t.hookText(f, true))
				continue
			}
			if list, isList := v.([]any); isList && k == "metric_list" {
				// to_dict serialises a metric's callables too.
				ml := make([]any, len(list))
				for i, e := range list {
					em, isMap := e.(*Map)
					if !isMap {
						ml[i] = cloneValue(e)
						continue
					}
					c := em.Clone()
					for _, mk := range c.Keys {
						if f, isFn := c.Vals[mk].(Function); isFn {
							c.Vals[mk] = t.hookText(f, true)
						}
					}
					ml[i] = c
				}
				out.Set(k, ml)
				continue
			}
			if k == "filter_list" {
				// A filter's callable (a bridged class or filter_fn) is
				// nested: json.dumps' default writes str() of it.
				out.Set(k, t.nestedHooks(v))
				continue
			}
			out.Set(k, cloneValue(v))
		} else if d, ok := defaults[k]; ok {
			out.Set(k, d)
		}
	}
	return out
}

// fewshotDict is FewshotConfig.from_dict(fewshot_config or {}, ...) as
// asdict writes it: each field the task's own (split from fewshot_split,
// the formatting fields, the delimiters) unless fewshot_config gives it,
// sampler "default" when unset.
func (t *Task) fewshotDict() *Map {
	raw := t.c.raw
	fd := map[string]any{
		"split": mustGet(raw, "fewshot_split"), "process_docs": mustGet(raw, "process_docs"),
		"fewshot_delimiter": t.c.fewshotDelim, "target_delimiter": t.c.targetDelim, "gen_prefix": mustGet(raw, "gen_prefix"),
		"doc_to_text": mustGet(raw, "doc_to_text"), "doc_to_choice": mustGet(raw, "doc_to_choice"),
		"doc_to_target": mustGet(raw, "doc_to_target"),
	}
	if fc, ok := mustGet(raw, "fewshot_config").(*Map); ok {
		for _, k := range fc.Keys {
			fd[k] = fc.Vals[k]
		}
	}
	if _, ok := fd["sampler"]; !ok {
		fd["sampler"] = "default"
	}
	out := NewMap()
	for _, k := range fewshotConfigFields {
		if f, isFn := fd[k].(Function); isFn {
			// asdict leaves a nested callable as it is; json.dumps' default
			// (handle_non_serializable) writes str() of it.
			out.Set(k, t.hookText(f, false))
			continue
		}
		out.Set(k, cloneValue(fd[k]))
	}
	return out
}

// hookText is how lm-eval's results file writes a ported function of the
// config: at the top level (serialize_function) its source, or for a
// partial its str(); nested (fewshot_config) its str().
func (t *Task) hookText(f Function, top bool) string {
	h := t.c.hooks[f]
	if h == nil {
		return f.String()
	}
	if top {
		return h.serialized()
	}
	return h.repr
}

// nestedHooks copies v with each !function in it as str() of its
// callable.
func (t *Task) nestedHooks(v any) any {
	switch x := v.(type) {
	case Function:
		return t.hookText(x, false)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = t.nestedHooks(e)
		}
		return out
	case *Map:
		out := NewMap()
		for _, k := range x.Keys {
			out.Set(k, t.nestedHooks(x.Vals[k]))
		}
		return out
	}
	return cloneValue(v)
}

// TaskConfigFields are TaskConfig's fields in the dataclass's order, as
// TaskConfig.to_dict() writes them.
func TaskConfigFields() []string { return append([]string(nil), taskConfigFields...) }

// ResultValues is what a task with a process_results function (a ported
// one) gives for a response to a document (its JSON) under a filter
// pipeline: the metric values in its order, ints and floats as the
// Python function gives them, as lm-eval's samples file writes each
// line's metric values; nil when the task has no process_results.
func (t *Task) ResultValues(filter, resp string, docJSON []byte) (*Map, error) {
	h := t.c.processResults
	if h == nil {
		return nil, nil
	}
	v, err := decodeJSON(docJSON)
	if err != nil {
		return nil, fmt.Errorf("document: %w", err)
	}
	doc, ok := v.(*Map)
	if !ok {
		return nil, fmt.Errorf("the document is not a mapping")
	}
	for _, f := range t.c.filters {
		if f.name != filter {
			continue
		}
		res, err := f.apply(resp, doc, pyre.NewBudget(utf8.RuneCountInString(resp)+utf8.RuneCount(docJSON)))
		if err != nil {
			return nil, err
		}
		return h.results(doc, []any{res})
	}
	return nil, fmt.Errorf("task %s has no filter %q", t.c.task, filter)
}
