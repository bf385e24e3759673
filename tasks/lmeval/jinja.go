package lmeval

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/ardanlabs/jinja"

	"tally/internal/pystr"
)

// This file renders lm-eval's templates (doc_to_text, doc_to_target,
// description, gen_prefix) as lm_eval/utils.py apply_template does: a
// jinja2 Environment with StrictUndefined and keep_trailing_newline, and
// jinja2's defaults otherwise (no trim_blocks, no lstrip_blocks,
// autoescape off), through the engine tally renders chat templates with
// (github.com/ardanlabs/jinja).
//
// That engine differs from jinja2 in ways that change prompts, so a
// template is rewritten before it is compiled:
//   - Template text (between tags) is passed as data and printed with an
//     expression, after jinja2's whitespace control ("-" markers, Python's
//     white space) has been applied here; the engine's own
//     trim_blocks/lstrip_blocks then have nothing to act on. Newlines are
//     normalised to "\n" as jinja2's lexer does.
//   - Every {{ expression }} is printed with Python's str() (a float 3.0
//     is "3.0", a list is its repr, None is "None"), and an undefined
//     value is an error (StrictUndefined).
//   - The filters string, trim and join and the str methods strip, lstrip,
//     rstrip and split, whose results differ, are replaced by calls that
//     do what Python does.
// Refused with one line: {% raw %}, and an expression holding "}}" (or a
// statement "%}") outside a string, which the engine cannot scan.

// A template segment.
type segment struct {
	kind              byte // 't' text, 'e' expression, 's' statement, 'c' comment
	text              string
	trimLeft, trimRgt bool
}

// template is a compiled lm-eval template.
type template struct {
	src   string
	tmpl  *jinja.Template
	texts []string
	uses  []string // the helpers the guarded template calls
	// usesRange: the template names range (tally's, unless the document
	// has a field of that name).
	usesRange bool
}

// compileTemplate compiles a template as lm-eval's environment would.
func compileTemplate(src string) (*template, error) {
	segs, err := scanTemplate(src)
	if err != nil {
		return nil, err
	}
	// jinja2's whitespace control: a "-" strips the white space of the
	// neighbouring text (Python's white space).
	for i := range segs {
		if segs[i].kind == 't' {
			continue
		}
		if segs[i].trimLeft && i > 0 && segs[i-1].kind == 't' {
			segs[i-1].text = strings.TrimRightFunc(segs[i-1].text, pystr.IsSpace)
		}
		if segs[i].trimRgt && i+1 < len(segs) && segs[i+1].kind == 't' {
			segs[i+1].text = strings.TrimLeftFunc(segs[i+1].text, pystr.IsSpace)
		}
	}
	t := &template{src: src}
	var b strings.Builder
	depth := 0
	for _, s := range segs {
		switch s.kind {
		case 't':
			if s.text == "" {
				continue
			}
			fmt.Fprintf(&b, "{{ __tally_text(%d) }}", len(t.texts))
			t.texts = append(t.texts, s.text)
		case 'e':
			if err := checkNesting(s.text); err != nil {
				return nil, err
			}
			e, err := rewriteExpr(s.text)
			if err != nil {
				return nil, err
			}
			if e, err = guardExpr(e); err != nil {
				return nil, err
			}
			b.WriteString("{{ __tally_out(" + e + ") }}")
		case 's':
			if f := strings.Fields(s.text); len(f) > 0 && (f[0] == "raw" || f[0] == "endraw") {
				return nil, errors.New("template: {% raw %} blocks are not supported")
			}
			if err := checkNesting(s.text); err != nil {
				return nil, err
			}
			e, err := rewriteExpr(s.text)
			if err != nil {
				return nil, err
			}
			e, open, err := guardStatement(e)
			if err != nil {
				return nil, err
			}
			if depth += open; depth > maxNesting {
				return nil, fmt.Errorf("template: blocks nested more than %d deep: refused (%w)", maxNesting, errBound)
			}
			if strings.Contains(stripStrings(e), "%}") {
				return nil, fmt.Errorf("template: statement {%%%s%%} holds %%}, which tally's engine cannot scan", s.text)
			}
			b.WriteString("{% " + e + " %}")
		}
	}
	for _, h := range helperName.FindAllString(b.String(), -1) {
		if !slices.Contains(t.uses, h) {
			t.uses = append(t.uses, h)
		}
	}
	t.usesRange = rangeName.MatchString(b.String())
	tm, err := jinja.Compile(b.String())
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	t.tmpl = tm
	return t, nil
}

