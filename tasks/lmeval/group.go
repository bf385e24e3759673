package lmeval

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
)

// groupFields are GroupConfig's fields (lm_eval/config/group.py); a group
// file's other keys are overrides applied to each of its tasks.
var groupFields = map[string]bool{"group": true, "group_alias": true, "task": true, "aggregate_metric_list": true, "metadata": true}

// index maps the names found under a folder to their files, as lm-eval's
// TaskIndex does: tasks by task name, groups by group name, tags to the
// tasks that carry them.
type index struct {
	tasks, groups map[string]string
	tags          map[string][]string
}

// walkTaskFiles calls fn with every *.yaml file under dir, as lm-eval's
// TaskIndex walks a tasks folder (skipping __pycache__ and
// .ipynb_checkpoints).
func walkTaskFiles(dir string, fn func(path string) error) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "__pycache__" || d.Name() == ".ipynb_checkpoints" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(d.Name(), ".yaml") {
			return nil
		}
		return fn(path)
	})
}

func buildIndex(dir string) (*index, error) {
	ix := &index{tasks: map[string]string{}, groups: map[string]string{}, tags: map[string][]string{}}
	err := walkTaskFiles(dir, func(path string) error {
		raw, err := loadTaskFile(path)
		if err != nil {
			return nil // lm-eval skips what it cannot read
		}
		if g, ok := mustGet(raw, "group").(string); ok {
			if _, dup := ix.groups[g]; !dup {
				ix.groups[g] = path
			}
			return nil
		}
		name, ok := mustGet(raw, "task").(string)
		if !ok {
			return nil
		}
		if _, dup := ix.tasks[name]; dup {
			return nil
		}
		ix.tasks[name] = path
		switch t := mustGet(raw, "tag").(type) {
		case string:
			ix.tags[t] = append(ix.tags[t], name)
		case []any:
			for _, e := range t {
				if s, ok := e.(string); ok {
					ix.tags[s] = append(ix.tags[s], name)
				}
			}
		}
		return nil
	})
	return ix, err
}

// IsGroupFile reports whether a YAML document is an lm-eval group file.
func IsGroupFile(data []byte) bool {
	keys, ok := topKeys(data)
	return ok && keys["group"]
}

// LoadGroup reads an lm-eval group file and returns its tasks, as
// lm-eval's TaskFactory builds a group: each member named in its task
// list (a task, a tag's tasks in name order, or a nested group, found by
// name among the *.yaml files under the group file's folder; or a task or
// group written inline), with the group's own task-level keys and a
// member's keys applied as overrides, then set. A task reached twice is
// loaded once.
func LoadGroup(path string, set map[string]string) ([]*Task, error) {
	raw, err := loadTaskFile(path)
	if err != nil {
		return nil, err
	}
	ix, err := buildIndex(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", filepath.Dir(path), err)
	}
	g := &grouper{ix: ix, set: set, seen: map[string]bool{}, root: path}
	name, _ := mustGet(raw, "group").(string)
	if err := g.group(name, raw, nil, 0); err != nil {
		return nil, err
	}
	if len(g.out) == 0 {
		return nil, fmt.Errorf("lm-eval group %s (%s): no tasks", name, path)
	}
	return g.out, nil
}

type grouper struct {
	ix   *index
	set  map[string]string
	seen map[string]bool
	out  []*Task
	root string
}

func (g *grouper) group(name string, raw *Map, overrides *Map, depth int) error {
	if depth > 16 {
		return fmt.Errorf("lm-eval group %s: groups nested too deep (a cycle?)", name)
	}
	merged := NewMap()
	for _, k := range raw.Keys {
		if !groupFields[k] {
			merged.Set(k, raw.Vals[k])
		}
	}
	if overrides != nil {
		for _, k := range overrides.Keys {
			merged.Set(k, overrides.Vals[k])
		}
	}
	var members []any
	switch t := mustGet(raw, "task").(type) {
	case string:
		members = []any{t}
	case []any:
		members = t
	}
	for _, m := range members {
		if err := g.member(name, m, merged, depth); err != nil {
			return err
		}
	}
	return nil
}

func (g *grouper) member(group string, m any, overrides *Map, depth int) error {
	switch x := m.(type) {
	case string:
		switch {
		case g.ix.groups[x] != "":
			raw, err := loadTaskFile(g.ix.groups[x])
			if err != nil {
				return err
			}
			return g.group(x, raw, overrides, depth+1)
		case g.ix.tasks[x] != "":
			return g.task(g.ix.tasks[x], x, overrides)
		case len(g.ix.tags[x]) > 0:
			names := append([]string(nil), g.ix.tags[x]...)
			sort.Strings(names)
			for _, n := range names {
				if err := g.task(g.ix.tasks[n], n, overrides); err != nil {
					return err
				}
			}
			return nil
		}
		return fmt.Errorf("lm-eval group %s: member %s is no task, tag or group under %s", group, x, filepath.Dir(g.root))
	case *Map:
		item := NewMap()
		for _, k := range overrides.Keys {
			item.Set(k, overrides.Vals[k])
		}
		if name, ok := mustGet(x, "group").(string); ok {
			for _, k := range x.Keys {
				if k != "group" {
					item.Set(k, x.Vals[k])
				}
			}
			if p := g.ix.groups[name]; p != "" {
				raw, err := loadTaskFile(p)
				if err != nil {
					return err
				}
				return g.group(name, raw, item, depth+1)
			}
			return g.group(group+"::"+name, x, overrides, depth+1)
		}
		name, ok := mustGet(x, "task").(string)
		if !ok {
			return fmt.Errorf("lm-eval group %s: a member has neither task nor group", group)
		}
		for _, k := range x.Keys {
			item.Set(k, x.Vals[k])
		}
		if p := g.ix.tasks[name]; p != "" {
			return g.task(p, name, item)
		}
		item.Set("task", group+"::"+name)
		return g.inline(item)
	}
	return fmt.Errorf("lm-eval group %s: member %s is not a name or a mapping", group, pyStr(m))
}

// task loads a member task file with overrides, then --set.
func (g *grouper) task(path, name string, overrides *Map) error {
	if g.seen[name] {
		return nil
	}
	g.seen[name] = true
	raw, err := loadTaskFile(path)
	if err != nil {
		return err
	}
	for _, k := range overrides.Keys {
		raw.Set(k, overrides.Vals[k])
	}
	t, err := fromRaw(path, raw, g.set)
	if err != nil {
		return err
	}
	g.out = append(g.out, t)
	return nil
}

// inline builds a task written inside the group file.
func (g *grouper) inline(raw *Map) error {
	name, _ := mustGet(raw, "task").(string)
	if g.seen[name] {
		return nil
	}
	g.seen[name] = true
	t, err := fromRaw(g.root, raw, g.set)
	if err != nil {
		return err
	}
	g.out = append(g.out, t)
	return nil
}
