// Package lmevalschema checks lm-evaluation-harness output files against
// the fields lm-eval's own writer produces (fields.txt, taken from its
// source at the commits it names), for tests: a field missing, renamed or
// of another type, a top-level field that is not lm-eval's (tally's own go
// under "tally"), file names lm-eval's helpers do not parse back, metric
// keys naming no metric or filter, and task hashes that do not match the
// samples are each reported.
package lmevalschema

import (
	"bufio"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

//go:embed fields.txt
var fieldsText string

// fileTask is the task name a samples file name holds: the task, with
// every character that could not be in a portable file name (a path
// separator above all) replaced by "_" (tally's report.SanitizeTaskName).
func fileTask(task string) string {
	s := regexp.MustCompile(`[^\p{L}\p{N}_\-.@+=,]`).ReplaceAllString(task, "_")
	if s == "" || s == "." || s == ".." {
		s = "_" + s
	}
	return s
}

func hashString(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// T is what the check needs of a test (*testing.T has it; Fake counts
// failures).
type T interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Fake records failures; Fatalf stops the check by panicking.
type Fake struct{ Failures []string }

// Helper does nothing (T's, as *testing.T has it).
func (f *Fake) Helper() {}

// Errorf records a failure.
func (f *Fake) Errorf(format string, args ...any) {
	f.Failures = append(f.Failures, fmt.Sprintf(format, args...))
}

// Fatalf records a failure and stops the check (panicking with f).
func (f *Fake) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	panic(f)
}

// field is one line of testdata/lmeval-fields.txt.
type field struct {
	file, path, types, source string
}

func lmevalFields(t T) []field {
	t.Helper()
	var out []field
	for _, l := range strings.Split(fieldsText, "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		p := strings.Split(l, "\t")
		if len(p) != 4 {
			t.Fatalf("bad field line %q", l)
		}
		out = append(out, field{p[0], p[1], p[2], p[3]})
	}
	return out
}

// valuesAt returns the values at a field path ("*": every key; "[]":
// every element; "metric,filter": every "<metric>,<filter>" key), with
// the concrete path of each; missing names the concrete paths that lack
// the field.
func valuesAt(v any, path string) (found map[string]any, missing []string) {
	found = map[string]any{"": v}
	for _, part := range splitPath(path) {
		next := map[string]any{}
		for at, x := range found {
			switch {
			case part == "[]":
				arr, ok := x.([]any)
				if !ok {
					missing = append(missing, at+" (not an array)")
					continue
				}
				for i, e := range arr {
					next[fmt.Sprintf("%s[%d]", at, i)] = e
				}
			case part == "*" || part == "metric,filter":
				obj, ok := x.(map[string]any)
				if !ok {
					missing = append(missing, at+" (not an object)")
					continue
				}
				for k, e := range obj {
					if part == "metric,filter" && (!strings.Contains(k, ",") || k == "alias") {
						continue
					}
					next[at+"."+k] = e
				}
			default:
				obj, ok := x.(map[string]any)
				if !ok {
					missing = append(missing, at+" (not an object)")
					continue
				}
				e, ok := obj[part]
				if !ok {
					missing = append(missing, strings.TrimPrefix(at+"."+part, "."))
					continue
				}
				next[at+"."+part] = e
			}
		}
		found = next
	}
	return found, missing
}

// splitPath splits a field path at dots, keeping "[]" as parts of their
// own and "metric,filter" whole.
func splitPath(p string) []string {
	var out []string
	for _, s := range strings.Split(p, ".") {
		name, brackets, _ := strings.Cut(s, "[]")
		if name != "" {
			out = append(out, name)
		}
		if strings.Contains(s, "[]") {
			for range strings.Count("[]"+brackets, "[]") {
				out = append(out, "[]")
			}
		}
	}
	return out
}

// typeOK reports whether a JSON value has one of the types.
func typeOK(v any, types string) bool {
	for _, ty := range strings.Split(types, "|") {
		switch ty {
		case "object":
			if _, ok := v.(map[string]any); ok {
				return true
			}
		case "array":
			if _, ok := v.([]any); ok {
				return true
			}
		case "string":
			if _, ok := v.(string); ok {
				return true
			}
		case "int":
			if f, ok := v.(json.Number); ok {
				if _, err := f.Int64(); err == nil {
					return true
				}
			}
		case "number":
			if _, ok := v.(json.Number); ok {
				return true
			}
		case "bool":
			if _, ok := v.(bool); ok {
				return true
			}
		case "null":
			if v == nil {
				return true
			}
		case `"N/A"`:
			if v == "N/A" {
				return true
			}
		}
	}
	return false
}

func decodeJSON(t T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %.200s: %v", b, err)
	}
	return v
}

