package lmeval

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"tally/internal/fsguard"
)

// The plain-scalar resolvers of PyYAML (YAML 1.1), which lm-eval's loader
// uses: "yes"/"on" are booleans, a float needs a dot, "0o" is not octal
// but a leading 0 is.
var (
	yamlBool  = regexp.MustCompile(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`)
	yamlInt   = regexp.MustCompile(`^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`)
	yamlFloat = regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`)
	yamlNull  = regexp.MustCompile(`^(?:~|null|Null|NULL|)$`)
)

// parseYAML reads a YAML document as PyYAML's loader (with lm-eval's
// !function constructor) reads it, within a budget of its own.
func parseYAML(data []byte, name string) (any, error) {
	v, _, err := parseYAMLIn(data, name, "", &loadBudget{})
	return v, err
}

// The bounds of one task file's load: the file and everything it reaches
// through includes and YAML aliases. Each file is read once per load.
const (
	// maxTaskFile is the most tally reads of one task file (included or
	// not): lm-eval's own largest is 62 KB, and parsing a megabyte of
	// YAML takes about 100 MB.
	maxTaskFile = 1 << 20
	// maxTaskRead is the most tally reads of all the files of one load.
	maxTaskRead = 16 << 20
	// maxTaskExpanded is the most the values of one load may expand to,
	// every YAML alias expanded where it is used: each value counts its
	// text (a key's or a scalar's) and valueCost bytes.
	maxTaskExpanded = 16 << 20
	valueCost       = 16
	// maxTaskMerges bounds the keys merged from included files, once
	// per include listed (a file listing one include many times).
	maxTaskMerges = 1 << 20
)

// loadBudget is what one load has used of its bounds.
type loadBudget struct {
	read, expanded, merges int64
}

// errTooLarge is wrapped by the errors of a load past a bound.
var errTooLarge = errors.New("past tally's bound")

// yamlError is an error in a YAML document: its line (0 when unknown),
// and a message that may quote the document.
type yamlError struct {
	name string
	line int
	msg  string
}

func (e *yamlError) Error() string {
	if e.line > 0 {
		return fmt.Sprintf("read %s line %d: %s", e.name, e.line, e.msg)
	}
	return fmt.Sprintf("read %s: %s", e.name, e.msg)
}

// yamlLine finds the line yaml.v3 names in its errors ("yaml: line 3: …").
var yamlLine = regexp.MustCompile(`line (\d+)`)

// parseYAMLIn is parseYAML charging the budget b; it also returns the
// line of each top-level key of a mapping.
func parseYAMLIn(data []byte, name, dir string, b *loadBudget) (any, map[string]int, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		line := 0
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			line, _ = strconv.Atoi(m[1])
		}
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLine.FindStringSubmatch(msg); m != nil && strings.HasPrefix(msg, m[0]+": ") {
			msg = strings.TrimPrefix(msg, m[0]+": ")
		}
		return nil, nil, &yamlError{name: name, line: line, msg: "not valid YAML: " + msg}
	}
	if doc.Kind == 0 {
		return nil, nil, nil
	}
	d := &yamlDecoder{name: name, dir: dir, open: map[*yaml.Node]bool{}, b: b}
	v, err := d.value(&doc)
	if err != nil {
		return nil, nil, err
	}
	var lines map[string]int
	if len(doc.Content) == 1 && doc.Content[0].Kind == yaml.MappingNode {
		top := doc.Content[0].Content
		lines = make(map[string]int, len(top)/2)
		for i := 0; i+1 < len(top); i += 2 {
			if _, seen := lines[top[i].Value]; !seen {
				lines[top[i].Value] = top[i].Line
			}
		}
	}
	return v, lines, nil
}

// yamlDecoder converts nodes to values, expanding aliases (refusing a
// recursive one, and documents that expand past the load's budget).
type yamlDecoder struct {
	name string
	// dir is the folder of the file read, where a !function's module is
	// looked for ("" for a document that is no file's).
	dir  string
	open map[*yaml.Node]bool
	b    *loadBudget
}

func (d *yamlDecoder) fail(n *yaml.Node, format string, args ...any) error {
	return &yamlError{name: d.name, line: n.Line, msg: fmt.Sprintf(format, args...)}
}

