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
// filtered_resps entry for a response under the named filter pipeline:
// the pipeline's output, made a string as sanitize_list does (str(): a
// list or a mapped value by its Python repr).
func (t *Task) FilteredResponse(filter, resp string) (string, error) {
	for _, f := range t.c.filters {
		if f.name != filter {
			continue
		}
		out, err := f.apply(resp, pyre.NewBudget(utf8.RuneCountInString(resp)))
		if err != nil {
			return "", err
		}
		return pyStr(out), nil
	}
	return "", fmt.Errorf("task %s has no filter %q", t.c.task, filter)
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
