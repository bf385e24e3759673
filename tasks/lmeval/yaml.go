package lmeval

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
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
// !function constructor) reads it.
func parseYAML(data []byte, name string) (any, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if doc.Kind == 0 {
		return nil, nil
	}
	d := &yamlDecoder{name: name, open: map[*yaml.Node]bool{}}
	return d.value(&doc)
}

// maxYAMLNodes bounds the values an alias-heavy document may expand to.
const maxYAMLNodes = 1 << 20

// yamlDecoder converts nodes to values, expanding aliases (refusing a
// recursive one, and documents that expand past maxYAMLNodes).
type yamlDecoder struct {
	name  string
	open  map[*yaml.Node]bool
	nodes int
}

func (d *yamlDecoder) value(n *yaml.Node) (any, error) {
	d.nodes++
	if d.nodes > maxYAMLNodes {
		return nil, fmt.Errorf("read %s: the YAML document expands to more than %d values", d.name, maxYAMLNodes)
	}
	name := d.name
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return d.value(n.Content[0])
	case yaml.AliasNode:
		if d.open[n.Alias] {
			return nil, fmt.Errorf("read %s line %d: recursive YAML alias", name, n.Line)
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
				return nil, fmt.Errorf("read %s line %d: key %v is not a string", name, k.Line, kv)
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
	return yamlScalar(n, name)
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

func yamlScalar(n *yaml.Node, name string) (any, error) {
	s := n.Value
	if n.Tag == "!function" {
		return Function(s), nil
	}
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
		return nil, fmt.Errorf("read %s line %d: YAML tag %s is not supported", name, n.Line, n.Tag)
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

// loadYAMLFile reads a task file and, recursively, the files it includes
// (lm_eval/tasks/_yaml_loader.py load_yaml): each include is loaded in
// order and merged, then the file's own keys override; an include's
// task_list is not inherited. An include cycle is an error.
func loadYAMLFile(path string, seen map[string]bool) (*Map, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if seen[abs] {
		return nil, fmt.Errorf("include cycle at %s", path)
	}
	seen[abs] = true
	defer delete(seen, abs)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read task %s: %w", path, err)
	}
	v, err := parseYAML(data, path)
	if err != nil {
		return nil, err
	}
	cfg, ok := v.(*Map)
	if !ok {
		return nil, fmt.Errorf("read task %s: expected a YAML mapping", path)
	}
	inc, ok := cfg.Get("include")
	if !ok {
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
		icfg, err := loadYAMLFile(ipath, seen)
		if err != nil {
			return nil, fmt.Errorf("%s: include %s: %w", path, name, err)
		}
		icfg.Delete("task_list")
		for _, k := range icfg.Keys {
			merged.Set(k, icfg.Vals[k])
		}
	}
	for _, k := range cfg.Keys {
		merged.Set(k, cfg.Vals[k])
	}
	return merged, nil
}
