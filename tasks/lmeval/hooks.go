package lmeval

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"tally/internal/fsguard"
	"tally/internal/pyliteral"
)

// This file runs the Python code a task file names with "!function
// module.name" (a task folder's utils.py: process_docs, doc_to_text,
// few-shot formatting, process_results) where tally has a Go port of it.
//
// A port is recognised by the SHA-256 of the module's source file: the
// ported function is the one in that exact file, read the way Python
// would (a partial's keyword arguments, a module-level literal, the
// folder the module sits in), and a module that differs by one byte is
// refused with its digest, since tally cannot know what the changed code
// does. A port runs no Python: a user needs only lm-eval's task folder
// (its YAML and .py files, as in its repository at the commit tally
// follows). A function with no port is refused, unless the user opted in
// to the Python bridge (pybridge.go, pyhooks.go), which runs it in Python.
// lm-eval looks for the module beside the YAML file that names it first
// (lm_eval/tasks/_yaml_loader.py _import_func_in_yml), which is where
// tally looks; a module lm-eval would import from elsewhere (a dotted
// path into the lm_eval package) is found under the folder the task file
// is in when that folder is lm-eval's lm_eval/tasks.
//
// Each port states the lm-eval file and function it reproduces, and the
// reference harness (cmd/tally TestLMEvalReference) checks it against
// lm-eval's own code on the task files of its family.

// hookAddress is the address tally writes where Python's repr of a
// function shows one ("<function f at 0x7f...>"), which differs from
// run to run.
const hookAddress = "0x0"

// pyHook is a Python callable of a task's module, run by a Go port: one
// of doc, docs and results is set.
type pyHook struct {
	fn   Function
	path string // the module file
	// repr is str(callable) ("<function f at 0x0>", or a partial's
	// "functools.partial(<function f at 0x0>, k=v)"); source is
	// inspect.getsource(callable) for a function ("" for a partial, whose
	// getsource raises): TaskConfig.to_dict writes source, else repr.
	repr, source string
	// doc is a doc_to_text / doc_to_target / few-shot formatting function.
	doc func(doc *Map) (any, error)
	// docs is a process_docs function (a dataset's documents in, out).
	docs func(docs []*Map) ([]*Map, error)
	// results is a process_results function: the document and the
	// filtered responses in, metric values out (int64 or float64, as the
	// Python function's values are ints or floats).
	results func(doc *Map, results []any) (*Map, error)
	// dataset is a custom_dataset function: called with the task's
	// metadata and dataset_kwargs, as lm-eval calls it.
	dataset func(kwargs *Map) (datasetSpec, error)
	// meanSkipping is an aggregation that is the mean of the values other
	// than this one (RULER's aggregate_metrics and its -1), set with
	// aggregation.
	meanSkipping float64
	aggregation  bool
	// aggregate is a bridged aggregation function: the metric's values in,
	// its aggregate out.
	aggregate func(items []any) (any, error)
	// samples is a bridged fewshot_config.samples function: called with
	// no arguments, the shots out.
	samples func() (any, error)
	// flatMean is an aggregation that flattens lists of numbers and
	// averages them (IFEval's agg_inst_level_acc): each sample's list is
	// kept as the statistics [sum, length] (hooks_ifeval.go).
	flatMean bool
	// digest is the module's SHA-256 (it enters the scoring spec); for a
	// bridged hook, modulesDigest's identity of its folder's Python.
	digest string
	// bridged: the Python bridge runs it (pyhooks.go), as the worker's
	// callable handle; class when it is a class (a filter).
	bridged bool
	bridge  *pyBridge
	handle  int
	class   bool
	name    string // the callable's __name__ (a metric function's name)
}

// serialized is what TaskConfig.to_dict writes for the callable at the
// top level of a config (serialize_function: getsource, else str).
func (h *pyHook) serialized() string {
	if h.source != "" {
		return h.source
	}
	return h.repr
}

// hookKind is what a task field needs of a hook.
type hookKind int

const (
	hookDoc hookKind = iota
	hookDocs
	hookResults
	hookDataset
	hookAggregation
	hookFilter
	hookMetric
	hookSamples
)

