package lmeval

import (
	"errors"
	"fmt"

	"tally/internal/pyre"
	"tally/internal/pystr"
)

// pipeline is one filter_list entry: lm-eval's FilterEnsemble, named as
// the task names it ("none" for the default take_first).
type pipeline struct {
	name  string
	steps []filterStep
}

// filterStep is one filter of lm_eval/filters: regex (RegexFilter),
// take_first, remove_whitespace, lowercase, uppercase or map.
type filterStep struct {
	function    string
	re          *pyre.Regexp
	groupSelect int
	fallback    string
	mapping     *Map
	defaultVal  any
	hasDefault  bool
}

// readFilters reads filter_list; absent, lm-eval's default pipeline
// "none" (take_first).
func (c *config) readFilters() error {
	v, ok := c.raw.Get("filter_list")
	if !ok || v == nil {
		c.filters = []*pipeline{{name: "none", steps: []filterStep{{function: "take_first"}}}}
		return nil
	}
	list, isList := v.([]any)
	if !isList {
		return c.refuse("filter_list", "bad value", "%s is not a list", pyStr(v))
	}
	names := map[string]bool{}
	for i, e := range list {
		field := fmt.Sprintf("filter_list[%d]", i)
		m, isMap := e.(*Map)
		if !isMap {
			return c.refuse(field, "bad value", "%s is not a mapping", pyStr(e))
		}
		name, _ := mustGet(m, "name").(string)
		if name == "" {
			return c.refuse(field+".name", "bad value", "missing")
		}
		if names[name] {
			return c.refuse(field+".name", "bad value", "%s is used twice (lm-eval keeps one result per name)", name)
		}
		names[name] = true
		field = fmt.Sprintf("filter_list[%d] (%s)", i, name)
		steps, isList := mustGet(m, "filter").([]any)
		if !isList {
			return c.refuse(field+".filter", "bad value", "not a list of filters")
		}
		p := &pipeline{name: name}
		tookFirst := false
		for j, se := range steps {
			sm, isMap := se.(*Map)
			sfield := fmt.Sprintf("%s.filter[%d]", field, j)
			if !isMap {
				return c.refuse(sfield, "bad value", "%s is not a mapping", pyStr(se))
			}
			st, err := c.readFilterStep(sm, sfield)
			if err != nil {
				return err
			}
			if tookFirst {
				// After take_first each response is a str, which the next
				// filter would iterate character by character.
				return c.refuse(sfield, "filter after take_first", "%s after take_first is not supported (lm-eval would apply it to each character)", st.function)
			}
			tookFirst = st.function == "take_first"
			p.steps = append(p.steps, st)
		}
		c.filters = append(c.filters, p)
	}
	return nil
}

func (c *config) readFilterStep(m *Map, field string) (filterStep, error) {
	fn, _ := mustGet(m, "function").(string)
	st := filterStep{function: fn, fallback: "[invalid]"}
	args := map[string]any{}
	for _, k := range m.Keys {
		if k != "function" {
			args[k] = m.Vals[k]
		}
	}
	allowed := map[string][]string{"regex": {"regex_pattern", "group_select", "fallback"}, "take_first": nil,
		"remove_whitespace": nil, "lowercase": nil, "uppercase": nil, "map": {"mapping_dict", "default_value"}}
	keys, known := allowed[fn]
	if !known {
		return st, c.refuse(field, "filter "+fn, "filter function %s is not supported (regex, take_first, remove_whitespace, lowercase, uppercase, map)", fn)
	}
	for _, k := range sortedKeys(args) {
		ok := false
		for _, a := range keys {
			ok = ok || a == k
		}
		if !ok {
			return st, c.refuse(field+"."+k, "filter option "+k, "filter %s has no option %s", fn, k)
		}
	}
	switch fn {
	case "regex":
		pat := `#### (\-?[0-9\.\,]+)`
		if v, ok := args["regex_pattern"]; ok {
			s, isStr := v.(string)
			if !isStr {
				return st, c.refuse(field+".regex_pattern", "bad value", "%s is not a string", pyStr(v))
			}
			pat = s
		}
		re, err := pyre.Compile(pat)
		if err != nil {
			return st, c.refuse(field+".regex_pattern", "regular expression", "%v", err)
		}
		st.re = re
		if v, ok := args["group_select"]; ok {
			n, isInt := v.(int64)
			if !isInt {
				return st, c.refuse(field+".group_select", "bad value", "%s is not an int", pyStr(v))
			}
			st.groupSelect = int(n)
		}
		if v, ok := args["fallback"]; ok {
			s, isStr := v.(string)
			if !isStr {
				return st, c.refuse(field+".fallback", "bad value", "%s is not a string", pyStr(v))
			}
			st.fallback = s
		}
	case "map":
		if v, ok := args["mapping_dict"]; ok && v != nil {
			md, isMap := v.(*Map)
			if !isMap {
				return st, c.refuse(field+".mapping_dict", "bad value", "%s is not a mapping", pyStr(v))
			}
			for _, k := range md.Keys {
				if _, isStr := md.Vals[k].(string); !isStr {
					return st, c.refuse(field+".mapping_dict", "map to non-string", "value %s of %q is not a string", pyStr(md.Vals[k]), k)
				}
			}
			st.mapping = md
		} else {
			st.mapping = NewMap()
		}
		if v, ok := args["default_value"]; ok && v != nil {
			s, isStr := v.(string)
			if !isStr {
				return st, c.refuse(field+".default_value", "map to non-string", "%s is not a string", pyStr(v))
			}
			st.defaultVal, st.hasDefault = s, true
		}
	}
	return st, nil
}

