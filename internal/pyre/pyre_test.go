package pyre

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"tally/internal/pyref"
)

var update = flag.Bool("update", false, "rewrite testdata/expected.json from python3")

type refCase struct {
	Pattern string   `json:"pattern"`
	Texts   []string `json:"texts"`
	Repl    string   `json:"repl"`
	// Ignore marks a regexes_to_ignore pattern: replaced by "".
	Ignore bool `json:"-"`
}

type refResult struct {
	Matches [][]json.RawMessage `json:"matches"`
	Sub     *string             `json:"sub"`
}

type refCaseOut struct {
	Error   *string     `json:"error"`
	Results []refResult `json:"results"`
}

type refOut struct {
	Python  string             `json:"python"`
	Unicode string             `json:"unicode"`
	Cases   []refCaseOut       `json:"cases"`
	Classes map[string][][]int `json:"classes,omitempty"`
	Escapes []string           `json:"escapes"`
}

// escapeTexts are choices of the kind MultiChoiceRegexFilter escapes
// (re.escape), with every character re.escape treats apart.
var escapeTexts = []string{"", "plain", "(A) 3.5 + x^2 = $y", "a|b [c] {d} ?*+-", "#~& \t\n\r\v\f", "naïve — «é» 日本", "under_score, comma; 'q' \"dq\" %@!=<>/`"}

// TestEscapeMatchesItself: an escaped text, compiled, matches exactly the
// text.
func TestEscapeMatchesItself(t *testing.T) {
	for _, s := range escapeTexts[1:] {
		m, err := MustCompile(Escape(s)).Search("<" + s + ">")
		if n := len([]rune(s)); err != nil || m == nil || m.Start != 1 || m.End != 1+n {
			t.Errorf("Escape(%q) = %q does not match the text itself: %v %v", s, Escape(s), m, err)
		}
	}
}

// modelTexts are outputs of the kind lm-eval's filters read.
var modelTexts = []string{
	"", "\n", "42", "42.\n", " 18", "-3", "$1,000.50", "#### 1,234", "#### -5\n",
	"Janet sells 16 - 3 - 4 = 9 duck eggs a day. She makes 9 * 2 = $18 every day at the farmer's market.\n#### 18",
	"The answer is 18.\n\nQuestion: How many?", "So the answer is (B).", "so the answer is False.",
	"Let's think step by step. the answer is the answer is X.", "the answer is ", "the answer is 7",
	"The answer: 12 apples.", "The final answer: yes\n", "The final answer is $3,000.",
	"Yes, no. yes! NO", "True or False? true", "valid invalid", "(A) or (C)", "B\n", "[C]", " D ", "E.",
	"Answer: (D)", "答案是 (C)", "答案是 42。", "é 12 ٣٤ ۵ ½ Ⅻ _x", "tab\there", "line1\nline2\n\n",
	"  spaced  \n", "1. 2. 3.", "(-12.5)", "\"quoted\" <tag> [x]", "a\x1cb\u00a0c\u2028d",
}