func (d *yamlDecoder) value(n *yaml.Node) (any, error) {
	d.b.expanded += valueCost + int64(len(n.Value))
	if d.b.expanded > maxTaskExpanded {
		return nil, fmt.Errorf("read %s: the task file and its includes expand to more than %s (YAML aliases expanded, each value counting its text and %d bytes): refused (%w)",
			d.name, fsguard.Bytes(maxTaskExpanded), valueCost, errTooLarge)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return d.value(n.Content[0])
	case yaml.AliasNode:
		if d.open[n.Alias] {
			return nil, d.fail(n, "recursive YAML alias")
		}
		d.open[n.Alias] = true
		defer delete(d.open, n.Alias)
		return d.value(n.Alias)
	case yaml.MappingNode:
		m := NewMap()
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				if err := d.merge(m, v); err != nil {
					return nil, err
				}
				continue
			}
			kv, err := d.value(k)
			if err != nil {
				return nil, err
			}
			ks, ok := kv.(string)
			if !ok {
				return nil, d.fail(k, "key %v is not a string", kv)
			}
			vv, err := d.value(v)
			if err != nil {
				return nil, err
			}
			m.Set(ks, vv)
		}
		return m, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for _, c := range n.Content {
			v, err := d.value(c)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	if n.Tag == "!function" {
		return Function{Name: n.Value, Dir: d.dir}, nil
	}
	v, err := yamlScalar(n)
	if err != nil {
		return nil, d.fail(n, "%v", err)
	}
	return v, nil
}

// merge applies a "<<" merge key: keys already set win.
func (d *yamlDecoder) merge(m *Map, v *yaml.Node) error {
	src, err := d.value(v)
	if err != nil {
		return err
	}
	var maps []*Map
	switch x := src.(type) {
	case *Map:
		maps = []*Map{x}
	case []any:
		for _, e := range x {
			if em, ok := e.(*Map); ok {
				maps = append(maps, em)
			}
		}
	}
	for _, sm := range maps {
		for _, k := range sm.Keys {
			if _, ok := m.Get(k); !ok {
				m.Set(k, sm.Vals[k])
			}
		}
	}
	return nil
}

func yamlScalar(n *yaml.Node) (any, error) {
	s := n.Value
	if n.Style&yaml.TaggedStyle != 0 {
		switch n.Tag {
		case "!!str", "!!binary", "!!timestamp":
			return s, nil
		case "!!null":
			return nil, nil
		}
	}
	if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return s, nil
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		return nil, fmt.Errorf("YAML tag %s is not supported", n.Tag)
	}
	switch {
	case yamlNull.MatchString(s):
		return nil, nil
	case yamlBool.MatchString(s):
		l := strings.ToLower(s)
		return l == "yes" || l == "true" || l == "on", nil
	case yamlInt.MatchString(s):
		return yamlParseInt(s)
	case yamlFloat.MatchString(s):
		return yamlParseFloat(s), nil
	}
	return s, nil
}

func yamlParseInt(s string) (any, error) {
	v := strings.ReplaceAll(s, "_", "")
	sign := int64(1)
	if strings.HasPrefix(v, "-") {
		sign, v = -1, v[1:]
	} else {
		v = strings.TrimPrefix(v, "+")
	}
	var n int64
	var err error
	switch {
	case v == "0":
		return int64(0), nil
	case strings.HasPrefix(v, "0b"):
		n, err = strconv.ParseInt(v[2:], 2, 64)
	case strings.HasPrefix(v, "0x"):
		n, err = strconv.ParseInt(v[2:], 16, 64)
	case strings.HasPrefix(v, "0"):
		n, err = strconv.ParseInt(v[1:], 8, 64)
	case strings.Contains(v, ":"):
		for _, part := range strings.Split(v, ":") {
			d, _ := strconv.ParseInt(part, 10, 64)
			n = n*60 + d
		}
	default:
		n, err = strconv.ParseInt(v, 10, 64)
	}
	if err != nil {
		return nil, fmt.Errorf("integer %s does not fit 64 bits", s)
	}
	return sign * n, nil
}

func yamlParseFloat(s string) float64 {
	v := strings.ToLower(strings.ReplaceAll(s, "_", ""))
	sign := 1.0
	if strings.HasPrefix(v, "-") {
		sign, v = -1, v[1:]
	} else {
		v = strings.TrimPrefix(v, "+")
	}
	switch {
	case v == ".inf":
		return sign * math.Inf(1)
	case v == ".nan":
		return math.NaN()
	case strings.Contains(v, ":"):
		parts := strings.Split(v, ":")
		f := 0.0
		for _, p := range parts {
			d, _ := strconv.ParseFloat(p, 64)
			f = f*60 + d
		}
		return sign * f
	}
	f, _ := strconv.ParseFloat(v, 64)
	return sign * f
}

// taskLoad reads a task file and, recursively, the files it includes
// (lm_eval/tasks/_yaml_loader.py load_yaml): each include is loaded in
// order and merged, then the file's own keys override; an include's
// task_list is not inherited. An include cycle is an error.
//
// A load reads each file once, however many paths include it, and only
// regular files (a FIFO, a device or a socket is refused before it is
// opened); it stays within the bounds above. An included file whose keys
// are not all lm-eval fields is not a task file: nothing of its content
// is quoted in an error (it may be any file: include: /etc/shadow).
type taskLoad struct {
	done map[string]*Map // the merged config of each file loaded, by absolute path
	open map[string]bool // the files being loaded, for cycles
	b    loadBudget
}

