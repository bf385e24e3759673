package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"tally/tasks/lmeval"
	"tally/tasks/variant"
)

// Name is the task's name (its stored key without the variant's digest).
func (td *TaskData) Name() string { return variant.Name(td.Task) }

// label is how tables name the task: its Label, else its name.
func (td *TaskData) label() string {
	if td.Label != "" {
		return td.Label
	}
	return td.Name()
}

// PromptsLost reports whether the store lacks some of the task's prompts
// (a variant an earlier tally's store held under a name whose prompts a
// later run replaced: tally/store's migration 7).
func (td *TaskData) PromptsLost() bool {
	return td.Variant != nil && td.Variant.Spec.Legacy != nil && !td.Variant.Spec.Legacy.Prompts
}

// NotStoredPrompt is what a sample shows for a prompt the store does not
// hold (TaskData.PromptsLost).
const NotStoredPrompt = "[prompt not stored: an earlier tally kept one prompt per task and sample id, and a later run with other settings replaced this one]"

// labelTasks gives each task its label and variant record (recs, by key),
// and, when its config is not known otherwise, what the record says of it.
func labelTasks(tds []*TaskData, recs map[string]variant.Record) {
	keys := make([]string, len(tds))
	for i, td := range tds {
		keys[i] = td.Task
	}
	labels := variant.Labels(keys, recs)
	for _, td := range tds {
		td.Label = labels[td.Task]
		if r, ok := recs[td.Task]; ok {
			td.Variant = &r
			if td.Info == nil {
				td.Info = infoOf(r)
			}
		}
	}
}

// infoOf is what a variant's record says of its task's config, for a
// report of the store alone (nil when it says nothing: an earlier tally's
// task).
func infoOf(r variant.Record) *TaskInfo {
	if r.Spec.Legacy != nil {
		return nil
	}
	str := func(field string) string {
		var s string
		_ = json.Unmarshal([]byte(r.Spec.Fields[field]), &s)
		return s
	}
	info := &TaskInfo{FewShot: r.Info.FewShot, Version: r.Info.Version, Data: r.Info.Paths["data"], Description: str("description"),
		Prompt: str("prompt"), Target: str("target"), FewShotSeparator: str("fewshot_separator")}
	if _, lm := r.Spec.Fields["doc_to_text"]; lm {
		// An lm-eval task: its config as its fields give it.
		info.LMEvalConfig = map[string]any{}
		for _, k := range slices.Sorted(maps.Keys(r.Spec.Fields)) {
			var v any
			if json.Unmarshal([]byte(r.Spec.Fields[k]), &v) == nil {
				info.LMEvalConfig[k] = v
			}
		}
		info.Prompt, info.Target, info.Description = "", "", ""
		info.OwnSetting, info.Filters = lmeval.UntilSetting, map[string][]map[string]any{}
		var fl []struct {
			Name   string           `json:"name"`
			Filter []map[string]any `json:"filter"`
		}
		if json.Unmarshal([]byte(r.Spec.Fields["filter_list"]), &fl) == nil {
			for _, f := range fl {
				info.Filters[f.Name] = f.Filter
			}
		}
		var err error
		if info.LMEval, err = lmevalTaskOf(r); err != nil {
			info.Unread = err.Error()
		}
		if info.LMEval != nil {
			info.Version = info.LMEval.Version()
		}
	}
	return info
}

// lmevalTaskOf is the lm-eval task a variant's record was resolved from
// (its task file and --set), read again: nil and why when it no longer
// reads as that task (nil and no error for a task not read from a task
// file).
func lmevalTaskOf(r variant.Record) (*lmeval.Task, error) {
	spec := r.Info.TaskSpec
	if !strings.HasSuffix(spec, ".yaml") && !strings.HasSuffix(spec, ".yml") {
		return nil, nil
	}
	t, err := lmeval.Load(spec, r.Info.Set)
	if err == nil && t.Name() == r.Spec.Task {
		return t, nil
	}
	ts, gerr := lmeval.LoadGroup(spec, r.Info.Set)
	if gerr == nil {
		for _, t := range ts {
			if t.Name() == r.Spec.Task {
				return t, nil
			}
		}
	}
	if err == nil {
		err = fmt.Errorf("%s no longer holds task %s", spec, r.Spec.Task)
	}
	return nil, err
}
