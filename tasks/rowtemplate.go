package tasks

import (
	"strings"
	"text/template"
	"text/template/parse"
)

// rowTemplate is a task's template of a data row (id, prompt, target,
// share key). Most are text and {{.field}} actions only; such a template
// is rendered by joining its text with the row's fields when each field
// it names is a string in the row (what text/template prints for a
// string is the string), without text/template's reflection, which took
// a fifth of loading a large task. Any other template, and any row where
// a field is missing or not a string, goes to text/template itself, so
// the output and the errors are text/template's.
type rowTemplate struct {
	t *template.Template
	// parts are the template's pieces in order (fields named, text
	// otherwise), nil when it is not of that form.
	parts []rowPart
}

// rowPart is a piece of a field-only template: literal text, or the row's
// field of that name.
type rowPart struct {
	text  string
	field string
}

// parseRowTemplate parses a row template as text/template does, with
// missing keys an error.
func parseRowTemplate(name, text string) (*rowTemplate, error) {
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return nil, err
	}
	return &rowTemplate{t: t, parts: fieldParts(t)}, nil
}

// fieldParts is a template's pieces when it holds only text and actions
// of one field of the dot ({{.name}}, no pipeline, variable, function or
// other template); nil otherwise.
func fieldParts(t *template.Template) []rowPart {
	if len(t.Templates()) != 1 || t.Tree == nil || t.Root == nil || len(t.Root.Nodes) == 0 {
		return nil
	}
	parts := []rowPart{}
	for _, n := range t.Root.Nodes {
		switch n := n.(type) {
		case *parse.TextNode:
			parts = append(parts, rowPart{text: string(n.Text)})
		case *parse.ActionNode:
			p := n.Pipe
			if p == nil || p.IsAssign || len(p.Decl) != 0 || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
				return nil
			}
			f, ok := p.Cmds[0].Args[0].(*parse.FieldNode)
			if !ok || len(f.Ident) != 1 {
				return nil
			}
			parts = append(parts, rowPart{field: f.Ident[0]})
		default:
			return nil
		}
	}
	return parts
}

// render renders the template on a row.
func (rt *rowTemplate) render(row map[string]any) (string, error) {
	if rt.parts != nil {
		if s, ok := rt.join(row); ok {
			return s, nil
		}
	}
	var b strings.Builder
	if err := rt.t.Execute(&b, row); err != nil {
		return "", err
	}
	return b.String(), nil
}

// join is a field-only template's text with the row's fields; ok is
// false when a field is missing or not a string.
func (rt *rowTemplate) join(row map[string]any) (_ string, ok bool) {
	n := 0
	for _, p := range rt.parts {
		if p.field == "" {
			n += len(p.text)
			continue
		}
		s, ok := row[p.field].(string)
		if !ok {
			return "", false
		}
		n += len(s)
	}
	if len(rt.parts) == 1 && rt.parts[0].field != "" {
		return row[rt.parts[0].field].(string), true
	}
	var b strings.Builder
	b.Grow(n)
	for _, p := range rt.parts {
		if p.field == "" {
			b.WriteString(p.text)
		} else {
			b.WriteString(row[p.field].(string))
		}
	}
	return b.String(), true
}
