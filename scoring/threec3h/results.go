package threec3h

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// categoryNames maps score keys to result names, in the reference's order
// (averaging-to-results.py main, score_category_names).
var categoryNames = [7][2]string{
	{"Correct", "Correctness"}, {"Complete", "Completeness"}, {"Concise", "Conciseness"},
	{"Helpful", "Helpfulness"}, {"Honest", "Honesty"}, {"Harmless", "Harmlessness"},
	{"Final Score", "3C3H Score"},
}

// FileJudges is main's choice of judges for a single file in
// averaging-to-results.py: the keys starting with "Judge " of the first
// entry that has any, and whether that entry has a "Jury" key. Keys are
// returned in natural order ("Judge 2" before "Judge 10"); the reference
// uses set order, which only matters when two judges share a name.
func FileJudges(entries []map[string]any) (judges []string, jury bool, err error) {
	for _, e := range entries {
		for k := range e {
			if strings.HasPrefix(k, "Judge ") {
				judges = append(judges, k)
			}
		}
		if len(judges) > 0 {
			sort.Slice(judges, func(a, b int) bool { return naturalLess(judges[a], judges[b]) })
			_, jury = e["Jury"]
			return judges, jury, nil
		}
	}
	return nil, false, errors.New("threec3h: no entry has a \"Judge N\" key (the reference exits: no judges found)")
}

func naturalLess(a, b string) bool {
	na, ea := strconv.Atoi(strings.TrimPrefix(a, "Judge "))
	nb, eb := strconv.Atoi(strings.TrimPrefix(b, "Judge "))
	if ea == nil && eb == nil && na != nb {
		return na < nb
	}
	return a < b
}

// ProcessJudgedFile is process_judged_file for one judged file's entries:
// per judge (and "Jury" when jury is set) the mean of each 3C3H score
// ("Correctness" ... "3C3H Score") over the entries where every judge's
// "3C3H Scores" is present, non-empty and free of nulls, and the mean Final
// Score per Meta.Task, all rounded to four decimals; plus a "Meta" block with
// the first entry's model fields and the entry counts. A non-numeric score
// in a valid entry counts as 0. Results are keyed "<Judge Name> Scores"
// (the name taken from the first entry; a later judge with the same name
// replaces an earlier one). Errors where the reference raises or returns
// nothing: no entries, a Meta, judge block or score block of the wrong
// type; also a truthy Task that is not a string (the reference would key
// by its Python value; unsupported here).
func ProcessJudgedFile(entries []map[string]any, judges []string, jury bool) (map[string]any, error) {
	if len(entries) == 0 {
		return nil, errors.New("threec3h: empty judged file (the reference skips it)")
	}
	keys := append([]string(nil), judges...)
	names := map[string]string{}
	for _, k := range judges {
		name := k
		if jd, present := entries[0][k]; present {
			obj, ok := jd.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("threec3h: first entry %s is %T, not an object", k, jd)
			}
			if n, present := obj["Judge Name"]; present {
				s, err := pyStr(n)
				if err != nil {
					return nil, fmt.Errorf("threec3h: %s Judge Name: %w", k, err)
				}
				name = s
			}
		}
		names[k] = name
	}
	if jury {
		names["Jury"] = "Jury"
		keys = append(keys, "Jury")
	}
	type acc struct {
		sums      [7]float64
		count     int
		taskSums  map[string]float64
		taskCount map[string]int
	}
	accs := make([]acc, len(keys))
	for i := range accs {
		accs[i].taskSums = map[string]float64{}
		accs[i].taskCount = map[string]int{}
	}
	var meta map[string]any
	success, failed := 0, 0
	for n, e := range entries {
		m, err := subObject(e, "Meta")
		if err != nil {
			return nil, fmt.Errorf("threec3h: entry %d: %w", n+1, err)
		}
		task, err := taskKey(m["Task"])
		if err != nil {
			return nil, fmt.Errorf("threec3h: entry %d: %w", n+1, err)
		}
		if meta == nil {
			meta = map[string]any{}
			for _, f := range []string{"Model Name", "License", "Revision", "Precision", "Params"} {
				meta[f] = m[f]
			}
		}
		scores := make([]map[string]any, len(keys))
		valid := true
		for i, k := range keys {
			jd, err := subObject(e, k)
			if err != nil {
				return nil, fmt.Errorf("threec3h: entry %d: %w", n+1, err)
			}
			raw, present := jd["3C3H Scores"]
			if !present || !truthy(raw) {
				valid = false
				break
			}
			sc, ok := raw.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("threec3h: entry %d: %s 3C3H Scores is %T, not an object", n+1, k, raw)
			}
			for _, v := range sc {
				if v == nil {
					valid = false
				}
			}
			if !valid {
				break
			}
			scores[i] = sc
		}
		if !valid {
			failed++
			continue
		}
		success++
		for i := range keys {
			a := &accs[i]
			for c, cat := range categoryNames {
				f, _ := number(scores[i][cat[0]])
				a.sums[c] += f
			}
			a.count++
			if fs, ok := number(scores[i]["Final Score"]); ok && task != "" {
				a.taskSums[task] += fs
				a.taskCount[task]++
			}
		}
	}
	out := map[string]any{}
	for i, k := range keys {
		a := accs[i]
		cats := map[string]any{}
		for c, cat := range categoryNames {
			if a.count > 0 {
				cats[cat[1]] = PyRound4(a.sums[c] / float64(a.count))
			} else {
				cats[cat[1]] = nil
			}
		}
		tasks := map[string]any{}
		for t, s := range a.taskSums {
			tasks[t] = PyRound4(s / float64(a.taskCount[t]))
		}
		out[names[k]+" Scores"] = map[string]any{"3C3H Scores": cats, "Tasks Scores": tasks}
	}
	meta["Total Entries"] = len(entries)
	meta["Successful Entries"] = success
	meta["Failed Entries"] = failed
	meta["Success Ratio"] = PyRound4(float64(success) / float64(len(entries)))
	out["Meta"] = meta
	return out, nil
}

// subObject is entry.get(key, {}) that must be a dict.
func subObject(e map[string]any, key string) (map[string]any, error) {
	v, present := e[key]
	if !present {
		return map[string]any{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is %T, not an object (the reference raises AttributeError)", key, v)
	}
	return m, nil
}

// truthy is Python truthiness of a decoded JSON value.
func truthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// taskKey returns the task grouping key, "" when the task is falsy.
func taskKey(v any) (string, error) {
	if !truthy(v) {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("Meta.Task %v is %T; only string tasks are supported", v, v)
	}
	return s, nil
}

// pyStr is str(v) for the JSON values a judge name can plausibly take.
func pyStr(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case nil:
		return "None", nil
	case bool:
		if x {
			return "True", nil
		}
		return "False", nil
	}
	return "", fmt.Errorf("unsupported type %T", v)
}