// render renders the template over a document, as Template.render(**doc),
// within the bounds of guard.go: its budget of steps grows with the
// document's size.
func (t *template) render(doc *Map) (out string, err error) {
	st := &renderState{texts: t.texts, limit: math.MaxInt64}
	data := make(map[string]jinja.Value, doc.Len()+24)
	for _, k := range doc.Keys {
		data[k] = toJinja(doc.Vals[k])
	}
	var docSteps int64
	for _, k := range doc.Keys {
		if err := st.walk(data[k], 0); err != nil {
			return "", fmt.Errorf("render template %q: the document: %w", t.src, err)
		}
	}
	docSteps, st.steps = st.steps, 0
	st.limit = renderSteps + stepsPerDocStep*docSteps
	for _, name := range t.uses {
		if f := st.helper(name); f != nil {
			data[name] = jinja.NewCallable(name, f)
		}
	}
	if _, ok := doc.Get("range"); !ok && t.usesRange {
		data["range"] = jinja.NewCallable("range", st.rangeHelper)
	}
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("render template %q: the engine failed: %v", t.src, r)
		}
	}()
	out, err = t.tmpl.RenderValues(data)
	if err != nil {
		return "", fmt.Errorf("render template %q: %w", t.src, err)
	}
	return out, nil
}

// helperName finds the helpers a guarded template calls.
var (
	helperName = regexp.MustCompile(`__tally_[a-z_]+`)
	rangeName  = regexp.MustCompile(`\brange\b`)
)

// checkNesting refuses, before anything else reads it, an expression or
// statement of brackets nested past maxNesting or of more than
// maxExprTokens tokens (rewriteExpr and the engine's parser recurse into
// brackets).
func checkNesting(src string) error {
	toks, err := tokenize(src)
	if err != nil {
		return err
	}
	if len(toks) > 2*maxExprTokens {
		return fmt.Errorf("template: an expression of more than %d tokens: refused (%w)", maxExprTokens, errBound)
	}
	depth := 0
	for _, t := range toks {
		if t.kind != 'o' {
			continue
		}
		switch t.text {
		case "(", "[", "{":
			if depth++; depth > maxNesting {
				return fmt.Errorf("template: brackets nested more than %d deep: refused (%w)", maxNesting, errBound)
			}
		case ")", "]", "}":
			depth--
		}
	}
	return nil
}

