package lmeval

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"tally/datasets"
	"tally/internal/hostiletest"
	"tally/internal/pyre"
)

// aliasBomb is a YAML mapping value of levels of anchors, each a list of
// ten aliases of the one before ("billion laughs"), under key.
func aliasBomb(key string, levels, leaf int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:\n  a0: &a0 %q\n", key, strings.Repeat("x", leaf))
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "  a%d: &a%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*a%d, ", i-1), 10), ", "))
	}
	return b.String()
}

// TestHostileIncludes (issue 37, item 1): a task file's includes and YAML
// aliases are data, never a way out. Each case is refused with a clear
// error, within the load's bounds, and quotes nothing of an included file
// that is not a task file.
func TestHostileIncludes(t *testing.T) {
	dir := t.TempDir()
	secret := "root:*:20228:0:99999:7:::\nsecret-token-8f3a: x\n"
	writeTask(t, dir, "shadow", secret)
	writeTask(t, dir, "badyaml", "password: *secret-token-8f3a\n")
	writeTask(t, dir, "env", "API_KEY: secret-token-8f3a\n")
	writeTask(t, dir, "scalar", "secret-token-8f3a\n")
	writeTask(t, dir, "big.yaml", "task: t\n#"+strings.Repeat("x", maxTaskFile)+"\n")
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero")); err != nil {
		t.Fatal(err)
	}
	// Aliases in included files, each within the bound, past it together.
	var incs []string
	for i := range 4 {
		writeTask(t, dir, fmt.Sprintf("amp%d.yaml", i), aliasBomb("metadata", 4, 1<<10))
		incs = append(incs, fmt.Sprintf("amp%d.yaml", i))
	}
	// One include listed 100,000 times, of a file of every task field.
	var fields strings.Builder
	for _, k := range sortedKeys(taskFields) {
		fmt.Fprintf(&fields, "%s: 1\n", k)
	}
	writeTask(t, dir, "m", fields.String())
	tests := []struct {
		name, body string
		err        string
	}{
		{"alias amplification", base + aliasBomb("metadata", 9, 1000), "expand to more than 16 MiB"},
		{"alias amplification of long text", base + aliasBomb("metadata", 4, 10000), "expand to more than 16 MiB"},
		{"aliases in includes", "include: [" + strings.Join(incs, ", ") + "]\n" + base, "expand to more than 16 MiB"},
		{"include a FIFO", "include: fifo\n" + base, "named pipe (FIFO): refused"},
		{"include /dev/zero", "include: zero\n" + base, "is a device: refused"},
		{"include a /proc file", "include: /proc/self/status\n" + base, "a file of /proc"},
		{"include a large file", "include: big.yaml\n" + base, "more than the 1 MiB tally reads"},
		{"include a shadow file", "include: shadow\n" + base, "not an lm-eval task file"},
		{"include a file of other keys", "include: env\n" + base, "not an lm-eval task file: its key at line 1"},
		{"include a YAML error quoting it", "include: badyaml\n" + base, "not an lm-eval task file (not YAML that tally reads"},
		{"include a scalar", "include: scalar\n" + base, "expected a YAML mapping"},
		{"one include listed 100,000 times", "include: [" + strings.TrimSuffix(strings.Repeat("m, ", 100000), ", ") + "]\n" + base, "merge more than 1048576 keys"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTask(t, dir, "t.yaml", tc.body)
			var err error
			hostiletest.Bounded(t, hostiletest.Bytes, func() { _, err = Load(p, nil) })
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("Load: %v, want an error holding %q", err, tc.err)
			}
			if strings.Contains(err.Error(), "secret-token") || strings.Contains(err.Error(), "root:") {
				t.Errorf("the error quotes an included file: %v", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("the error is not one line: %q", err)
			}
		})
	}
}

// TestIncludeDAG (issue 37, item 1): includes that share files (24
// levels, each file including the next twice: 2^24 paths) read each file
// once and merge as lm-eval does.
func TestIncludeDAG(t *testing.T) {
	dir := t.TempDir()
	const levels = 24
	var size int64
	for i := range levels {
		body := fmt.Sprintf("num_fewshot: %d\nmetadata: {level: %d}\n", i, i)
		if i+1 < levels {
			body = fmt.Sprintf("include: [f%d.yaml, f%d.yaml]\n", i+1, i+1) + body
		} else {
			body += "task: t\ntest_split: test\ndoc_to_text: q\ndoc_to_target: a\ndescription: deepest\n"
		}
		size += int64(len(body))
		writeTask(t, dir, fmt.Sprintf("f%d.yaml", i), body)
	}
	l := &taskLoad{done: map[string]*Map{}, open: map[string]bool{}}
	var raw *Map
	var err error
	hostiletest.Bounded(t, hostiletest.Bytes, func() { raw, err = l.file(filepath.Join(dir, "f0.yaml"), false) })
	if err != nil {
		t.Fatal(err)
	}
	if l.b.read != size {
		t.Errorf("read %d bytes, the files hold %d: a file was read more than once", l.b.read, size)
	}
	if mustGet(raw, "num_fewshot") != int64(0) || mustGet(raw, "description") != "deepest" {
		t.Errorf("merged %v", raw.Vals)
	}
	if _, err := Load(filepath.Join(dir, "f0.yaml"), nil); err != nil {
		t.Error(err)
	}
}