// loadTaskFile loads a task file and its includes.
func loadTaskFile(path string) (*Map, error) {
	l := &taskLoad{done: map[string]*Map{}, open: map[string]bool{}}
	return l.file(path, false)
}

// topKeys are the keys of a YAML mapping document, read without
// expanding its aliases (a file past the load's bounds is still told an
// lm-eval task file, and refused as one when it is loaded); ok is false
// for a document that is not a mapping.
func topKeys(data []byte) (keys map[string]bool, ok bool) {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, false
	}
	top := doc.Content[0].Content
	keys = make(map[string]bool, len(top)/2)
	for i := 0; i+1 < len(top); i += 2 {
		if top[i].Kind == yaml.ScalarNode {
			keys[top[i].Value] = true
		}
	}
	return keys, true
}

// ReadTaskFile reads a task file (lm-eval's or tally's) as a load reads
// it: a regular file of at most 1 MiB, refused before it is opened
// otherwise.
func ReadTaskFile(path string) ([]byte, error) {
	data, err := fsguard.ReadFile("", path, true, maxTaskFile)
	if err != nil {
		return nil, fmt.Errorf("read task %s: %w", path, err)
	}
	return data, nil
}

// includeKey tells the keys an included file may have: a task's, a
// group's, include, and class (a Python task's).
func includeKey(k string) bool {
	return taskFields[k] || groupFields[k] || k == "include" || k == "class"
}

func (l *taskLoad) file(path string, included bool) (*Map, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if l.open[abs] {
		return nil, fmt.Errorf("include cycle at %s", path)
	}
	if m, ok := l.done[abs]; ok {
		return m, nil
	}
	l.open[abs] = true
	defer delete(l.open, abs)
	max := min(int64(maxTaskFile), maxTaskRead-l.b.read)
	data, err := fsguard.ReadFile("", path, true, max)
	if err != nil {
		if errors.Is(err, fsguard.ErrTooLarge) {
			return nil, fmt.Errorf("read task %s: %w (each task file at most %s, all the files of one task %s)", path, err,
				fsguard.Bytes(maxTaskFile), fsguard.Bytes(maxTaskRead))
		}
		return nil, fmt.Errorf("read task %s: %w", path, err)
	}
	l.b.read += int64(len(data))
	v, lines, err := parseYAMLIn(data, path, filepath.Dir(abs), &l.b)
	var ye *yamlError
	if included && errors.As(err, &ye) {
		// What the message quotes may be any file's content.
		if ye.line > 0 {
			return nil, fmt.Errorf("read %s: not an lm-eval task file (not YAML that tally reads, line %d)", path, ye.line)
		}
		return nil, fmt.Errorf("read %s: not an lm-eval task file (not YAML that tally reads)", path)
	}
	if err != nil {
		return nil, err
	}
	cfg, ok := v.(*Map)
	if !ok {
		return nil, fmt.Errorf("read task %s: expected a YAML mapping", path)
	}
	if included {
		for _, k := range cfg.Keys {
			if !includeKey(k) {
				return nil, fmt.Errorf("read %s: not an lm-eval task file: its key at line %d is not a field of lm-eval's TaskConfig (not shown: the file may hold anything)", path, lines[k])
			}
		}
	}
	inc, ok := cfg.Get("include")
	if !ok {
		l.done[abs] = cfg
		return cfg, nil
	}
	cfg.Delete("include")
	var incs []any
	switch x := inc.(type) {
	case []any:
		incs = x
	default:
		incs = []any{x}
	}
	merged := NewMap()
	for _, i := range incs {
		name, ok := i.(string)
		if !ok {
			return nil, fmt.Errorf("read task %s: include %v is not a file name", path, i)
		}
		ipath := name
		if !filepath.IsAbs(ipath) {
			ipath = filepath.Join(filepath.Dir(path), name)
		}
		icfg, err := l.file(ipath, true)
		if err != nil {
			return nil, fmt.Errorf("%s: include %s: %w", path, name, err)
		}
		if l.b.merges += int64(icfg.Len()); l.b.merges > maxTaskMerges {
			return nil, fmt.Errorf("read task %s: its includes merge more than %d keys in all: refused (%w)", path, maxTaskMerges, errTooLarge)
		}
		for _, k := range icfg.Keys {
			if k != "task_list" {
				merged.Set(k, icfg.Vals[k])
			}
		}
	}
	for _, k := range cfg.Keys {
		merged.Set(k, cfg.Vals[k])
	}
	l.done[abs] = merged
	return merged, nil
}