// scanTemplate splits a template into text, expression, statement and
// comment segments as jinja2's lexer does (default delimiters): a tag
// ends at its closer outside strings and brackets; "-" after the opener
// or before the closer asks for white space to be stripped ("+" is
// accepted and changes nothing without lstrip_blocks/trim_blocks).
func scanTemplate(src string) ([]segment, error) {
	src = strings.ReplaceAll(strings.ReplaceAll(src, "\r\n", "\n"), "\r", "\n")
	var segs []segment
	pos := 0
	for {
		i := nextOpener(src, pos)
		if i < 0 {
			segs = append(segs, segment{kind: 't', text: src[pos:]})
			return segs, nil
		}
		segs = append(segs, segment{kind: 't', text: src[pos:i]})
		kind := map[byte]byte{'{': 'e', '%': 's', '#': 'c'}[src[i+1]]
		j := i + 2
		seg := segment{kind: kind}
		if j < len(src) && (src[j] == '-' || (src[j] == '+' && kind != 'e')) {
			seg.trimLeft = src[j] == '-'
			j++
		}
		if kind == 'c' {
			end := strings.Index(src[j:], "#}")
			if end < 0 {
				return nil, errors.New("template: unterminated comment {#")
			}
			end += j
			if end > j && (src[end-1] == '-' || src[end-1] == '+') {
				seg.trimRgt = src[end-1] == '-'
			}
			segs = append(segs, seg)
			pos = end + 2
			continue
		}
		closer := "}}"
		if kind == 's' {
			closer = "%}"
		}
		end, err := tagEnd(src, j, closer)
		if err != nil {
			return nil, err
		}
		content := src[j:end]
		if strings.HasSuffix(content, "-") || (kind == 's' && strings.HasSuffix(content, "+")) {
			seg.trimRgt = strings.HasSuffix(content, "-")
			content = content[:len(content)-1]
		}
		seg.text = content
		segs = append(segs, seg)
		pos = end + 2
	}
}

func nextOpener(src string, pos int) int {
	for i := pos; i+1 < len(src); i++ {
		if src[i] == '{' && (src[i+1] == '{' || src[i+1] == '%' || src[i+1] == '#') {
			return i
		}
	}
	return -1
}

// tagEnd finds the closer of a tag whose content starts at j: the first
// closer outside strings and brackets (a "-" or "+" just before it belongs
// to the closer).
func tagEnd(src string, j int, closer string) (int, error) {
	depth := 0
	for k := j; k < len(src); k++ {
		c := src[k]
		switch {
		case c == '\'' || c == '"':
			e := skipString(src, k)
			if e < 0 {
				return 0, errors.New("template: unterminated string in a tag")
			}
			k = e
		case c == '(' || c == '[' || c == '{':
			depth++
		case (c == ')' || c == ']' || c == '}') && depth > 0:
			depth--
		case depth == 0 && strings.HasPrefix(src[k:], closer):
			return k, nil
		}
	}
	return 0, fmt.Errorf("template: unterminated tag (no %s)", closer)
}

// skipString returns the index of the closing quote of the string
// starting at k (jinja2's string token: backslash escapes), or -1.
func skipString(src string, k int) int {
	q := src[k]
	for i := k + 1; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case q:
			return i
		}
	}
	return -1
}

// stripStrings blanks string literals, for checks on the code around them.
func stripStrings(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' || s[i] == '"' {
			e := skipString(s, i)
			if e < 0 {
				b.WriteString(s[i:])
				break
			}
			b.WriteString(`""`)
			i = e
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// An expression token.
type token struct {
	kind byte // ' ' space, 's' string, 'n' number, 'i' name, 'o' operator, 'a' atom (rewritten)
	text string
}

// keywords are the words that end an operand walking back (operators
// and the statement words before an expression).
var keywords = map[string]bool{"and": true, "or": true, "not": true, "in": true, "is": true, "if": true, "else": true,
	"elif": true, "for": true, "set": true}

func tokenize(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			j := i
			for j < len(s) && strings.IndexByte(" \t\n\r", s[j]) >= 0 {
				j++
			}
			out = append(out, token{' ', s[i:j]})
			i = j
		case c == '\'' || c == '"':
			e := skipString(s, i)
			if e < 0 {
				return nil, errors.New("template: unterminated string")
			}
			out = append(out, token{'s', s[i : e+1]})
			i = e + 1
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '_' || s[j] == '.' && j+1 < len(s) && s[j+1] >= '0' && s[j+1] <= '9' ||
				(s[j] == 'e' || s[j] == 'E') && j+1 < len(s) && (s[j+1] >= '0' && s[j+1] <= '9' || s[j+1] == '-' || s[j+1] == '+') ||
				(s[j] == '-' || s[j] == '+') && j > i && (s[j-1] == 'e' || s[j-1] == 'E')) {
				j++
			}
			out = append(out, token{'n', s[i:j]})
			i = j
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
			j := i
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9' || s[j] >= 0x80) {
				j++
			}
			out = append(out, token{'i', s[i:j]})
			i = j
		default:
			n := 1
			for _, op := range []string{"**", "//", "==", "!=", "<=", ">="} {
				if strings.HasPrefix(s[i:], op) {
					n = 2
				}
			}
			out = append(out, token{'o', s[i : i+n]})
			i += n
		}
	}
	return out, nil
}

