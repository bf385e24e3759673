package lmeval

import (
	"encoding/json"
	"flag"
	"os"
	"testing"

	"tally/internal/pyref"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata from python3")

type renderCase struct {
	Template string          `json:"template"`
	Doc      json.RawMessage `json:"doc"`
}

// renderDoc is a row with the kinds of value lm-eval's datasets hold.
const renderDoc = `{"question": "Janet's ducks lay 16 eggs per day. How much?", "answer": "16 - 3 - 4 = <<16-3-4=9>>9\n#### 18",
 "input": "not ( True ) and ( True ) is", "target": "False", "aliases": ["Hawai'i", "O\"Neil", "plain", "it's \"x\""],
 "answer_obj": {"aliases": ["Paris", "City of Light"], "value": "Paris"}, "f": 3.0, "g": 0.1, "big": 1e16, "n": 42, "neg": -7,
 "none": null, "yes": true, "choices": ["red", "green", "blue"], "nums": [1, 2.5, 3.0], "answerKey": "2", "idx": {"passage": 7},
 "text": "the quick brown fox", "q": "\u001c  padded\u00a0 \u001f", "uni": "naïve café 日本 \u2028 end", "d": {"b": 1, "a": [true, null]},
 "prompt_qa": "Q: x\nA: y", "sentence": "  Two  spaces\tand tabs  ", "empty": ""}`

// renderCases are lm-eval's template shapes (GSM8K, BBH, TriviaQA, MGSM,
// ARC-style) and jinja2's whitespace control, value printing and errors.
var renderCases = []string{
	"Question: {{question}}\nAnswer:",
	"{{answer.split('####')[-1].strip()}}",
	"{{answer.split('#### ')[-1]}}",
	"Q: {{input}}\nA: Let's think step by step.\n",
	"{{target}}",
	"Question: {{question}}?\nAnswer:",
	"{{aliases}}",
	"{{answer_obj.aliases}}",
	"{{answer_obj}}",
	"{{ f }} {{ g }} {{ big }} {{ n }} {{ neg }} {{ none }} {{ yes }} {{ d }}",
	"{{ f|string }}|{{ none|string }}|{{ nums|string }}|{{ n|string }}",
	"{{answer_number|string}}",
	"{{ idx.passage|string }}",
	"{{ 'ABCD'[answerKey|int - 1] if answerKey|string in '1234' else answerKey }}",
	"{{ choices|join(', ') }}|{{ nums|join('-') }}|{{ text|join('.') }}",
	"{{ q.strip() }}|{{ q.lstrip() }}|{{ q.rstrip() }}|{{ q|trim }}|{{ 'xxaxx'.strip('x') }}",
	"{{ sentence.split() }}|{{ sentence.split(' ') }}|{{ text.split(' ', 1) }}|{{ q.split() }}",
	"{{' '+text.split(' ')[-1]}}",
	"{{prompt_qa + '\\n\\nQ: ' + question + '\\nA:'}}",
	"{% if yes %}\n  Yes\n{% endif %}\n",
	"{%- for c in choices %}\n{{ loop.index }}. {{ c }}\n{%- endfor %}",
	"{% for c in choices -%}\n  {{ c }}\n{% endfor %}",
	"A {# a comment #} B\n",
	"A\n  {#- trimmed #}  B",
	"{{- ' x ' -}}\n\n",
	"  {% set y = f|string %}{{ y }}\n",
	"{% for k in d %}{{ k }}={{ d[k] }};{% endfor %}",
	"{{ uni }}|{{ uni|upper }}|{{ uni|length }}",
	"line1\r\nline2\rline3\n",
	"{{ (n + neg)|string }}|{{ (f * 2)|string }}|{{ n / 4 }}",
	"{{ missing }}",
	"{{ answer_obj.missing }}",
	"{{ empty }}|{{ empty|string }}",
	"Evaluate the result of a random Boolean expression.\n\n",
	"{{ choices[1] }} {{ choices[-1] }} {{ text[4:9] }}",
	"{{ question if yes else text }}",
	"{% if none is none %}none{% else %}some{% endif %}",
	"{{ d.a }}",
	"trailing newline kept\n",
	"{{ '{{' }} literal braces {{ '}}' }}",
	"{% set context = text.split(' ')[-1] %}{{ context | trim }}|{% for c in text.split() %}{{ c.strip('qx') }};{% endfor %}",
	// An inline if without else: jinja2's plain Undefined (asdiv-cot-llama's
	// "{{body if body is defined}}"), "" where printed, an error in +.
	"[{{ body if body is defined }}] {{ question }}",
	"[{{ (missing if none)|string }}]{{ (missing if none) ~ '!' }}",
	"{{ (missing if none) + 'x' }}",
	"{{ (missing if none).strip() }}",
}

type renderOut struct {
	Python  string `json:"python"`
	Jinja2  string `json:"jinja2"`
	Results []struct {
		Out   *string `json:"out"`
		Error *string `json:"error"`
	} `json:"results"`
}

func checkRender(t *testing.T, ref renderOut, source string) {
	if len(ref.Results) != len(renderCases) {
		t.Fatalf("%s: %d results for %d cases (regenerate: go test ./tasks/lmeval -run TestRenderAgainstJinja2 -update)", source, len(ref.Results), len(renderCases))
	}
	docAny, err := decodeJSON([]byte(renderDoc))
	if err != nil {
		t.Fatal(err)
	}
	doc := docAny.(*Map)
	for i, src := range renderCases {
		want := ref.Results[i]
		tm, err := compileTemplate(src)
		var got string
		if err == nil {
			got, err = tm.render(doc)
		}
		switch {
		case want.Error != nil && err == nil:
			t.Errorf("%s: %q: jinja2 raises %s, Go rendered %q", source, src, *want.Error, got)
		case want.Error == nil && err != nil:
			t.Errorf("%s: %q: jinja2 renders %q, Go: %v", source, src, *want.Out, err)
		case want.Error == nil && got != *want.Out:
			t.Errorf("%s: %q:\n Go     %q\n jinja2 %q", source, src, got, *want.Out)
		}
	}
}

func renderInput() map[string]any {
	var cases []renderCase
	for _, src := range renderCases {
		cases = append(cases, renderCase{Template: src, Doc: json.RawMessage(renderDoc)})
	}
	return map[string]any{"cases": cases}
}

// TestRenderAgainstGolden compares with jinja2's renderings recorded in
// testdata/render_expected.json.
func TestRenderAgainstGolden(t *testing.T) {
	b, err := os.ReadFile("testdata/render_expected.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref renderOut
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	checkRender(t, ref, "render_expected.json (jinja2 "+ref.Jinja2+")")
}

// TestRenderAgainstJinja2 renders every case with this machine's jinja2 in
// lm-eval's environment (testdata/render_reference.py) and compares.
func TestRenderAgainstJinja2(t *testing.T) {
	var ref renderOut
	pyref.Run(t, "testdata/render_reference.py", renderInput(), &ref, "jinja2")
	checkRender(t, ref, "jinja2 "+ref.Jinja2)
	if *update {
		b, _ := json.MarshalIndent(ref, "", " ")
		if err := os.WriteFile("testdata/render_expected.json", b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