func (k hookKind) String() string {
	return [...]string{"a document function", "a process_docs function", "a process_results function", "a custom_dataset function",
		"an aggregation function", "a filter", "a metric function",
		"a few-shot samples function"}[k]
}

// datasetSpec is what a ported custom_dataset function loads: the
// configuration (the folder of --data's Hub layout) and the splits it
// returns, read from --data as any task's are.
type datasetSpec struct {
	name   string
	splits []string
}

// hookModule is a ported Python module: the functions tally has ports
// of, by name.
type hookModule struct {
	// where names the module in lm-eval's tree, for messages.
	where string
	defs  map[string]hookDef
}

// hookDef ports one function of a module: it builds the hook for a call
// with the keyword arguments kw (a partial's; nil for the function
// itself).
type hookDef func(m *pyModule, kw *Map) (*pyHook, error)

// pyModule is a module file as read: its path and source.
type pyModule struct {
	path, src string
}

// maxModuleFile bounds a module file tally reads (lm-eval's largest task
// module is about 150 KB).
const maxModuleFile = 4 << 20

// hookModules are the ported modules, by the SHA-256 of their source.
var hookModules = map[string]*hookModule{}

// registerHookModule registers a ported module under the digests of the
// files it was ported from.
func registerHookModule(m *hookModule, digests ...string) {
	for _, d := range digests {
		if _, dup := hookModules[d]; dup {
			panic("lmeval: hook module " + d + " registered twice")
		}
		hookModules[d] = m
	}
}

// errNoPort is wrapped by the refusal of a !function tally has no port of.
var errNoPort = errors.New("no Go port")