// The filters and methods replaced by Python-exact helpers.
var (
	filterHelpers = map[string]string{"string": "__tally_string", "trim": "__tally_trim", "join": "__tally_join"}
	methodHelpers = map[string]string{"strip": "__tally_strip", "lstrip": "__tally_lstrip", "rstrip": "__tally_rstrip", "split": "__tally_split"}
)

// engineFilters are the filters tally's Jinja engine has (with the three
// replaced by helpers); jinja2's others (format, truncate, wordwrap, …)
// and lm-eval's regex_replace are refused when a template is compiled.
var engineFilters = map[string]bool{"abs": true, "batch": true, "capitalize": true, "count": true, "default": true, "d": true,
	"dictsort": true, "escape": true, "e": true, "first": true, "float": true, "fromjson": true, "from_json": true, "indent": true,
	"int": true, "items": true, "join": true, "last": true, "length": true, "list": true, "lower": true, "map": true, "max": true,
	"min": true, "reject": true, "rejectattr": true, "replace": true, "reverse": true, "round": true, "safe": true, "select": true,
	"selectattr": true, "sort": true, "string": true, "sum": true, "title": true, "tojson": true, "trim": true, "unique": true,
	"upper": true, "wordcount": true}

// checkFilters refuses a filter the engine does not have.
func checkFilters(toks []token) error {
	for i, t := range toks {
		if t.kind != 'o' || t.text != "|" {
			continue
		}
		if n := nextNonSpace(toks, i+1); n >= 0 && toks[n].kind == 'i' && !engineFilters[toks[n].text] {
			return fmt.Errorf("template: filter %s is not supported", toks[n].text)
		}
	}
	return nil
}

// rewriteExpr replaces, in an expression or statement, x|string,
// x|trim(...), x|join(...) and x.strip(...), x.lstrip(...), x.rstrip(...),
// x.split(...) by calls of the helpers.
func rewriteExpr(s string) (string, error) {
	toks, err := tokenize(s)
	if err != nil {
		return "", err
	}
	if err := checkFilters(toks); err != nil {
		return "", err
	}
	for {
		i, helper, nameAt := findRewrite(toks)
		if i < 0 {
			break
		}
		start := operandStart(toks, i)
		if start < 0 {
			return "", fmt.Errorf("template: cannot find what %q applies to in %q", toks[nameAt].text, s)
		}
		end := nameAt
		args := ""
		if p := nextNonSpace(toks, nameAt+1); p >= 0 && toks[p].text == "(" && toks[p].kind == 'o' {
			q := matchClose(toks, p)
			if q < 0 {
				return "", fmt.Errorf("template: unbalanced parentheses in %q", s)
			}
			inner, err := rewriteExpr(joinTokens(toks[p+1 : q]))
			if err != nil {
				return "", err
			}
			args = inner
			end = q
		}
		call := helper + "(" + joinTokens(toks[start:i])
		if strings.TrimSpace(args) != "" {
			call += ", " + args
		}
		call += ")"
		rest := append([]token{{'a', call}}, toks[end+1:]...)
		toks = append(toks[:start:start], rest...)
	}
	out := joinTokens(toks)
	if strings.Contains(stripStrings(out), "}}") {
		return "", fmt.Errorf("template: expression %q holds }}, which tally's engine cannot scan", s)
	}
	return out, nil
}