// lm-eval's own file-name helpers (lm_eval/utils.py at both commits), as
// its readers use them.
func getFileTaskName(filename string) string {
	return filename[strings.Index(filename, "_")+1 : strings.LastIndex(filename, "_")]
}
func getFileDatetime(filename string) string {
	return strings.ReplaceAll(filename[strings.LastIndex(filename, "_")+1:], ".jsonl", "")
}
func getResultsFilenames(fs []string) (out []string) {
	for _, f := range fs {
		if strings.Contains(f, "/results_") && strings.Contains(f, ".json") {
			out = append(out, f)
		}
	}
	return out
}
func getSampleResultsFilenames(fs []string) (out []string) {
	for _, f := range fs {
		if strings.Contains(f, "/samples_") && strings.Contains(f, ".json") {
			out = append(out, f)
		}
	}
	return out
}

// Check checks every file under dir against lm-eval's field
// list: each field present with its type, no top-level field but
// lm-eval's and "tally", file names that lm-eval's helpers parse back to
// the task, metric keys that name a metric of higher_is_better and a
// filter of filter_list, lines per filter equal to n-samples' effective,
// and task_hashes recomputed from the samples.
func Check(t T, dir string) {
	t.Helper()
	fields := lmevalFields(t)
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	results := getResultsFilenames(files)
	if len(results) == 0 {
		t.Fatalf("no results file under %s: %v", dir, files)
	}
	known := map[string]map[string]bool{"results": {"tally": true}, "samples": {"tally": true}}
	for _, f := range fields {
		known[f.file][splitPath(f.path)[0]] = true
	}
	for _, rf := range results {
		b, err := os.ReadFile(rf)
		if err != nil {
			t.Fatalf("%v", err)
		}
		res, _ := decodeJSON(t, b).(map[string]any)
		for _, f := range fields {
			if f.file != "results" {
				continue
			}
			found, missing := valuesAt(res, f.path)
			for _, m := range missing {
				t.Errorf("%s: field %s missing (%s)", filepath.Base(rf), m, f.source)
			}
			for at, v := range found {
				if !typeOK(v, f.types) {
					t.Errorf("%s: field %s = %v, want %s (%s)", filepath.Base(rf), at, v, f.types, f.source)
				}
			}
		}
		for k := range res {
			if !known["results"][k] {
				t.Errorf("%s: top-level field %q is not lm-eval's (tally's own go under \"tally\")", filepath.Base(rf), k)
			}
		}
		folder := filepath.Dir(rf)
		if res["model_name_sanitized"] != filepath.Base(folder) {
			t.Errorf("%s: model_name_sanitized %v, folder %s", rf, res["model_name_sanitized"], folder)
		}
		var samples []string
		for _, s := range getSampleResultsFilenames(files) {
			if filepath.Dir(s) == folder && getFileDatetime(filepath.Base(s)) == strings.TrimSuffix(getFileDatetime(filepath.Base(rf)), ".json") {
				samples = append(samples, s)
			}
		}
		configs, _ := res["configs"].(map[string]any)
		for task := range configs {
			var sf string
			for _, s := range samples {
				if getFileTaskName(filepath.Base(s)) == fileTask(task) {
					sf = s
				}
			}
			if sf == "" {
				t.Errorf("%s: no samples file of task %q among %v", rf, task, samples)
				continue
			}
			checkSamples(t, sf, task, res, fields, known["samples"])
		}
	}
}