// errNoMapping is a map filter's response with no entry and no default:
// lm-eval's result is None, which its scoring cannot cast.
var errNoMapping = errors.New("map filter: the response has no mapping and the filter no default_value")

// apply runs the pipeline on one response (repeats is 1). The result is
// a string after take_first, otherwise the one-element list of responses
// lm-eval would pass on.
func (p *pipeline) apply(resp string, b *pyre.Budget) (any, error) {
	var list []any = []any{resp}
	var first any
	took := false
	for _, st := range p.steps {
		if st.function == "take_first" {
			first, took = list[0], true
			continue
		}
		for i, r := range list {
			out, err := st.one(r, b)
			if err != nil {
				return nil, fmt.Errorf("filter %s: %w", p.name, err)
			}
			list[i] = out
		}
	}
	if took {
		return first, nil
	}
	return list, nil
}

// one applies a per-response filter to one response.
func (st filterStep) one(r any, b *pyre.Budget) (any, error) {
	switch st.function {
	case "regex":
		s, ok := r.(string)
		if !ok {
			s = ""
		}
		return st.regex(s, b)
	case "map":
		if s, ok := r.(string); ok {
			if v, found := st.mapping.Get(s); found {
				return v, nil
			}
		}
		if st.hasDefault {
			return st.defaultVal, nil
		}
		return nil, nil
	}
	s, ok := r.(string)
	if !ok {
		return nil, fmt.Errorf("%s on %s, which is not a str", st.function, pyStr(r))
	}
	switch st.function {
	case "remove_whitespace":
		return pystr.Strip(s), nil
	case "lowercase":
		return pystr.Lower(s), nil
	case "uppercase":
		return pystr.Upper(s), nil
	}
	return nil, fmt.Errorf("unknown filter %s", st.function)
}

// regex is RegexFilter on one response: findall, the match at
// group_select (negative counts from the end), the first non-empty group
// of a match with several, stripped; the fallback when nothing matches.
func (st filterStep) regex(s string, b *pyre.Budget) (any, error) {
	found, err := st.re.FindAllStringsIn(s, b)
	if err != nil {
		return nil, err
	}
	var n int
	switch f := found.(type) {
	case []string:
		n = len(f)
	case [][]string:
		n = len(f)
	}
	if n == 0 {
		return st.fallback, nil
	}
	i := st.groupSelect
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return nil, fmt.Errorf("regex %q: group_select %d out of range for %d matches (lm-eval raises IndexError)", st.re.String(), st.groupSelect, n)
	}
	var m string
	switch f := found.(type) {
	case []string:
		m = f[i]
	case [][]string:
		m = st.fallback
		for _, g := range f[i] {
			if g != "" {
				m = g
				break
			}
		}
	}
	return pystr.Strip(m), nil
}