// corpus is the patterns lm-eval's task files use in filters and
// metrics, and patterns that exercise each corner of sre's semantics.
var corpus = []refCase{
	{Pattern: `(-?[$0-9.,]{2,})|(-?[0-9]+)`},
	{Pattern: `#### (\-?[0-9\.\,]+)`},
	{Pattern: `The answer is (\-?[0-9\.\,]+).`},
	{Pattern: `The answer is (\-?[0-9\.\,]*[0-9]+)`},
	{Pattern: `(?<=the answer is )(.*)(?=.)`},
	{Pattern: `(?<=The answer is )(.*)(?=.)`},
	{Pattern: `((?<=The answer is )(.*)(?=.)|(?<=the answer is )(.*)(?=.)|(?<=The answer: )(.*)(?=.)|(?<=The final answer: )(.*)(?=.))`},
	{Pattern: `(\([A-Z]\))`},
	{Pattern: `\b(Yes|No|yes|no)\b`},
	{Pattern: `\b(True|False)\b`},
	{Pattern: `\b(valid|invalid)\b`},
	{Pattern: `([-0-9]+)`},
	{Pattern: `([A-E]).*`},
	{Pattern: `([ABCD])`},
	{Pattern: `answer is \(?([ABCDEFGHIJ])\)?`},
	{Pattern: `答案是 \(?([ABCDEFGHIJ])\)?`},
	{Pattern: `答案是 (\-?[0-9\.\,]+)。`},
	{Pattern: `The final answer is ((-?[$0-9.,]{2,})|(-?[0-9]+))`},
	{Pattern: `(-?[0-9]+([ .,][0-9.,]+)?)`},
	{Pattern: `best answer is ([A-Z])`},
	{Pattern: `[tT]he best answer is ([A-Z])`},
	{Pattern: `^\s*([A-D])`},
	{Pattern: `^(.*?)\s*$`},
	{Pattern: `^(.*?)(?=\n|$)`},
	{Pattern: `(?<= )([" \[\(<{}>\)\]]+)|([" \[\(<{}>\)\]]+)`},
	{Pattern: `(((?<=[answer is ])[A-D])|([A-D]\n)|([A-D]\.)|( [A-D] )|(^[A-D]$)|(\[[A-D]\])|([A-D])|(?<=..Final Answer..: )(.*)(?=.)|(?<=..answer..: )(.*)(?=.)|(?<=..Answer..: )(.*)(?=.))`},
	// regexes_to_ignore of exact_match, with the empty replacement.
	{Pattern: `,`, Ignore: true},
	{Pattern: `\$`, Ignore: true},
	{Pattern: `(?s).*#### `, Ignore: true},
	{Pattern: `\.$`, Ignore: true},
	{Pattern: ` `, Ignore: true},
	{Pattern: `\n`, Ignore: true},
	{Pattern: `\\`, Ignore: true},
	// sre's corners (from here on, lmevalPatterns).
	{Pattern: `a*?`}, {Pattern: `a*`}, {Pattern: `(a|)*`}, {Pattern: `(a*)*`}, {Pattern: `(a*)+b`},
	{Pattern: `(?:a|ab)(c|bcd)(d*)`}, {Pattern: `\b`}, {Pattern: `\B`}, {Pattern: `$`}, {Pattern: `^`},
	{Pattern: `(?m)^a$`}, {Pattern: `(?m)$`}, {Pattern: `a$`}, {Pattern: `\Z`}, {Pattern: `\A.`}, {Pattern: `(a)|b`},
	{Pattern: `(a)\1`}, {Pattern: `(?P<x>a+)(?P=x)`}, {Pattern: `(?>a+)b`}, {Pattern: `(?>a+)a`}, {Pattern: `a++b`},
	{Pattern: `a*+a`}, {Pattern: `(ab)*?c`}, {Pattern: `(?=(a+))a*b\1`}, {Pattern: `(?<!a)b`}, {Pattern: `(?<=ab|cd)x`},
	{Pattern: `.`}, {Pattern: `(?s).`}, {Pattern: `[^a-c]`}, {Pattern: `[\d\s]`}, {Pattern: `[\w-]`}, {Pattern: `[]a]`},
	{Pattern: `[^]a]`}, {Pattern: `[a-]`}, {Pattern: `\x41\u00e9\101\0`}, {Pattern: `a{2,3}`}, {Pattern: `a{,2}`},
	{Pattern: `a{2}`}, {Pattern: `a{`}, {Pattern: `a{1,x}`}, {Pattern: `{`}, {Pattern: `x{2}?`}, {Pattern: "(?x) a b # comment\n c"},
	{Pattern: `(?x)[ ]a`}, {Pattern: `(?a)\w+`}, {Pattern: `(?a:\w)\w`}, {Pattern: `\d+`}, {Pattern: `\s+`}, {Pattern: `\w+`},
	{Pattern: `\W+`}, {Pattern: `\D`}, {Pattern: `\S+`}, {Pattern: `(a)(?:b(c)|d)`}, {Pattern: `(a)|(b)`},
	{Pattern: `(?:(a)|b)*`}, {Pattern: `(a|b)*?b`}, {Pattern: `(?:)`}, {Pattern: ``}, {Pattern: `()*`}, {Pattern: `(|a)+`},
	{Pattern: `(a?)*?b`}, {Pattern: `(a)(?=(b))`}, {Pattern: `(?!a)`}, {Pattern: `x*?$`}, {Pattern: `(?:a*?)*?b`},
	{Pattern: `(a+)+$`}, {Pattern: `[\b]`}, {Pattern: `\.`}, {Pattern: `(?s:a.)b.`}, {Pattern: `(?m:^b)`},
	{Pattern: `(?-s:.)`}, {Pattern: `(a)(b)?`, Repl: `[\2\1]`}, {Pattern: `(?P<w>\w)`, Repl: `\g<w>\g<1>\n\\`},
	{Pattern: `a`, Repl: `\q`}, {Pattern: `(a)`, Repl: `\2`},
	// Patterns Python refuses (and IGNORECASE, which tally refuses).
	{Pattern: `(`}, {Pattern: `)`}, {Pattern: `a**`}, {Pattern: `*a`}, {Pattern: `(?<=a+)b`}, {Pattern: `\1(a)`},
	{Pattern: `[z-a]`}, {Pattern: `\q`}, {Pattern: `(?P<1>a)`}, {Pattern: `(?i)abc`}, {Pattern: `a|(?s)b`}, {Pattern: `[a`},
	{Pattern: `\`}, {Pattern: `(?P=x)`}, {Pattern: `x{3,2}`}, {Pattern: `(a)(?<=\1)`}, {Pattern: `(?<=(a)\1)`}, {Pattern: `(?z)`},
	{Pattern: `^*`}, {Pattern: `\400`},
}

// lmevalPatterns is the number of corpus entries taken from lm-eval's task
// files (run on modelTexts); the rest run on edgeTexts.
const lmevalPatterns = 33

// edgeTexts are short texts for the corner patterns.
var edgeTexts = []string{"", "a", "aaa", "ab", "abab", "aab", "b", "abcd", "a\n", "a\nb\n", "xay", "é_1 ٣", " a b ", "aa\nbb", "abx cdx", "bcbd"}

// fuzz returns random patterns over a small grammar with random texts,
// the same on every run (fixed seed).
func fuzz(n int) []refCase {
	r := rand.New(rand.NewPCG(27, 1))
	atoms := []string{"a", "b", ".", `\d`, `\w`, `\s`, `\W`, `\b`, `\B`, "^", "$", "[ab]", "[^a]", `[\d.]`, " ", `\n`, "é", "1"}
	quants := []string{"", "", "", "*", "+", "?", "*?", "+?", "??", "{1,2}", "{0,1}?", "*+", "{2}", "{,2}"}
	var gen func(depth int, groups *int) string
	gen = func(depth int, groups *int) string {
		var b strings.Builder
		for i := 0; i < 1+r.IntN(3); i++ {
			var item string
			switch x := r.IntN(10); {
			case x < 6 || depth > 2:
				item = atoms[r.IntN(len(atoms))]
			case x == 6:
				*groups++
				item = "(" + gen(depth+1, groups) + ")"
			case x == 7:
				item = "(?:" + gen(depth+1, groups) + "|" + gen(depth+1, groups) + ")"
			case x == 8:
				look := []string{"(?=", "(?!", "(?<=", "(?<!", "(?>"}[r.IntN(5)]
				if strings.HasPrefix(look, "(?<") {
					item = look + []string{"a", "ab", "[ab]", `\d`, "a|b"}[r.IntN(5)] + ")"
				} else {
					item = look + gen(depth+1, groups) + ")"
				}
			default:
				if *groups > 0 {
					item = fmt.Sprintf(`\%d`, 1+r.IntN(*groups))
				} else {
					item = "a"
				}
			}
			q := quants[r.IntN(len(quants))]
			if strings.HasPrefix(item, `\b`) || strings.HasPrefix(item, `\B`) || item == "^" || item == "$" {
				q = ""
			}
			b.WriteString(item + q)
		}
		return b.String()
	}
	alphabet := []rune("ab ab\n1é_.x")
	var out []refCase
	for i := 0; i < n; i++ {
		groups := 0
		c := refCase{Pattern: gen(0, &groups), Repl: `<\g<0>>`}
		for t := 0; t < 5; t++ {
			var tb strings.Builder
			for j := 0; j < r.IntN(9); j++ {
				tb.WriteRune(alphabet[r.IntN(len(alphabet))])
			}
			c.Texts = append(c.Texts, tb.String())
		}
		out = append(out, c)
	}
	return out
}

func allCases() []refCase {
	var out []refCase
	for i, c := range corpus {
		if c.Repl == "" && !c.Ignore {
			c.Repl = `<\g<0>>`
		}
		switch {
		case i < lmevalPatterns:
			c.Texts = modelTexts
		default:
			c.Texts = append(append([]string(nil), edgeTexts...), modelTexts[8:11]...)
		}
		out = append(out, c)
	}
	return append(out, fuzz(300)...)
}

func check(t *testing.T, ref refOut, source string) {
	cs := allCases()
	if len(ref.Cases) != len(cs) {
		t.Fatalf("%s: %d results for %d cases (regenerate: go test ./internal/pyre -run TestAgainstPython -update)", source, len(ref.Cases), len(cs))
	}
	for i, c := range cs {
		want := ref.Cases[i]
		re, err := Compile(c.Pattern)
		if want.Error != nil {
			if err == nil {
				t.Errorf("%s: pattern %q: Python refuses it (%s), Go compiled it", source, c.Pattern, *want.Error)
			}
			continue
		}
		if err != nil {
			if e, ok := err.(*Error); ok && e.Unsupported {
				continue // refused on purpose, in one line
			}
			t.Errorf("%s: pattern %q: Python compiles it, Go: %v", source, c.Pattern, err)
			continue
		}
		for j, text := range c.Texts {
			got, err := re.FindAll(text)
			if err != nil {
				t.Errorf("pattern %q text %q: %v", c.Pattern, text, err)
				continue
			}
			w := want.Results[j]
			gotJSON := matchesJSON(got)
			var wantAny any
			raw, _ := json.Marshal(w.Matches)
			json.Unmarshal(raw, &wantAny)
			wantJSON, _ := json.Marshal(wantAny)
			if gotJSON != string(wantJSON) {
				t.Errorf("%s: pattern %q text %q:\n Go     %s\n Python %s", source, c.Pattern, text, gotJSON, wantJSON)
			}
			sub, err := re.Sub(c.Repl, text)
			switch {
			case w.Sub == nil && err == nil:
				t.Errorf("%s: pattern %q sub %q on %q: Python refuses the template, Go gave %q", source, c.Pattern, c.Repl, text, sub)
			case w.Sub != nil && err != nil:
				t.Errorf("%s: pattern %q sub %q on %q: %v", source, c.Pattern, c.Repl, text, err)
			case w.Sub != nil && sub != *w.Sub:
				t.Errorf("%s: pattern %q sub %q on %q: Go %q, Python %q", source, c.Pattern, c.Repl, text, sub, *w.Sub)
			}
		}
	}
}

func matchesJSON(ms []*Match) string {
	out := make([][]any, 0, len(ms))
	for _, m := range ms {
		groups := make([]any, 0, len(m.Groups)-1)
		for g := 1; g < len(m.Groups); g++ {
			if m.Set[g] {
				groups = append(groups, m.Groups[g])
			} else {
				groups = append(groups, nil)
			}
		}
		out = append(out, []any{m.Start, m.End, groups})
	}
	b, _ := json.Marshal(out)
	return string(b)
}

func loadGolden(t *testing.T) refOut {
	b, err := os.ReadFile("testdata/expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref refOut
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	return ref
}

// TestAgainstGolden compares every case with CPython's results recorded
// in testdata/expected.json (no Python needed).
func TestAgainstGolden(t *testing.T) {
	ref := loadGolden(t)
	check(t, ref, "expected.json (CPython "+ref.Python+")")
	checkClasses(t, ref)
}

// TestAgainstPython runs testdata/reference.py on this machine's python3:
// lm-eval's patterns, sre's corners and 300 random patterns, each on
// several texts, then \d, \s and \w over every code point.
func TestAgainstPython(t *testing.T) {
	var ref refOut
	in := map[string]any{"cases": allCases(), "classes": true, "escapes": escapeTexts}
	pyref.Run(t, "testdata/reference.py", in, &ref)
	check(t, ref, "python3 "+ref.Python)
	for i, s := range escapeTexts {
		if got := Escape(s); i >= len(ref.Escapes) || got != ref.Escapes[i] {
			t.Errorf("Escape(%q) = %q, Python's re.escape %q", s, got, ref.Escapes)
		}
	}
	checkClasses(t, ref)
	if *update {
		b, _ := json.Marshal(ref)
		if err := os.WriteFile("testdata/expected.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkClasses compares \d, \s, \w and str.isspace with Python over every
// code point assigned in Python's Unicode database.
func checkClasses(t *testing.T, ref refOut) {
	if ref.Classes == nil {
		t.Fatal("no class ranges in the reference")
	}
	in := func(rs [][]int, c int) bool {
		for _, r := range rs {
			if r[0] <= c && c <= r[1] {
				return true
			}
		}
		return false
	}
	d, s, w := MustCompile(`\d`), MustCompile(`\s`), MustCompile(`\w`)
	bad := map[string]int{}
	for c := 0; c <= 0x10FFFF; c++ {
		if in(ref.Classes["unassigned"], c) || (c >= 0xD800 && c <= 0xDFFF) {
			continue
		}
		ch := string(rune(c))
		for _, x := range []struct {
			name string
			re   *Regexp
		}{{"d", d}, {"s", s}, {"w", w}} {
			want := in(ref.Classes[x.name], c)
			if got := x.re.matchesOne(ch); got != want {
				if bad[x.name] < 10 {
					t.Errorf(`\%s on U+%04X: Go %v, Python %v`, x.name, c, got, want)
				}
				bad[x.name]++
			}
		}
		if got, want := IsSpace(rune(c)), in(ref.Classes["isspace"], c); got != want {
			t.Errorf("IsSpace(U+%04X): Go %v, Python %v", c, got, want)
		}
	}
	for k, n := range bad {
		t.Errorf(`\%s: %d code points differ`, k, n)
	}
}

func (re *Regexp) matchesOne(s string) bool {
	m, _ := re.Search(s)
	return m != nil && m.Start == 0
}

func TestRefusals(t *testing.T) {
	for _, p := range []string{`(?i)abc`, `(?i:a)`, `\N{EM DASH}`, `(a)(?(1)b|c)`} {
		_, err := Compile(p)
		e, ok := err.(*Error)
		if !ok || !e.Unsupported {
			t.Errorf("%q: %v, want an unsupported-feature error", p, err)
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error is not one line: %q", p, err)
		}
	}
}

// TestStepBudget (issue 37, item 2): catastrophic patterns against a few
// thousand characters fail with ErrTooComplex within their budget of
// steps (MaxSteps and StepsPerRune a code point: about 0.1 s), where a
// findall spent 50,000,000 steps on each search (10 s a sample); the
// budget is shared across a call's searches and, given one, across calls.
func TestStepBudget(t *testing.T) {
	long := strings.Repeat("a", 3000) + "!"
	tests := []struct {
		pattern, text string
		call          string // FindAll, Sub or Search
	}{
		{`(a+)+$`, long, "FindAll"},
		{`(a*)*b`, long, "Search"},
		{`((a|aa)+)+$`, long, "Sub"},
		{`(?:a|a)*$`, long, "FindAll"},
		{`(\w+\s?)+$`, strings.Repeat("word ", 600) + "!", "FindAll"},
		// Polynomial, not exponential: a findall of many searches, each
		// failing after scanning the rest of the text.
		{`a*a*a*b`, long, "FindAll"},
	}
	for _, tc := range tests {
		re := MustCompile(tc.pattern)
		b := NewBudget(len(tc.text))
		limit := b.Left
		var err error
		switch tc.call {
		case "FindAll":
			_, err = re.FindAllIn(tc.text, b)
		case "Sub":
			_, err = re.SubIn("", tc.text, b)
		default:
			m := newMachine(re, []rune(tc.text), b)
			_, err = m.search(0, false)
		}
		if !errors.Is(err, ErrTooComplex) || !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.pattern)) {
			t.Errorf("%s %q: %v, want ErrTooComplex naming the pattern", tc.call, tc.pattern, err)
		}
		if b.Left >= 0 || limit != MaxSteps+StepsPerRune*len(tc.text) {
			t.Errorf("%q: %d steps left of %d", tc.pattern, b.Left, limit)
		}
	}
	// One budget for several calls: the second call has what the first
	// left.
	b := NewBudget(0)
	re := MustCompile(`(a+)+$`)
	if _, err := re.FindAllIn(strings.Repeat("a", 30)+"!", b); !errors.Is(err, ErrTooComplex) {
		t.Fatalf("first call: %v", err)
	}
	if _, err := MustCompile(`a`).FindAllIn("a", b); !errors.Is(err, ErrTooComplex) {
		t.Errorf("a call on a spent budget: %v, want ErrTooComplex", err)
	}
	// The lm-eval filters over a 4,000-character output stay far inside.
	text := strings.Repeat("Step: 12 + 30 = 42, so we carry $1,250.50 forward.\n", 75) + "So the answer is 42.\n#### 42"
	for _, p := range []string{`#### (\-?[0-9\.\,]+)`, `(-?[$0-9.,]{2,})|(-?[0-9]+)`, `(?<=the answer is )(.*)(?=.)`, `^(.*?)\s*$`, `(?s).*?answer is (\d+)`} {
		b := NewBudget(0)
		if _, err := MustCompile(p).FindAllIn(text, b); err != nil || MaxSteps-b.Left > 20000 {
			t.Errorf("%q: %v, %d steps", p, err, MaxSteps-b.Left)
		}
	}
}

func FuzzCompileAndMatch(f *testing.F) {
	for _, c := range corpus {
		f.Add(c.Pattern, "The answer is 42.\n")
	}
	f.Fuzz(func(t *testing.T, pattern, text string) {
		re, err := Compile(pattern)
		if err != nil {
			return
		}
		if len(text) > 64 {
			text = text[:64]
		}
		ms, err := re.FindAll(text)
		if err != nil {
			return
		}
		n := len([]rune(text))
		for _, m := range ms {
			if m.Start < 0 || m.End < m.Start || m.End > n {
				t.Fatalf("match [%d,%d] outside the text of %d", m.Start, m.End, n)
			}
		}
	})
}