// findRewrite finds the first filter or method to replace: the index of
// its "|" or ".", the helper, and the index of the name.
func findRewrite(toks []token) (int, string, int) {
	for i, t := range toks {
		if t.kind != 'o' || (t.text != "|" && t.text != ".") {
			continue
		}
		n := nextNonSpace(toks, i+1)
		if n < 0 || toks[n].kind != 'i' {
			continue
		}
		if t.text == "|" {
			if h, ok := filterHelpers[toks[n].text]; ok {
				return i, h, n
			}
			continue
		}
		if h, ok := methodHelpers[toks[n].text]; ok {
			if p := nextNonSpace(toks, n+1); p >= 0 && toks[p].text == "(" {
				return i, h, n
			}
		}
	}
	return -1, "", -1
}

// operandStart walks back from the "|" or "." at i over the postfix
// chain it applies to (names, literals, attributes, subscripts, calls
// and earlier filters), stopping at an operator or keyword.
func operandStart(toks []token, i int) int {
	start := -1
	j := prevNonSpace(toks, i-1)
	for j >= 0 {
		t := toks[j]
		switch {
		case t.kind == 'o' && (t.text == ")" || t.text == "]" || t.text == "}"):
			o := matchOpen(toks, j)
			if o < 0 {
				return -1
			}
			start = o
			k := prevNonSpace(toks, o-1)
			if k >= 0 && toks[o].text != "{" && (toks[k].kind == 'i' && !keywords[toks[k].text] || toks[k].kind == 'a' || toks[k].kind == 's' ||
				toks[k].kind == 'o' && (toks[k].text == ")" || toks[k].text == "]")) {
				j = k
				continue
			}
			return start
		case t.kind == 'i' && !keywords[t.text] || t.kind == 'n' || t.kind == 's' || t.kind == 'a':
			start = j
			k := prevNonSpace(toks, j-1)
			if k >= 0 && toks[k].kind == 'o' && (toks[k].text == "." || toks[k].text == "|") && t.kind == 'i' {
				j = prevNonSpace(toks, k-1)
				continue
			}
			return start
		default:
			return start
		}
	}
	return start
}

func prevNonSpace(toks []token, j int) int {
	for ; j >= 0 && toks[j].kind == ' '; j-- {
	}
	return j
}

func nextNonSpace(toks []token, j int) int {
	for ; j < len(toks); j++ {
		if toks[j].kind != ' ' {
			return j
		}
	}
	return -1
}

