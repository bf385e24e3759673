package drop

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"tally/datasets/pqrows"
)

// loadParquet reads Hugging Face EleutherAI/drop rows from a Parquet file.
func loadParquet(path string) ([]Question, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read DROP %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read DROP %s: %w", path, err)
	}
	return parseParquet(path, f, st.Size())
}

// pqShape is an expected type: a string, a list of elem, or a struct with
// at least the given fields (others are carried through).
type pqShape struct {
	kind   pqrows.Kind
	elem   *pqShape
	fields []pqField
}

type pqField struct {
	name  string
	shape *pqShape
}

// String describes the shape for error messages.
func (s *pqShape) String() string {
	switch s.kind {
	case pqrows.String:
		return "string"
	case pqrows.List:
		return "list<" + s.elem.String() + ">"
	}
	parts := make([]string, len(s.fields))
	for i, f := range s.fields {
		parts[i] = f.name + ": " + f.shape.String()
	}
	return "struct<" + strings.Join(parts, ", ") + ", ...>"
}

var (
	shString = &pqShape{kind: pqrows.String}
	shDate   = &pqShape{kind: pqrows.Group, fields: []pqField{{"day", shString}, {"month", shString}, {"year", shString}}}
	// shAnswer is one answer: number, date and spans (worker_id and hit_id
	// may follow).
	shAnswer = &pqShape{kind: pqrows.Group, fields: []pqField{
		{"number", shString}, {"date", shDate}, {"spans", &pqShape{kind: pqrows.List, elem: shString}}}}
	// shValidatedCols is the column-oriented validated_answers of the
	// Hugging Face rows.
	shValidatedCols = &pqShape{kind: pqrows.Group, fields: []pqField{
		{"number", &pqShape{kind: pqrows.List, elem: shString}},
		{"date", &pqShape{kind: pqrows.List, elem: shDate}},
		{"spans", &pqShape{kind: pqrows.List, elem: &pqShape{kind: pqrows.List, elem: shString}}}}}
	// shValidatedList is validated_answers as a list of answers.
	shValidatedList = &pqShape{kind: pqrows.List, elem: shAnswer}
)

// match reports where n does not have shape s: the path of the first
// mismatching column and what was wanted there.
func match(n *pqrows.Node, s *pqShape) error {
	if n.Kind != s.kind {
		if s.kind == pqrows.String && n.Kind != pqrows.Group && n.Kind != pqrows.List {
			return fmt.Errorf("column %q: type %s is not a string", n.Path, n)
		}
		return fmt.Errorf("column %q: want %s, have %s", n.Path, s, n)
	}
	switch s.kind {
	case pqrows.List:
		return match(n.Elem, s.elem)
	case pqrows.Group:
		for _, sf := range s.fields {
			var found *pqrows.Node
			for _, f := range n.Fields {
				if f.Name == sf.name {
					found = f
					break
				}
			}
			if found == nil {
				return fmt.Errorf("column %q: missing", n.Path+"."+sf.name)
			}
			if err := match(found, sf.shape); err != nil {
				return err
			}
		}
	}
	return nil
}

// pqColumns are the top-level columns Load reads, in Question order.
var pqColumns = []struct {
	name   string
	shapes []*pqShape
}{
	{"section_id", []*pqShape{shString}},
	{"query_id", []*pqShape{shString}},
	{"passage", []*pqShape{shString}},
	{"question", []*pqShape{shString}},
	{"answer", []*pqShape{shAnswer}},
	{"validated_answers", []*pqShape{shValidatedCols, shValidatedList}},
}

// pqSchema finds and checks the columns Load reads in the file's schema
// (other columns, of any type, are not read).
func pqSchema(pf *pqrows.File) ([]*pqrows.Node, error) {
	out := make([]*pqrows.Node, len(pqColumns))
	for i, c := range pqColumns {
		n, found, err := pf.Column(c.name)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("column %q: missing", c.name)
		}
		for _, s := range c.shapes {
			if err = match(n, s); err == nil {
				break
			}
		}
		if err != nil {
			return nil, err
		}
		out[i] = n
	}
	return out, nil
}

// parseParquet reads Hugging Face EleutherAI/drop rows from the Parquet
// data in r (size bytes); name is used in errors. Malformed data is an
// error, never a panic (tally/datasets/pqrows checks the file).
func parseParquet(name string, r io.ReaderAt, size int64) (qs []Question, err error) {
	defer func() {
		if p := recover(); p != nil {
			qs = nil
			err = fmt.Errorf("read DROP %s: malformed Parquet: %s", name, oneLine(fmt.Sprint(p)))
		}
	}()
	pf, err := pqrows.Open(name, r, size)
	if err != nil {
		return nil, fmt.Errorf("read DROP %s", strings.TrimPrefix(err.Error(), "read "))
	}
	cols, err := pqSchema(pf)
	if err != nil {
		return nil, fmt.Errorf("read DROP %s row 1 %s", name, err)
	}
	rows, err := pf.Rows(cols)
	if err != nil {
		return nil, fmt.Errorf("read DROP %s %s", name, err)
	}
	qs = make([]Question, 0, len(rows))
	for i, vals := range rows {
		q, err := assembleRow(vals, cols, int64(i)+1)
		if err != nil {
			return nil, fmt.Errorf("read DROP %s %s", name, oneLine(err.Error()))
		}
		qs = append(qs, q)
	}
	return qs, nil
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// assembleRow turns one row (the values of the columns Load reads) into a
// Question, checking it as the JSON Lines path does.
func assembleRow(vals []any, cols []*pqrows.Node, rowNo int64) (Question, error) {
	str := func(i int) string {
		s, _ := vals[i].(string)
		return s
	}
	q := Question{SectionID: str(0), QueryID: str(1), Passage: str(2), Question: str(3)}
	for i := 1; i <= 3; i++ {
		if str(i) == "" {
			return Question{}, &pqrows.RowError{Row: rowNo, Column: cols[i].Path, Msg: "missing or empty"}
		}
	}
	for i, dst := range []*json.RawMessage{&q.Answer, &q.ValidatedAnswers} {
		c := cols[4+i]
		if vals[4+i] == nil {
			return Question{}, &pqrows.RowError{Row: rowNo, Column: c.Path, Msg: "null"}
		}
		b, err := json.Marshal(plain(vals[4+i]))
		if err != nil {
			return Question{}, &pqrows.RowError{Row: rowNo, Column: c.Path, Msg: err.Error()}
		}
		*dst = b
	}
	return q, nil
}

// plain turns structs into maps, so that answers marshal with sorted keys
// as the JSON Lines path writes them.
func plain(v any) any {
	switch x := v.(type) {
	case *pqrows.Row:
		m := make(map[string]any, len(x.Keys))
		for i, k := range x.Keys {
			m[k] = plain(x.Vals[i])
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	}
	return v
}