// TestSurveyHostile (issue 37, item 1): the survey of a folder holding a
// FIFO named like a task file, a link to /dev/zero and a task including
// either ends, each such file unreadable with its reason.
func TestSurveyHostile(t *testing.T) {
	dir := t.TempDir()
	writeTask(t, dir, "ok.yaml", base)
	writeTask(t, dir, "inc_fifo.yaml", "include: fifo.yaml\n"+base)
	writeTask(t, dir, "inc_zero.yaml", "include: zero.yaml\n"+base)
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.yaml")); err != nil {
		t.Fatal(err)
	}
	var sv *Survey
	var err error
	hostiletest.Bounded(t, hostiletest.Bytes, func() { sv, err = SurveyDir(dir) })
	if err != nil {
		t.Fatal(err)
	}
	loads, _, others := sv.Counts()
	if loads != 1 || others["unreadable"] != 4 {
		t.Errorf("%d load, others %v; entries %+v", loads, others, sv.Entries)
	}
	for _, e := range sv.Entries {
		if e.Status == "unreadable" && !strings.Contains(e.Message, "refused, only regular files are read") {
			t.Errorf("%s: %s", e.File, e.Message)
		}
	}
}

// TestReadTaskFile: the task file itself is read as its includes are.
func TestReadTaskFile(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	var err error
	hostiletest.Bounded(t, hostiletest.Bytes, func() { _, err = ReadTaskFile(filepath.Join(dir, "fifo.yaml")) })
	if err == nil || !strings.Contains(err.Error(), "named pipe") {
		t.Errorf("ReadTaskFile(FIFO): %v", err)
	}
}

// TestJinjaHostile (issue 37, item 2): task-file templates that crashed
// tally (a recursive macro overflowed the goroutine's stack; 'x' * -1
// panicked), exhausted memory (range(10**9), a string doubled in a loop)
// or never ended (nested loops of 100,000; 100,000 nested blocks took
// 11 s to compile) are refused when compiled or fail their render with an
// error naming the bound (errBound), within the bytes a hostile case may
// take: the guard (guard.go) bounds them from outside the engine.
func TestJinjaHostile(t *testing.T) {
	nested := func(open, close string, n int) string {
		return strings.Repeat(open, n) + "q" + strings.Repeat(close, n)
	}
	tests := []struct{ name, src, err, want string }{
		{"recursive macro", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "{% macro %} is not supported", ""},
		{"call block", "{% call f() %}x{% endcall %}", "{% call %} is not supported", ""},
		{"recursive loop", "{% for x in [q] recursive %}{{ loop([]) }}{% endfor %}", "recursive loops are not supported", ""},
		{"range(10**9)", "{% for i in range(10**9) %}{{ i }}{% endfor %}", "range of more than 100000 numbers", ""},
		{"range past int64", "{{ range(-9223372036854775807, 9223372036854775807, 3)|length }}", "range of more than", ""},
		{"nested loops of 100,000", "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "steps", ""},
		{"string doubled in a loop", "{% set ns = namespace(s=q) %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}", "past tally's template bounds", ""},
		{"string doubled by +", "{% set ns = namespace(s=q) %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}", "past tally's template bounds", ""},
		{"list doubled in a loop", "{% set ns = namespace(l=[q]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|length }}", "past tally's template bounds", ""},
		{"string times a trillion", "{{ q * 1000000000000 }}", "more than 16777216 bytes", ""},
		{"string times a negative", "[{{ q * -1 }}]", "", "[]"},
		{"replace of the empty string", "{{ (q * 100000)|replace('', q * 100000) }}", "more than 16777216 bytes", ""},
		{"str.replace of the empty string", "{{ (q * 100000).replace('', q * 100000) }}", "more than 16777216 bytes", ""},
		{"str.format", "{{ '{0}'.format(q) }}", "method format is not supported", ""},
		{"indent", "{{ q|indent(1000000) }}", "filter indent is not supported", ""},
		{"join of shared strings", "{% set s = q * 1000000 %}{% set ns = namespace(l=[s]) %}{% for i in range(10) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|join(',') }}", "past tally's template bounds", ""},
		{"a namespace that holds itself", "{% set ns = namespace(a=1) %}{% set ns.a = ns %}{{ ns }}", "nested more than 64 deep", ""},
		{"list.append", "{% set l = [] %}{{ l.append(l) }}", "method append is not supported", ""},
		{"shared lists printed", "{% set a = range(1000)|list %}{% set b = [a,a,a,a,a,a,a,a,a,a] %}{% set c = [b,b,b,b,b,b,b,b,b,b] %}{% set d = [c,c,c,c,c,c,c,c,c,c] %}{{ d }}", "past tally's template bounds", ""},
		{"shared lists compared in a loop", "{% set a = range(1000)|list %}{% set b = [a,a,a,a,a,a,a,a,a,a] %}{% for i in range(100000) %}{% if b == b %}{% endif %}{% endfor %}", "steps", ""},
		{"output of 100 MB", "{% for i in range(1000) %}{{ q * 100000 }}{% endfor %}", "wrote more than 16777216 bytes", ""},
		{"text of 100 MB", "{% for i in range(100000) %}" + strings.Repeat("x", 1000) + "{% endfor %}", "past tally's template bounds", ""},
		{"slice far out of range", "{{ [1,2,3,4,5,6,7,8,9,10][-1000000000000000000::2]|length }}", "", "5"},
		{"string slice far out of range", "{{ 'héllo'[-1000000000000000000:1000000000000000000:2] }}", "", "hlo"},
		{"split into millions", "{{ ((q ~ ',') * 4000000).split(',')|length }}", "past tally's template bounds", ""},
		{"list of a long string", "{{ (q * 8000000)|list|length }}", "list of more than 1048576 values", ""},
		{"loop over a long string", "{% for c in q * 8000000 %}{% endfor %}", "a loop over a string of more than", ""},
		{"blocks nested 100,000 deep", strings.Repeat("{% if q %}", 100000) + strings.Repeat("{% endif %}", 100000), "blocks nested more than 64 deep", ""},
		{"parentheses nested 100,000 deep", "{{ " + nested("(", ")", 100000) + " }}", "past tally's template bounds", ""},
		{"not 1,000 times", "{{ " + strings.Repeat("not ", 1000) + "q }}", "nested more than 64 deep", ""},
		{"a chain of 1,000 comparisons", "{{ q" + strings.Repeat(" == q", 1000) + " }}", "a chain of more than", ""},
		{"a chain of 1,000 concatenations", "{{ q" + strings.Repeat(" ~ q", 1000) + " }}", "", strings.Repeat("x", 1001)},
		{"an ordinary template", "{% for c in choices %}{{ loop.index }}. {{ c.strip() + '!' }}\n{% endfor %}{{ 'ABCD'[1:3] ~ q|upper }}", "", "1. red!\n2. green!\nBCX"},
	}
	doc := NewMap()
	doc.Set("q", "x")
	doc.Set("choices", []any{" red", "green "})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out string
			var err error
			hostiletest.Bounded(t, hostiletest.Bytes, func() {
				var tm *template
				if tm, err = compileTemplate(tc.src); err == nil {
					out, err = tm.render(doc)
				}
			})
			if tc.err == "" {
				if err != nil || out != tc.want {
					t.Fatalf("got %.60q, %v; want %.60q", out, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("got %.60q, %v; want an error holding %q", out, err, tc.err)
			}
		})
	}
}

