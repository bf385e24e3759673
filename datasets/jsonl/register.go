package jsonl

import (
	"bytes"
	"encoding/json"
	"fmt"

	"tally/datasets"
)

func init() {
	datasets.RegisterLoader(datasets.Loader{
		Name:     "jsonl",
		Doc:      "one JSON object per line (optionally gzipped); the references field names each row's answer(s)",
		Rows:     loadRows,
		OnlyData: true,
	})
}

// loadRows reads the file's rows and, from the field named by
// Fields.References, each row's references as a JSON list of strings
// (none when the field is not named).
func loadRows(req datasets.Request) (datasets.Rows, error) {
	var res Result
	var err error
	if req.Data != nil {
		res, err = Read(bytes.NewReader(req.Data), req.Path, req.SkipBad)
	} else {
		res, err = ReadFile(req.Path, req.SkipBad)
	}
	if err != nil {
		return datasets.Rows{}, err
	}
	field := req.Fields.References
	out := datasets.Rows{Skipped: res.Skipped}
	for i, row := range res.Rows {
		if field == "" {
			out.Rows, out.Refs = append(out.Rows, row), append(out.Refs, json.RawMessage("[]"))
			continue
		}
		v, ok := row[field]
		if !ok {
			if !req.SkipBad {
				return datasets.Rows{}, fmt.Errorf("%s line %d: field %q missing", req.Path, res.Lines[i], field)
			}
			out.Skipped++
			continue
		}
		list, err := stringList(v)
		if err != nil {
			return datasets.Rows{}, fmt.Errorf("%s line %d: field %q: %w", req.Path, res.Lines[i], field, err)
		}
		ref, _ := json.Marshal(list) // a list of strings always marshals
		out.Rows, out.Refs = append(out.Rows, row), append(out.Refs, ref)
	}
	return out, nil
}

// stringList reads a reference field: a string, a list of strings, or a
// number (kept as written).
func stringList(v any) ([]string, error) {
	switch x := v.(type) {
	case string:
		return []string{x}, nil
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("element %d is %T, want a string", i, e)
			}
			out[i] = s
		}
		return out, nil
	case json.Number:
		return []string{x.String()}, nil
	}
	return nil, fmt.Errorf("is %T, want a string or a list of strings", v)
}
