package lmeval

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
)

// Entry is one YAML file of a survey.
type Entry struct {
	// File is the path relative to the surveyed folder.
	File string
	// Task is the task (or group) name, when the file names one.
	Task string
	// Status is "loads", or why not: "refused", "group", "python task",
	// "output_type: X", "not a task file", "unreadable".
	Status string
	// Reason is the refusal's kind (for grouping) and Message its line.
	Reason, Message string
}

// Survey is what `tally tasks --lm-eval DIR` reports.
type Survey struct {
	Dir     string
	Entries []Entry
}

// SurveyDir reads every *.yaml file under dir (as lm-eval's TaskIndex
// walks a tasks folder, skipping __pycache__ and .ipynb_checkpoints) and
// tells which generate_until tasks tally loads and, for the others, why
// not. No data is read: a template that fails only on a document is
// found when the task runs.
func SurveyDir(dir string) (*Survey, error) { return survey(dir, false) }

// SurveyDirBridged is SurveyDir with the Python bridge on (UsePython):
// a !function tally has no Go port of counts as loading when its module
// file is there and the bridge runs that kind of function. No Python
// runs: whether the module imports (its own imports installed) is found
// when the task loads.
func SurveyDirBridged(dir string) (*Survey, error) { return survey(dir, true) }

func survey(dir string, bridged bool) (*Survey, error) {
	if bridged {
		defer surveyWithBridge()()
	}
	sv := &Survey{Dir: dir}
	err := walkTaskFiles(dir, func(path string) error {
		rel, _ := filepath.Rel(dir, path)
		sv.Entries = append(sv.Entries, surveyFile(path, rel))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("survey %s: %w", dir, err)
	}
	sort.Slice(sv.Entries, func(i, j int) bool { return sv.Entries[i].File < sv.Entries[j].File })
	return sv, nil
}

func surveyFile(path, rel string) Entry {
	e := Entry{File: rel}
	raw, err := loadTaskFile(path)
	if err != nil {
		e.Status, e.Reason, e.Message = "unreadable", "unreadable YAML or include", oneLine(err.Error())
		return e
	}
	name, _ := mustGet(raw, "task").(string)
	if g, ok := mustGet(raw, "group").(string); ok && name == "" {
		name = g
	}
	e.Task = name
	_, hasClass := raw.Get("class")
	_, hasGroup := raw.Get("group")
	_, hasTask := raw.Get("task")
	switch {
	case hasClass:
		e.Status, e.Reason = "python task", "class (a Python task)"
		return e
	case hasGroup:
		e.Status, e.Reason = "group", "group file"
		return e
	case !hasTask:
		e.Status, e.Reason = "not a task file", "no task, group or class"
		return e
	}
	if ot, ok := mustGet(raw, "output_type").(string); ok && ot != "generate_until" {
		e.Status, e.Reason = "output_type: "+ot, "output_type: "+ot
		return e
	}
	if _, err := parseConfig(rel, raw); err != nil {
		var r *Refusal
		if errors.As(err, &r) {
			e.Status, e.Reason, e.Message = "refused", reasonKey(r), err.Error()
		} else {
			e.Status, e.Reason, e.Message = "refused", "error", oneLine(err.Error())
		}
		return e
	}
	e.Status = "loads"
	return e
}

// reasonKey groups refusals: the kind, and for a !function the field.
func reasonKey(r *Refusal) string {
	if r.Kind == "!function" {
		f, _, _ := strings.Cut(r.Field, ".")
		f, _, _ = strings.Cut(f, "[")
		return "!function in " + f
	}
	return r.Kind
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Counts returns, for the generate_until task files, how many load and
// how many are refused by each reason; and the other files by status.
func (sv *Survey) Counts() (loads int, refused, others map[string]int) {
	refused, others = map[string]int{}, map[string]int{}
	for _, e := range sv.Entries {
		switch e.Status {
		case "loads":
			loads++
		case "refused":
			refused[e.Reason]++
		default:
			others[e.Status]++
		}
	}
	return loads, refused, others
}

// Write prints every file's status, then the counts.
func (sv *Survey) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "file\ttask\tstatus")
	for _, e := range sv.Entries {
		status := e.Status
		if e.Status == "refused" {
			status = "refused: " + strings.TrimPrefix(e.Message, "lm-eval task "+e.File+": ")
		} else if e.Status == "unreadable" {
			status = "unreadable: " + e.Message
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.File, e.Task, status)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	loads, refused, others := sv.Counts()
	total := loads
	for _, n := range refused {
		total += n
	}
	fmt.Fprintf(w, "\n%d YAML files under %s; %d generate_until task files: %d load, %d refused\n", len(sv.Entries), sv.Dir, total, loads, total-loads)
	writeCounts(w, "refused, by reason", refused)
	writeCounts(w, "not generate_until task files", others)
	return nil
}

func writeCounts(w io.Writer, title string, m map[string]int) {
	if len(m) == 0 {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	fmt.Fprintf(w, "%s:\n", title)
	for _, k := range keys {
		fmt.Fprintf(w, "  %6d  %s\n", m[k], k)
	}
}