func matchOpen(toks []token, j int) int {
	depth := 0
	for k := j; k >= 0; k-- {
		if toks[k].kind != 'o' {
			continue
		}
		switch toks[k].text {
		case ")", "]", "}":
			depth++
		case "(", "[", "{":
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}

func matchClose(toks []token, j int) int {
	depth := 0
	for k := j; k < len(toks); k++ {
		if toks[k].kind != 'o' {
			continue
		}
		switch toks[k].text {
		case "(", "[", "{":
			depth++
		case ")", "]", "}":
			depth--
			if depth == 0 {
				return k
			}
		}
	}
	return -1
}

func joinTokens(toks []token) string {
	var b strings.Builder
	for _, t := range toks {
		b.WriteString(t.text)
	}
	return b.String()
}

// condUndefined stands for the value of an inline if-expression without
// an else whose condition is false: jinja2 gives jinja2.Undefined there
// (its compiler's cond_expr_undefined), not the environment's
// StrictUndefined, so it prints as "" (str, |string, ~) where any other
// undefined value raises; arithmetic on it and a method called on it
// raise. The engine carries it as this string, which no document holds.
const condUndefined = "\x00tally:cond_expr_undefined\x00"

// lenientUndefined is condUndefined back from the engine: str() of it is
// "".
type lenientUndefined struct{}

// fromJinja converts an engine value back; an undefined value is an error
// (StrictUndefined).
func fromJinja(v jinja.Value) (any, error) { return fromJinjaAt(v, 0) }

// fromJinjaAt is fromJinja of a value nested level deep: no deeper than
// maxNesting (a value that holds itself).
func fromJinjaAt(v jinja.Value, level int) (any, error) {
	if level > maxNesting {
		return nil, fmt.Errorf("a value nested more than %d deep (one that holds itself?): refused (%w)", maxNesting, errBound)
	}
	switch {
	case v.IsUndefined():
		return nil, errors.New("undefined value (jinja2's StrictUndefined raises here)")
	case v.IsNone():
		return nil, nil
	case v.IsBool():
		return v.AsBool(), nil
	case v.IsInt():
		return v.AsInt(), nil
	case v.IsFloat():
		return v.AsFloat(), nil
	case v.IsString():
		if v.AsString() == condUndefined {
			return lenientUndefined{}, nil
		}
		return v.AsString(), nil
	case v.IsList():
		l := v.AsList()
		out := make([]any, l.Len())
		for i := range out {
			x, err := fromJinjaAt(l.Get(i), level+1)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case v.IsDict():
		d := v.AsDict()
		m := NewMap()
		for _, k := range d.OrderedKeys() {
			e, _ := d.Get(k)
			x, err := fromJinjaAt(e, level+1)
			if err != nil {
				return nil, err
			}
			m.Set(k, x)
		}
		return m, nil
	}
	return nil, fmt.Errorf("cannot print %s", v.String())
}

type helper = func(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error)

// trimHelper is jinja2's trim filter.
func trimHelper(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 1 {
		return jinja.Undefined(), errors.New("trim: no value")
	}
	v, err := fromJinja(args[0])
	if err != nil {
		return jinja.Undefined(), err
	}
	chars, err := optString(args, kw, 1, "chars")
	if err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(pyStrip(pyStr(v), chars, true, true)), nil
}

// joinHelper is jinja2's join filter, of a result of at most
// maxValueBytes.
func joinHelper(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 1 {
		return jinja.Undefined(), errors.New("join: no value")
	}
	if _, ok := kw["attribute"]; ok || len(args) > 2 {
		return jinja.Undefined(), errors.New("join: only join(separator) is supported")
	}
	v, err := fromJinja(args[0])
	if err != nil {
		return jinja.Undefined(), err
	}
	sep := ""
	if len(args) > 1 {
		s, err := fromJinja(args[1])
		if err != nil {
			return jinja.Undefined(), err
		}
		sep = pyStr(s)
	} else if d, ok := kw["d"]; ok {
		s, err := fromJinja(d)
		if err != nil {
			return jinja.Undefined(), err
		}
		sep = pyStr(s)
	}
	var items []string
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			items = append(items, pyStr(e))
		}
	case string:
		for _, r := range x {
			items = append(items, string(r))
		}
	case *Map:
		items = append(items, x.Keys...)
	default:
		return jinja.Undefined(), fmt.Errorf("join: %s is not iterable", pyStr(v))
	}
	n := len(sep) * len(items)
	for _, it := range items {
		n += len(it)
	}
	if n > maxValueBytes {
		return jinja.Undefined(), fmt.Errorf("join: a string of more than %d bytes: refused (%w)", maxValueBytes, errBound)
	}
	return jinja.NewString(strings.Join(items, sep)), nil
}

// splitHelper is str.split.
func splitHelper(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
	s, err := receiver(args, "split")
	if err != nil {
		return jinja.Undefined(), err
	}
	sep, err := optString(args, kw, 1, "sep")
	if err != nil {
		return jinja.Undefined(), err
	}
	max := int64(-1)
	if len(args) > 2 || kw["maxsplit"].IsInt() {
		m := kw["maxsplit"]
		if len(args) > 2 {
			m = args[2]
		}
		if !m.IsInt() {
			return jinja.Undefined(), errors.New("split: maxsplit is not an int")
		}
		max = m.AsInt()
	}
	parts, err := pySplit(s, sep, max)
	if err != nil {
		return jinja.Undefined(), err
	}
	out := make([]jinja.Value, len(parts))
	for i, p := range parts {
		out[i] = jinja.NewString(p)
	}
	return jinja.NewList(out), nil
}

func strHelper(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
	if len(args) != 1 {
		return jinja.Undefined(), errors.New("str: one value")
	}
	v, err := fromJinja(args[0])
	if err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(pyStr(v)), nil
}

func stripHelper(left, right bool) helper {
	return func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
		s, err := receiver(args, "strip")
		if err != nil {
			return jinja.Undefined(), err
		}
		chars, err := optString(args, kw, 1, "chars")
		if err != nil {
			return jinja.Undefined(), err
		}
		return jinja.NewString(pyStrip(s, chars, left, right)), nil
	}
}

