package lmeval

import (
	"errors"
	"fmt"
	"strings"

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
// multi_choice_regex (MultiChoiceRegexFilter), take_first,
// remove_whitespace, lowercase, uppercase or map.
type filterStep struct {
	function    string
	re          *pyre.Regexp
	groupSelect int
	fallback    string
	mapping     *Map
	defaultVal  any
	hasDefault  bool
	// multi_choice_regex's options for matching the document's choices.
	ignoreCase, ignorePunct bool
	ignoreRes               []*pyre.Regexp
	// py is a filter the Python bridge runs (pyhooks.go), with the step's
	// other keys; pyCustom for lm-eval's "custom" filter's filter_fn.
	py       *pyHook
	pyKwargs *Map
	pyCustom bool
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
	if f, isFn := mustGet(m, "function").(Function); isFn {
		return c.pyFilterStep(m, field, f, false)
	}
	if f, isFn := mustGet(m, "filter_fn").(Function); isFn && mustGet(m, "function") == "custom" {
		return c.pyFilterStep(m, field, f, true)
	}
	if f := findFunction(m); f != "" {
		return filterStep{}, c.refuse(field, "!function", "!function %s is Python code, which tally does not run here", f)
	}
	fn, _ := mustGet(m, "function").(string)
	st := filterStep{function: fn, fallback: "[invalid]"}
	args := map[string]any{}
	for _, k := range m.Keys {
		if k != "function" {
			args[k] = m.Vals[k]
		}
	}
	allowed := map[string][]string{"regex": {"regex_pattern", "group_select", "fallback"}, "take_first": nil,
		"multi_choice_regex": {"regex_pattern", "group_select", "fallback", "ignore_case", "ignore_punctuation", "regexes_to_ignore"},
		"remove_whitespace":  nil, "lowercase": nil, "uppercase": nil, "map": {"mapping_dict", "default_value"}}
	keys, known := allowed[fn]
	if !known && fn != "" {
		// A filter lm-eval registers (its own, or a task module's
		// @register_filter): the Python bridge runs it, where opted in.
		if st, ok, err := c.registeredFilter(m, field, fn); ok || err != nil {
			return st, err
		}
		return st, c.refuse(field, "filter "+fn, "filter function %s is not supported (regex, multi_choice_regex, take_first, remove_whitespace, lowercase, uppercase, map)%s",
			fn, strings.Replace(optInHint, "runs it in Python", "runs lm-eval's registered filter of that name in Python", 1))
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
	case "regex", "multi_choice_regex":
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
		for k, dst := range map[string]*bool{"ignore_case": &st.ignoreCase, "ignore_punctuation": &st.ignorePunct} {
			if v, ok := args[k]; ok && v != nil {
				b, isBool := v.(bool)
				if !isBool {
					return st, c.refuse(field+"."+k, "bad value", "%s is not a bool", pyStr(v))
				}
				*dst = b
			}
		}
		if v, ok := args["regexes_to_ignore"]; ok && v != nil {
			l, isList := v.([]any)
			if !isList {
				return st, c.refuse(field+".regexes_to_ignore", "bad value", "%s is not a list", pyStr(v))
			}
			for _, e := range l {
				p, isStr := e.(string)
				if !isStr {
					return st, c.refuse(field+".regexes_to_ignore", "bad value", "%s is not a string", pyStr(e))
				}
				re, err := pyre.Compile(p)
				if err != nil {
					return st, c.refuse(field+".regexes_to_ignore", "regular expression", "%v", err)
				}
				st.ignoreRes = append(st.ignoreRes, re)
			}
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

// needsDoc reports whether a filter of the pipeline reads the document
// (multi_choice_regex its choices).
func (p *pipeline) needsDoc() bool {
	for _, st := range p.steps {
		if st.function == "multi_choice_regex" || st.py != nil {
			return true
		}
	}
	return false
}

// apply runs the pipeline on one response (repeats is 1) of a document.
// The result is a string after take_first, otherwise the one-element list
// of responses lm-eval would pass on.
func (p *pipeline) apply(resp string, doc *Map, b *pyre.Budget) (any, error) {
	var list []any = []any{resp}
	var first any
	took := false
	for _, st := range p.steps {
		if st.function == "take_first" {
			first, took = list[0], true
			continue
		}
		if st.py != nil {
			out, err := st.pyApply(list, doc)
			if err != nil {
				return nil, fmt.Errorf("filter %s: %w", p.name, err)
			}
			if l, isList := out.([]any); isList {
				list = l
			} else {
				first, took = out, true
			}
			continue
		}
		for i, r := range list {
			out, err := st.one(r, doc, b)
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

// one applies a per-response filter to one response of a document.
func (st filterStep) one(r any, doc *Map, b *pyre.Budget) (any, error) {
	switch st.function {
	case "regex":
		s, ok := r.(string)
		if !ok {
			s = ""
		}
		return st.regex(s, b)
	case "multi_choice_regex":
		return st.multiChoice(r, doc, b)
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

// multiChoice is MultiChoiceRegexFilter (lm_eval/filters/extraction.py)
// on one response: the regex as RegexFilter applies it, but "" where the
// selected match's groups are all empty and no fallback yet; failing
// that, the document's choices (each stripped, then its regexes_to_ignore
// removed, lower-cased, its Unicode punctuation removed as the options
// say) searched in the response treated alike, a match given as its
// letter "(A)"; failing that, ":" and a choice's letter ("(A)"); failing
// that, the fallback. Every search selects group_select as RegexFilter
// does (an index out of range raises, as in lm-eval).
func (st filterStep) multiChoice(r any, doc *Map, b *pyre.Budget) (any, error) {
	resp, ok := r.(string)
	if !ok {
		resp = ""
	}
	cv, ok := doc.Get("choices")
	if !ok {
		return nil, fmt.Errorf("multi_choice_regex: the document has no choices (lm-eval raises KeyError)")
	}
	// for c in doc["choices"]: a list's items, a mapping's keys (the
	// Hub's {"text": [...], "label": [...]} gives "text" and "label"), a
	// string's characters.
	var choices []any
	switch x := cv.(type) {
	case []any:
		choices = x
	case *Map:
		for _, k := range x.Keys {
			choices = append(choices, k)
		}
	case string:
		for _, c := range x {
			choices = append(choices, string(c))
		}
	default:
		return nil, fmt.Errorf("multi_choice_regex: choices %s is not iterable (lm-eval raises TypeError)", pyStr(cv))
	}
	ignores := func(s string) (string, error) {
		var err error
		for _, re := range st.ignoreRes {
			if s, err = re.SubIn("", s, b); err != nil {
				return "", err
			}
		}
		if st.ignoreCase {
			s = pystr.Lower(s)
		}
		if st.ignorePunct {
			s = strings.Map(func(c rune) rune {
				if pystr.IsPunct(c) {
					return -1
				}
				return c
			}, s)
		}
		return s, nil
	}
	var alts, letters []string
	toAlpha, toTarget := map[string]string{}, map[string]string{}
	next := 'A'
	for _, c := range choices {
		cs, isStr := c.(string)
		if !isStr {
			return nil, fmt.Errorf("multi_choice_regex: choice %s is not a str", pyStr(c))
		}
		m, err := ignores(pystr.Strip(cs))
		if err != nil {
			return nil, err
		}
		alts = append(alts, pyre.Escape(m))
		toAlpha[m] = "(" + string(next) + ")"
		letters = append(letters, string(next))
		toTarget[string(next)] = "(" + string(next) + ")"
		next++
	}
	fallbackRe, err := pyre.Compile(strings.Join(alts, "|"))
	if err != nil {
		return nil, fmt.Errorf("multi_choice_regex: the choices' pattern: %w", err)
	}
	letterRe, err := pyre.Compile(`:[\s]*(` + strings.Join(letters, "|") + `)`)
	if err != nil {
		return nil, fmt.Errorf("multi_choice_regex: the letters' pattern: %w", err)
	}
	m, err := st.findMatch(st.re, resp, nil, b)
	if err != nil || m != "" {
		return m, err
	}
	filtered, err := ignores(resp)
	if err != nil {
		return nil, err
	}
	if m, err = st.findMatch(fallbackRe, filtered, toAlpha, b); err != nil || m != "" {
		return m, err
	}
	if m, err = st.findMatch(letterRe, resp, toTarget, b); err != nil || m != "" {
		return m, err
	}
	return st.fallback, nil
}

// findMatch is MultiChoiceRegexFilter's find_match: the match at
// group_select of findall (its first non-empty group, or "" when all are
// empty), stripped and converted by convert when it names one; "" when
// nothing matches.
func (st filterStep) findMatch(re *pyre.Regexp, s string, convert map[string]string, b *pyre.Budget) (string, error) {
	found, err := re.FindAllStringsIn(s, b)
	if err != nil {
		return "", err
	}
	var n int
	switch f := found.(type) {
	case []string:
		n = len(f)
	case [][]string:
		n = len(f)
	}
	if n == 0 {
		return "", nil
	}
	i := st.groupSelect
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return "", fmt.Errorf("regex %q: group_select %d out of range for %d matches (lm-eval raises IndexError)", re.String(), st.groupSelect, n)
	}
	var m string
	switch f := found.(type) {
	case []string:
		m = f[i]
	case [][]string:
		for _, g := range f[i] {
			if g != "" {
				m = g
				break
			}
		}
		if m == "" {
			return "", nil
		}
	}
	m = pystr.Strip(m)
	if t, ok := convert[m]; ok && m != "" {
		m = t
	}
	return m, nil
}
