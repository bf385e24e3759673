package tasks

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// lmEvalFields maps lm-evaluation-harness's names for task fields onto
// tally's, for the hint of an unknown --set key.
var lmEvalFields = map[string]string{
	"num_fewshot": "fewshot", "fewshot_delimiter": "fewshot_separator", "until": "stop",
	"max_gen_toks": "max_tokens", "generation_kwargs": "stop and max_tokens", "metric_list": "metrics",
	"doc_to_text": "prompt", "doc_to_target": "target", "dataset_path": "data",
}

// Fields lists the task config fields --set may override, sorted.
func Fields() []string { return slices.Sorted(maps.Keys(fieldTypes())) }

// fieldTypes maps each task config field's YAML name to its Go type.
func fieldTypes() map[string]reflect.Type {
	t := reflect.TypeFor[Config]()
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); tag != "" && tag != "-" {
			out[tag] = t.Field(i).Type
		}
	}
	return out
}

// checkSet refuses a --set key that is no task field, naming the fields
// (and tally's name for an lm-eval field), and a value that is not of the
// field's type, naming the type.
func checkSet(set map[string]string) error {
	fields := fieldTypes()
	for _, k := range slices.Sorted(maps.Keys(set)) {
		ft, ok := fields[k]
		if !ok {
			hint := ""
			if name, ok := lmEvalFields[k]; ok {
				hint = fmt.Sprintf(" (lm-eval's %s is tally's %s)", k, name)
			}
			return fmt.Errorf("--set %s: not a task field%s; the fields are %s", k, hint, strings.Join(Fields(), ", "))
		}
		if err := yaml.Unmarshal([]byte(set[k]), reflect.New(ft).Interface()); err != nil {
			return fmt.Errorf("--set %s=%s: want %s", k, set[k], typeName(ft))
		}
	}
	return nil
}

// typeName says what a field of type t holds, in a user's words.
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Uint64:
		return "a whole number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "a YAML list, e.g. [1, 2]"
	case reflect.Map:
		return `a YAML mapping, e.g. {nl: ["\n"]}`
	}
	return "a string"
}
