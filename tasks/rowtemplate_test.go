package tasks

import (
	"encoding/json"
	"strings"
	"testing"
	"text/template"
)

// textTemplate is a template rendered by text/template alone, as Load did
// before rowTemplate (the output of a failed render is not used).
func textTemplate(text string, row map[string]any) (string, error) {
	t, err := template.New("x").Option("missingkey=error").Parse(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err = t.Execute(&b, row); err != nil {
		return "", err
	}
	return b.String(), nil
}

func TestRowTemplate(t *testing.T) {
	row := map[string]any{"passage": "P <b>&", "question": "Q?", "n": 3.5, "nil": nil, "list": []any{"a"}, "empty": "", "id": "x-1"}
	for _, tc := range []struct {
		text string
		fast bool // rendered without text/template
	}{
		{"Passage: {{.passage}}\nQuestion: {{.question}}\nAnswer:", true},
		{"{{.id}}", true},
		{"{{ .id }}-{{- .empty -}} !", true},
		{"{{/* a comment */}}{{.id}}", true},
		{"plain text", true},
		{"{{.n}}", true},   // not a string: text/template prints it
		{"{{.nil}}", true}, // <no value>
		{"{{.list}}", true},
		{"{{.missing}}", true}, // an error
		{"{{.passage | printf \"%q\"}}", false},
		{"{{if .id}}{{.id}}{{end}}", false},
		{"{{$x := .id}}{{$x}}", false},
		{"{{.}}", false},
		{"{{index . \"id\"}}", false},
		{"{{define \"t\"}}x{{end}}{{.id}}", false},
		{"", false},
	} {
		rt, err := parseRowTemplate("x", tc.text)
		if err != nil {
			t.Fatalf("%q: %v", tc.text, err)
		}
		if fast := rt.parts != nil; fast != tc.fast {
			t.Errorf("%q: field-only %v, want %v", tc.text, fast, tc.fast)
		}
		got, gotErr := rt.render(row)
		want, wantErr := textTemplate(tc.text, row)
		if got != want || (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Errorf("%q: %q, %v; text/template: %q, %v", tc.text, got, gotErr, want, wantErr)
		}
	}
}

// FuzzRowTemplate: a template renders a JSON row as text/template renders
// it, output and error alike.
func FuzzRowTemplate(f *testing.F) {
	f.Add("Passage: {{.passage}}\nQuestion: {{.question}}\nAnswer:", `{"passage":"p","question":"q"}`)
	f.Add("{{.a}}{{.b}}", `{"a":1,"b":null}`)
	f.Add("{{- .a -}} x {{.c}}", `{"a":"é\u0000","c":[1,"x"]}`)
	f.Add("{{.a.b}}", `{"a":{"b":"x"}}`)
	f.Fuzz(func(t *testing.T, text, rowJSON string) {
		var row map[string]any
		if json.Unmarshal([]byte(rowJSON), &row) != nil || row == nil {
			return
		}
		rt, err := parseRowTemplate("x", text)
		if err != nil {
			return
		}
		got, gotErr := rt.render(row)
		want, wantErr := textTemplate(text, row)
		if got != want || (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
			t.Errorf("%q on %s: %q, %v; text/template: %q, %v", text, rowJSON, got, gotErr, want, wantErr)
		}
	})
}

// BenchmarkRowTemplate: a DROP-style prompt rendered on a row by
// rowTemplate and, for the ratio, by text/template.
func BenchmarkRowTemplate(b *testing.B) {
	row := map[string]any{"passage": strings.Repeat("Jon plays for the Bulls. ", 20), "question": "Who plays for the Bulls?", "query_id": "q-1"}
	text := "Passage: {{.passage}}\nQuestion: {{.question}}\nAnswer:"
	rt, _ := parseRowTemplate("prompt", text)
	b.Run("rowTemplate", func(b *testing.B) {
		for b.Loop() {
			rt.render(row)
		}
	})
	b.Run("text-template", func(b *testing.B) {
		for b.Loop() {
			var s strings.Builder
			rt.t.Execute(&s, row)
		}
	})
}