// modulePath is where lm-eval finds a !function's module: MOD.py (dots as
// folders) beside the YAML file; a dotted path into lm-eval's tasks
// package ("lm_eval.tasks.x.utils") under the tasks folder above it.
func modulePath(f Function) (string, string, error) {
	mod, name, ok := strings.Cut(reverse(f.Name), ".")
	if !ok || f.Dir == "" {
		return "", "", fmt.Errorf("!function %s: no module beside a task file", f.Name)
	}
	mod, name = reverse(name), reverse(mod)
	p := filepath.Join(f.Dir, strings.ReplaceAll(mod, ".", string(filepath.Separator))+".py")
	if _, err := os.Stat(p); err == nil {
		return p, name, nil
	}
	if rest, ok := strings.CutPrefix(mod, "lm_eval.tasks."); ok {
		for d := f.Dir; ; d = filepath.Dir(d) {
			if filepath.Base(d) == "tasks" && filepath.Base(filepath.Dir(d)) == "lm_eval" {
				q := filepath.Join(d, strings.ReplaceAll(rest, ".", string(filepath.Separator))+".py")
				if _, err := os.Stat(q); err == nil {
					return q, name, nil
				}
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", "", fmt.Errorf("!function %s: module %s.py not found beside the task file", f.Name, mod)
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// readModule reads a module file within maxModuleFile and returns it with
// its SHA-256.
func readModule(path string) (*pyModule, string, error) {
	data, err := fsguard.ReadFile("", path, true, maxModuleFile)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(data)
	return &pyModule{path: path, src: string(data)}, hex.EncodeToString(sum[:]), nil
}

// resolveHook finds the port of a !function: the module's digest names a
// ported module, and the name one of its functions or a partial of one.
func resolveHook(f Function, kind hookKind) (*pyHook, error) {
	path, name, err := modulePath(f)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoPort, err)
	}
	m, digest, err := readModule(path)
	if err != nil {
		return nil, fmt.Errorf("%w: !function %s: %v", errNoPort, f.Name, err)
	}
	h, err := portedHook(f, m, digest, name, kind)
	if errors.Is(err, errNoPort) {
		// No Go port: the Python bridge runs it, where the user opted in.
		return bridgedHook(f, path, name, kind, err)
	}
	return h, err
}

// portedHook is the Go port of a module's function (errNoPort when there
// is none for kind).
func portedHook(f Function, m *pyModule, digest, name string, kind hookKind) (*pyHook, error) {
	path := m.path
	hm := hookModules[digest]
	if hm == nil {
		return nil, fmt.Errorf("%w: !function %s is Python code tally has no port of (%s, SHA-256 %s…)", errNoPort, f.Name, filepath.Base(path), digest[:12])
	}
	var h *pyHook
	var err error
	if def, ok := hm.defs[name]; ok && defSource(m.src, name) != "" {
		if h, err = def(m, nil); err != nil {
			return nil, fmt.Errorf("!function %s (%s): %w", f.Name, hm.where, err)
		}
		h.repr = fmt.Sprintf("<function %s at %s>", name, hookAddress)
		h.source = defSource(m.src, name)
	} else if base, kw, args, ok := partialOf(m.src, name); ok && hm.defs[base] != nil {
		if h, err = hm.defs[base](m, kw); err != nil {
			return nil, fmt.Errorf("!function %s (%s): %w", f.Name, hm.where, err)
		}
		h.repr = fmt.Sprintf("functools.partial(<function %s at %s>%s)", base, hookAddress, args)
	} else {
		return nil, fmt.Errorf("%w: !function %s: %s has no function %s that tally has a port of", errNoPort, f.Name, hm.where, name)
	}
	h.fn, h.path, h.digest = f, path, digest
	switch {
	case kind == hookDoc && h.doc == nil, kind == hookDocs && h.docs == nil, kind == hookResults && h.results == nil,
		kind == hookDataset && h.dataset == nil, kind == hookAggregation && !h.aggregation,
		kind == hookFilter, kind == hookMetric, kind == hookSamples:
		return nil, fmt.Errorf("%w: !function %s is not %s", errNoPort, f.Name, kind)
	}
	return h, nil
}

// partialOf reads "NAME = partial(BASE, k=v, ...)" at the top level of a
// module's source: the base function, the keyword arguments (Python
// literals) in order, and how Python's repr of the partial lists them
// (", k=repr(v)" each).
func partialOf(src, name string) (base string, kw *Map, reprArgs string, ok bool) {
	if !identifier.MatchString(name) {
		return "", nil, "", false
	}
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s*=\s*partial\(`)
	loc := re.FindStringIndex(src)
	if loc == nil {
		return "", nil, "", false
	}
	body, ok := balanced(src[loc[1]:])
	if !ok {
		return "", nil, "", false
	}
	parts := splitTop(body)
	if len(parts) == 0 {
		return "", nil, "", false
	}
	base = strings.TrimSpace(parts[0])
	if !identifier.MatchString(base) {
		return "", nil, "", false
	}
	kw = NewMap()
	var b strings.Builder
	for _, p := range parts[1:] {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		k, v, found := strings.Cut(p, "=")
		k = strings.TrimSpace(k)
		if !found || !identifier.MatchString(k) {
			return "", nil, "", false
		}
		lit, err := pyliteral.Eval(strings.TrimSpace(v))
		if err != nil {
			return "", nil, "", false
		}
		val, err := fromPy(lit)
		if err != nil {
			return "", nil, "", false
		}
		kw.Set(k, val)
		fmt.Fprintf(&b, ", %s=%s", k, lit.Repr())
	}
	return base, kw, b.String(), true
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// balanced returns the text up to the parenthesis that closes one already
// open (strings, comments and brackets skipped), and whether it was found.
func balanced(s string) (string, bool) {
	depth := 1
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				return s[:i], true
			}
		case '\'', '"':
			for i++; i < len(s) && s[i] != c; i++ {
				if s[i] == '\\' {
					i++
				}
			}
			if i >= len(s) {
				return "", false
			}
		case '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		}
	}
	return "", false
}

// splitTop splits at the commas outside strings and brackets.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case '\'', '"':
			for i++; i < len(s) && s[i] != c; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// defSource is inspect.getsource of a top-level function of a module: its
// decorators and "def" line through the last line of its body (a body
// ends at the first line of code back at the left margin; blank and
// comment lines after it are not part of it); "" when the module has no
// such def.
func defSource(src, name string) string {
	lines := strings.SplitAfter(src, "\n")
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "def "+name+"(") || strings.HasPrefix(l, "async def "+name+"(") {
			start = i
			break
		}
	}
	if start < 0 {
		return ""
	}
	first := start
	for first > 0 && strings.HasPrefix(lines[first-1], "@") {
		first--
	}
	// The header: through the line whose brackets close.
	i, depth, inString := start, 0, ""
	scan := func(l string) {
		for k := 0; k < len(l); k++ {
			if inString != "" {
				if strings.HasPrefix(l[k:], inString) {
					k += len(inString) - 1
					inString = ""
				} else if l[k] == '\\' {
					k++
				}
				continue
			}
			switch c := l[k]; {
			case c == '#':
				return
			case strings.HasPrefix(l[k:], `"""`) || strings.HasPrefix(l[k:], `'''`):
				inString = l[k : k+3]
				k += 2
			case c == '"' || c == '\'':
				inString = string(c)
			case c == '(' || c == '[' || c == '{':
				depth++
			case c == ')' || c == ']' || c == '}':
				depth--
			}
		}
		if len(inString) == 1 {
			inString = "" // an unterminated one-line string: Python's error, not ours
		}
	}
	for ; i < len(lines); i++ {
		scan(lines[i])
		if depth == 0 && inString == "" {
			break
		}
	}
	if i == len(lines) {
		return "" // a header that never closes: Python's SyntaxError
	}
	last := i
	for i++; i < len(lines); i++ {
		l := lines[i]
		code := strings.TrimSpace(l)
		if inString == "" && depth == 0 && code != "" && !strings.HasPrefix(code, "#") && l[0] != ' ' && l[0] != '\t' {
			break
		}
		scan(l)
		if code != "" && !strings.HasPrefix(code, "#") {
			last = i
		}
	}
	return strings.Join(lines[first:last+1], "")
}

// moduleLiteral is the value of a module-level "NAME = <literal>" of a
// module's source, read as ast.literal_eval reads it.
func moduleLiteral(src, name string) (any, error) {
	if !identifier.MatchString(name) {
		return nil, fmt.Errorf("%q is not a Python name", name)
	}
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `\s*=\s*`)
	loc := re.FindStringIndex(src)
	if loc == nil {
		return nil, fmt.Errorf("no %s = ... in the module", name)
	}
	rest := src[loc[1]:]
	text := rest
	if len(rest) > 0 && strings.ContainsRune("([{", rune(rest[0])) {
		body, ok := balanced(rest[1:])
		if !ok {
			return nil, fmt.Errorf("%s: unbalanced literal", name)
		}
		text = rest[:len(body)+2]
	} else if j := strings.IndexByte(rest, '\n'); j >= 0 {
		text = rest[:j]
	}
	v, err := pyliteral.Eval(strings.TrimSpace(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return fromPy(v)
}

// docStr is doc[key] as a str, as Python code indexing a document does
// (KeyError for a missing key, TypeError where a str is concatenated).
func docStr(doc *Map, key string) (string, error) {
	v, ok := doc.Get(key)
	if !ok {
		return "", fmt.Errorf("the document has no %q (KeyError)", key)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("document field %q is %s, not a str", key, pyStr(v))
	}
	return s, nil
}

// filterDocs is dataset.filter(lambda x: x[key] == value).
func filterDocs(key string, value any) func([]*Map) ([]*Map, error) {
	return func(docs []*Map) ([]*Map, error) {
		var out []*Map
		for _, d := range docs {
			v, ok := d.Get(key)
			if !ok {
				return nil, fmt.Errorf("process_docs: a document has no %q (KeyError)", key)
			}
			if pyEqual(v, value) {
				out = append(out, d)
			}
		}
		return out, nil
	}
}

// kwString is a partial's str keyword argument.
func kwString(kw *Map, key string) (string, error) {
	v, ok := kw.Get(key)
	if !ok {
		return "", fmt.Errorf("the partial gives no %s", key)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s=%s is not a str", key, pyStr(v))
	}
	return s, nil
}

// kwBool is a partial's bool keyword argument, def when absent.
func kwBool(kw *Map, key string, def bool) (bool, error) {
	v, ok := kw.Get(key)
	if !ok {
		return def, nil
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("%s=%s is not a bool", key, pyStr(v))
	}
	return b, nil
}