// receiver is the str a method is called on.
func receiver(args []jinja.Value, method string) (string, error) {
	if len(args) < 1 {
		return "", fmt.Errorf("%s: no value", method)
	}
	if args[0].IsUndefined() {
		return "", errors.New("undefined value (jinja2's StrictUndefined raises here)")
	}
	if !args[0].IsString() {
		return "", fmt.Errorf("%s() called on %s, which is not a str", method, args[0].String())
	}
	if args[0].AsString() == condUndefined {
		return "", fmt.Errorf("%s() called on an inline if-expression that evaluated to false and has no else section (jinja2 raises)", method)
	}
	return args[0].AsString(), nil
}

// optString reads an optional str argument (position i or keyword name);
// nil when absent or None.
func optString(args []jinja.Value, kw map[string]jinja.Value, i int, name string) (*string, error) {
	v, ok := kw[name]
	if len(args) > i {
		v, ok = args[i], true
	}
	if !ok || v.IsNone() {
		return nil, nil
	}
	if !v.IsString() {
		return nil, fmt.Errorf("%s must be a str", name)
	}
	s := v.AsString()
	return &s, nil
}

// pyStrip is str.strip/lstrip/rstrip: Python's white space, or the
// characters of chars.
func pyStrip(s string, chars *string, left, right bool) string {
	in := pystr.IsSpace
	if chars != nil {
		set := *chars
		in = func(r rune) bool { return strings.ContainsRune(set, r) }
	}
	if left {
		s = strings.TrimLeftFunc(s, in)
	}
	if right {
		s = strings.TrimRightFunc(s, in)
	}
	return s
}

// pySplit is str.split(sep, maxsplit).
func pySplit(s string, sep *string, max int64) ([]string, error) {
	if sep != nil {
		if *sep == "" {
			return nil, errors.New("split: empty separator")
		}
		n := -1
		if max >= 0 && max < maxItems {
			n = int(max) + 1
		}
		if c := strings.Count(s, *sep); c >= maxItems && n < 0 {
			return nil, fmt.Errorf("split: more than %d parts: refused (%w)", maxItems, errBound)
		}
		return strings.SplitN(s, *sep, n), nil
	}
	var out []string
	rs := []rune(s)
	i := 0
	for {
		for i < len(rs) && pystr.IsSpace(rs[i]) {
			i++
		}
		if i >= len(rs) {
			return out, nil
		}
		if max >= 0 && int64(len(out)) >= max {
			// The rest, with trailing white space stripped.
			out = append(out, strings.TrimRightFunc(string(rs[i:]), pystr.IsSpace))
			return out, nil
		}
		j := i
		for j < len(rs) && !pystr.IsSpace(rs[j]) {
			j++
		}
		if len(out) >= maxItems {
			return nil, fmt.Errorf("split: more than %d parts: refused (%w)", maxItems, errBound)
		}
		out = append(out, string(rs[i:j]))
		i = j
	}
}