// TestFilterBudget (issue 37, item 2): a catastrophic pattern in a regex
// filter or in regexes_to_ignore, against a few thousand characters of
// output, fails the sample's scoring with pyre.ErrTooComplex naming the
// filter and the pattern, within one budget the sample's regexes share
// (about 0.1 s of steps; a search spent 10 s before). The sample is then
// stored as unscorable with that reason. A pattern that finishes scores
// as before.
func TestFilterBudget(t *testing.T) {
	dir := t.TempDir()
	filter := base + "filter_list:\n  - name: strict\n    filter:\n      - function: regex\n        regex_pattern: '(a+)+$'\n      - function: take_first\n"
	ignore := base + "metric_list:\n  - metric: exact_match\n    regexes_to_ignore: ['((a|aa)+)+$']\n"
	hostile := strings.Repeat("a", 3000) + "!"
	tests := []struct {
		name, body, pred, err string
		want                  map[string]float64
	}{
		{"filter", filter, hostile, "filter strict: regular expression search exceeded its step budget", nil},
		{"regexes_to_ignore", ignore, hostile, "exact_match,none: regular expression search exceeded its step budget", nil},
		{"filter that finishes", filter, "aaa", "", map[string]float64{"exact_match,strict": 0}},
		{"regexes_to_ignore that finishes", ignore, "42aa", "", map[string]float64{"exact_match,none": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			task, err := Load(writeTask(t, dir, "t.yaml", tc.body), nil)
			if err != nil {
				t.Fatal(err)
			}
			s := datasets.Sample{Task: "t", ID: "0", References: json.RawMessage(`"42"`)}
			var got map[string]float64
			hostiletest.Bounded(t, hostiletest.Bytes, func() { got, err = task.Scorer()(tc.pred, s) })
			if tc.err == "" {
				if err != nil || !maps.Equal(got, tc.want) {
					t.Fatalf("scores %v, %v; want %v", got, err, tc.want)
				}
				return
			}
			if !errors.Is(err, pyre.ErrTooComplex) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("scores %v, error %v; want pyre.ErrTooComplex, %q", got, err, tc.err)
			}
		})
	}
}