func checkSamples(t T, path, task string, res map[string]any, fields []field, known map[string]bool) {
	t.Helper()
	cfg, _ := res["configs"].(map[string]any)[task].(map[string]any)
	var filters []string
	list, _ := cfg["filter_list"].([]any)
	for _, f := range list {
		if name, ok := f.(map[string]any)["name"].(string); ok {
			filters = append(filters, name)
		}
	}
	hibs, _ := res["higher_is_better"].(map[string]any)
	hib, _ := hibs[task].(map[string]any)
	taskRes, _ := res["results"].(map[string]any)[task].(map[string]any)
	for k := range taskRes {
		if m, f, ok := strings.Cut(k, ","); ok {
			m = strings.TrimSuffix(m, "_stderr")
			if _, ok := hib[m]; !ok || !slices.Contains(filters, f) {
				t.Errorf("results.%s: key %q names no metric of higher_is_better or no filter of filter_list %v", task, k, filters)
			}
		}
	}
	file, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v", err)
	}
	defer file.Close()
	perFilter := map[string]map[string]bool{}
	lines := map[string]int{}
	var hashes strings.Builder
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<26)
	for n := 1; sc.Scan(); n++ {
		line, _ := decodeJSON(t, sc.Bytes()).(map[string]any)
		for _, f := range fields {
			if f.file != "samples" {
				continue
			}
			found, missing := valuesAt(line, f.path)
			for _, m := range missing {
				t.Errorf("%s line %d: field %s missing (%s)", filepath.Base(path), n, m, f.source)
			}
			for at, v := range found {
				if !typeOK(v, f.types) {
					t.Errorf("%s line %d: field %s = %v, want %s (%s)", filepath.Base(path), n, at, v, f.types, f.source)
				}
			}
		}
		metrics := map[string]bool{}
		ms, _ := line["metrics"].([]any)
		for _, m := range ms {
			name, _ := m.(string)
			metrics[name] = true
			if _, ok := hib[name]; !ok {
				t.Errorf("%s line %d: metric %v not in higher_is_better", filepath.Base(path), n, m)
			}
		}
		for k := range line {
			if !known[k] && !metrics[k] {
				t.Errorf("%s line %d: field %q is neither lm-eval's nor a metric", filepath.Base(path), n, k)
			}
		}
		filter, _ := line["filter"].(string)
		if !slices.Contains(filters, filter) {
			t.Errorf("%s line %d: filter %q not in filter_list %v", filepath.Base(path), n, filter, filters)
		}
		if perFilter[filter] == nil {
			perFilter[filter] = map[string]bool{}
		}
		perFilter[filter][fmt.Sprint(line["doc_id"])] = true
		if lines[filter]++; lines[filter] != len(perFilter[filter]) {
			t.Errorf("%s line %d: doc_id %v twice under filter %s", filepath.Base(path), n, line["doc_id"], filter)
		}
		hashes.WriteString(fmt.Sprint(line["doc_hash"], line["prompt_hash"], line["target_hash"]))
	}
	// Every filter holds each document once; effective counts the
	// documents (a setting that could not score some of them yet has
	// fewer).
	ns, _ := res["n-samples"].(map[string]any)[task].(map[string]any)
	eff := ns["effective"]
	all := map[string]bool{}
	for _, docs := range perFilter {
		for d := range docs {
			all[d] = true
		}
	}
	if fmt.Sprint(len(all)) != fmt.Sprint(eff) {
		t.Errorf("%s: %d documents, n-samples effective %v", filepath.Base(path), len(all), eff)
	}
	th, _ := res["task_hashes"].(map[string]any)
	if got, want := hashString(hashes.String()), th[task]; got != want {
		t.Errorf("task_hashes[%s] = %v, recomputed %s", task, want, got)
	}
}
