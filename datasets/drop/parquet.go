package drop

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
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

// pqKind is the shape of a Parquet schema node as Load reads it.
type pqKind int

const (
	pqString pqKind = iota // a BYTE_ARRAY leaf (STRING, ENUM or unannotated)
	pqGroup                // a struct
	pqList                 // a LIST group or a bare repeated field
)

// pqNode is one node of the file's schema under a column Load reads: its
// name, dotted path (for errors), shape, nullability, children, and the
// range [first, end) of leaf columns under it.
type pqNode struct {
	name, path string
	kind       pqKind
	optional   bool
	fields     []*pqNode // pqGroup
	elem       *pqNode   // pqList
	first, end int
}

// String describes the node's type as the errors show it, e.g.
// "list<string>" or "struct<day: string, month: string>".
func (n *pqNode) String() string {
	switch n.kind {
	case pqString:
		return "string"
	case pqList:
		return "list<" + n.elem.String() + ">"
	}
	parts := make([]string, len(n.fields))
	for i, f := range n.fields {
		parts[i] = f.name + ": " + f.String()
	}
	return "struct<" + strings.Join(parts, ", ") + ">"
}

// leafValue is one value of a leaf column with its levels; s is empty for
// a null.
type leafValue struct {
	rep, def int32
	s        string
}

// pqRowError is a problem with one column of one row.
type pqRowError struct {
	row    int64 // counted from 1
	column string
	msg    string
}

// Error names the row and column.
func (e *pqRowError) Error() string {
	return fmt.Sprintf("row %d column %q: %s", e.row, e.column, e.msg)
}

func isListNode(n parquet.Node) bool {
	t := n.Type()
	if lt := t.LogicalType(); lt != nil {
		if _, ok := lt.Value.(*format.ListType); ok {
			return true
		}
	}
	ct := t.ConvertedType()
	return ct != nil && *ct == deprecated.List
}

func isMapNode(n parquet.Node) bool {
	t := n.Type()
	if lt := t.LogicalType(); lt != nil {
		if _, ok := lt.Value.(*format.MapType); ok {
			return true
		}
	}
	ct := t.ConvertedType()
	return ct != nil && (*ct == deprecated.Map || *ct == deprecated.MapKeyValue)
}

func countLeaves(n parquet.Node) int {
	if n.Leaf() {
		return 1
	}
	c := 0
	for _, f := range n.Fields() {
		c += countLeaves(f)
	}
	return c
}

// buildNode converts the schema node n (named name, at path) into a
// pqNode, numbering its leaves from *leaf. Anything but strings, structs
// and lists is an error naming the column.
func buildNode(n parquet.Node, name, path string, leaf *int) (*pqNode, error) {
	out := &pqNode{name: name, path: path, optional: n.Optional(), first: *leaf}
	switch {
	case n.Repeated():
		elem, err := buildNode(parquet.Required(n), name, path, leaf)
		if err != nil {
			return nil, err
		}
		out.kind, out.optional, out.elem = pqList, false, elem
	case n.Leaf():
		t := n.Type()
		if t.Kind() != parquet.ByteArray {
			return nil, fmt.Errorf("column %q: type %s is not a string", path, t)
		}
		if lt := t.LogicalType(); lt != nil && lt.Value != nil {
			switch lt.Value.(type) {
			case *format.StringType, *format.EnumType, *format.JsonType:
			default:
				return nil, fmt.Errorf("column %q: type %s is not a string", path, t)
			}
		}
		out.kind = pqString
		*leaf++
	case isListNode(n):
		fields := n.Fields()
		if len(fields) != 1 || !fields[0].Repeated() {
			return nil, fmt.Errorf("column %q: LIST group without a single repeated field", path)
		}
		rep := fields[0]
		var elem *pqNode
		var err error
		// The Parquet LIST backward-compatibility rules: a repeated leaf,
		// a repeated group of several fields, or one named "array" or
		// "<name>_tuple" is itself the element.
		if rep.Leaf() || len(rep.Fields()) != 1 || rep.Name() == "array" || rep.Name() == name+"_tuple" {
			elem, err = buildNode(parquet.Required(rep), "element", path+".element", leaf)
		} else {
			elem, err = buildNode(rep.Fields()[0], "element", path+".element", leaf)
		}
		if err != nil {
			return nil, err
		}
		out.kind, out.elem = pqList, elem
	case isMapNode(n):
		return nil, fmt.Errorf("column %q: MAP is not supported", path)
	default:
		out.kind = pqGroup
		for _, f := range n.Fields() {
			c, err := buildNode(f, f.Name(), path+"."+f.Name(), leaf)
			if err != nil {
				return nil, err
			}
			out.fields = append(out.fields, c)
		}
		if len(out.fields) == 0 {
			return nil, fmt.Errorf("column %q: empty group", path)
		}
	}
	out.end = *leaf
	return out, nil
}

// pqShape is an expected type: a string, a list of elem, or a struct with
// at least the given fields (others are carried through).
type pqShape struct {
	kind   pqKind
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
	case pqString:
		return "string"
	case pqList:
		return "list<" + s.elem.String() + ">"
	}
	parts := make([]string, len(s.fields))
	for i, f := range s.fields {
		parts[i] = f.name + ": " + f.shape.String()
	}
	return "struct<" + strings.Join(parts, ", ") + ", ...>"
}

var (
	shString = &pqShape{kind: pqString}
	shDate   = &pqShape{kind: pqGroup, fields: []pqField{{"day", shString}, {"month", shString}, {"year", shString}}}
	// shAnswer is one answer: number, date and spans (worker_id and hit_id
	// may follow).
	shAnswer = &pqShape{kind: pqGroup, fields: []pqField{
		{"number", shString}, {"date", shDate}, {"spans", &pqShape{kind: pqList, elem: shString}}}}
	// shValidatedCols is the column-oriented validated_answers of the
	// Hugging Face rows.
	shValidatedCols = &pqShape{kind: pqGroup, fields: []pqField{
		{"number", &pqShape{kind: pqList, elem: shString}},
		{"date", &pqShape{kind: pqList, elem: shDate}},
		{"spans", &pqShape{kind: pqList, elem: &pqShape{kind: pqList, elem: shString}}}}}
	// shValidatedList is validated_answers as a list of answers.
	shValidatedList = &pqShape{kind: pqList, elem: shAnswer}
)

// match reports where n does not have shape s: the path of the first
// mismatching column and what was wanted there.
func match(n *pqNode, s *pqShape) error {
	if n.kind != s.kind {
		return fmt.Errorf("column %q: want %s, have %s", n.path, s, n)
	}
	switch s.kind {
	case pqList:
		return match(n.elem, s.elem)
	case pqGroup:
		for _, sf := range s.fields {
			var found *pqNode
			for _, f := range n.fields {
				if f.name == sf.name {
					found = f
					break
				}
			}
			if found == nil {
				return fmt.Errorf("column %q: missing", n.path+"."+sf.name)
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

// pqSchema finds and checks the columns Load reads in the file's schema.
func pqSchema(schema *parquet.Schema) ([]*pqNode, error) {
	found := map[string]*pqNode{}
	leaf := 0
	for _, f := range schema.Fields() {
		wanted := false
		for _, c := range pqColumns {
			if c.name == f.Name() {
				wanted = true
			}
		}
		if !wanted || found[f.Name()] != nil {
			leaf += countLeaves(f)
			continue
		}
		n, err := buildNode(f, f.Name(), f.Name(), &leaf)
		if err != nil {
			return nil, err
		}
		found[f.Name()] = n
	}
	out := make([]*pqNode, len(pqColumns))
	for i, c := range pqColumns {
		n := found[c.name]
		if n == nil {
			return nil, fmt.Errorf("column %q: missing", c.name)
		}
		var err error
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
// error, never a panic.
func parseParquet(name string, r io.ReaderAt, size int64) (qs []Question, err error) {
	defer func() {
		if p := recover(); p != nil {
			qs = nil
			err = fmt.Errorf("read DROP %s: malformed Parquet: %s", name, oneLine(fmt.Sprint(p)))
		}
	}()
	// Check the footer's length before the library allocates it.
	var tail [8]byte
	if size < 12 {
		return nil, fmt.Errorf("read DROP %s: not a Parquet file (%d bytes)", name, size)
	}
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, fmt.Errorf("read DROP %s: %s", name, oneLine(err.Error()))
	}
	if string(tail[4:]) != "PAR1" {
		return nil, fmt.Errorf("read DROP %s: not a Parquet file (no PAR1 at the end)", name)
	}
	if n := binary.LittleEndian.Uint32(tail[:4]); int64(n) > size-12 {
		return nil, fmt.Errorf("read DROP %s: Parquet footer of %d bytes in a %d-byte file", name, n, size)
	}
	f, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("read DROP %s: %s", name, oneLine(err.Error()))
	}
	cols, err := pqSchema(f.Schema())
	if err != nil {
		return nil, fmt.Errorf("read DROP %s row 1 %s", name, err)
	}
	var leaves []*pqNode
	for _, c := range cols {
		leaves = appendLeaves(leaves, c)
	}
	if err := checkPages(r, size, f.Metadata(), leaves); err != nil {
		return nil, fmt.Errorf("read DROP %s %s", name, oneLine(err.Error()))
	}
	var base int64 // rows before the current row group
	for _, rg := range f.RowGroups() {
		got, err := readRowGroup(rg, cols, leaves, base)
		if err != nil {
			return nil, fmt.Errorf("read DROP %s %s", name, oneLine(err.Error()))
		}
		qs = append(qs, got...)
		base += rg.NumRows()
	}
	return qs, nil
}

// Limits on one page, far above what DROP needs: the library allocates
// what a page header claims before it reads the page.
const (
	maxPageBytes   = 1 << 28
	maxPageValues  = 1 << 24
	maxHeaderBytes = 1 << 20
)

// checkPages walks the page headers of every column chunk Load reads and
// refuses sizes the chunk cannot hold or beyond the limits above, so that a
// corrupt header cannot make the library allocate gigabytes.
func checkPages(r io.ReaderAt, size int64, md *format.FileMetaData, leaves []*pqNode) error {
	var proto thrift.CompactProtocol
	buf := make([]byte, min(maxHeaderBytes, size))
	var base int64
	for _, rg := range md.RowGroups {
		for _, l := range leaves {
			bad := func(msg string, args ...any) error {
				return &pqRowError{base + 1, l.path, fmt.Sprintf(msg, args...)}
			}
			if l.first >= len(rg.Columns) {
				return bad("column chunk missing")
			}
			cm := &rg.Columns[l.first].MetaData
			start := cm.DataPageOffset
			if d := cm.DictionaryPageOffset; d > 0 && d < start {
				start = d
			}
			n := cm.TotalCompressedSize
			if start < 4 || n < 0 || n > size-start {
				return bad("column chunk at %d+%d outside the %d-byte file", start, n, size)
			}
			for off := int64(0); off < n; {
				hb := buf[:min(int64(len(buf)), n-off)]
				if _, err := r.ReadAt(hb, start+off); err != nil {
					return bad("page header at byte %d: %v", start+off, err)
				}
				// A bytes reader refuses lengths past its data instead of
				// allocating them.
				pr := proto.NewReaderFromBytes(hb)
				var h format.PageHeader
				if err := thrift.NewDecoder(pr).Decode(&h); err != nil {
					return bad("page header at byte %d: %v", start+off, err)
				}
				off += int64(pr.BytesRead())
				values := max(h.DataPageHeader.V.NumValues, h.DictionaryPageHeader.V.NumValues, h.DataPageHeaderV2.V.NumValues)
				switch {
				case h.CompressedPageSize < 0 || int64(h.CompressedPageSize) > n-off:
					return bad("page at byte %d: %d bytes, past the column chunk", start+off, h.CompressedPageSize)
				case h.UncompressedPageSize < 0 || h.UncompressedPageSize > maxPageBytes:
					return bad("page at byte %d: %d bytes uncompressed", start+off, h.UncompressedPageSize)
				case values < 0 || values > maxPageValues:
					return bad("page at byte %d: %d values", start+off, values)
				}
				off += int64(h.CompressedPageSize)
			}
		}
		base += rg.NumRows
	}
	return nil
}

func appendLeaves(out []*pqNode, n *pqNode) []*pqNode {
	switch n.kind {
	case pqString:
		return append(out, n)
	case pqList:
		return appendLeaves(out, n.elem)
	}
	for _, f := range n.fields {
		out = appendLeaves(out, f)
	}
	return out
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// readRowGroup reads the leaf columns of one row group and assembles its
// rows into questions; base is the number of rows before it.
func readRowGroup(rg parquet.RowGroup, cols, leaves []*pqNode, base int64) ([]Question, error) {
	chunks := rg.ColumnChunks()
	nrows := rg.NumRows()
	if nrows < 0 {
		return nil, fmt.Errorf("row %d: negative row count %d", base+1, nrows)
	}
	values := make([][]leafValue, len(chunks))
	for _, l := range leaves {
		if l.first >= len(chunks) {
			return nil, &pqRowError{base + 1, l.path, "column chunk missing"}
		}
		v, err := readColumn(chunks[l.first], l.path, base)
		if err != nil {
			return nil, err
		}
		if n := countRows(v); n != nrows {
			return nil, &pqRowError{base + min(n, nrows) + 1, l.path, fmt.Sprintf("column has %d rows, row group %d", n, nrows)}
		}
		values[l.first] = v
	}
	cursor := make([]int, len(chunks))
	row := make([][]leafValue, len(chunks))
	out := make([]Question, 0, min(nrows, 1<<16))
	for i := int64(0); i < nrows; i++ {
		for _, l := range leaves {
			c, start := values[l.first], cursor[l.first]
			end := start + 1
			for end < len(c) && c[end].rep != 0 {
				end++
			}
			row[l.first], cursor[l.first] = c[start:end], end
		}
		q, err := assembleRow(row, cols, base+i+1)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

func countRows(v []leafValue) int64 {
	var n int64
	for _, x := range v {
		if x.rep == 0 {
			n++
		}
	}
	return n
}

// readColumn reads every value of one leaf column chunk, checking that
// strings are valid UTF-8.
func readColumn(cc parquet.ColumnChunk, path string, base int64) (out []leafValue, err error) {
	pages := cc.Pages()
	defer pages.Close()
	if n := cc.NumValues(); n > 0 {
		out = make([]leafValue, 0, min(n, 1<<20))
	}
	buf := make([]parquet.Value, 256)
	var rows int64
	var prev string
	for {
		p, err := pages.ReadPage()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, &pqRowError{base + rows + 1, path, oneLine(err.Error())}
		}
		vr := p.Values()
		for {
			n, err := vr.ReadValues(buf)
			for _, v := range buf[:n] {
				lv := leafValue{rep: int32(v.RepetitionLevel()), def: int32(v.DefinitionLevel())}
				if lv.rep == 0 {
					rows++
				}
				if !v.IsNull() {
					b := v.ByteArray()
					if !utf8.Valid(b) {
						parquet.Release(p)
						return nil, &pqRowError{base + rows, path, "invalid UTF-8"}
					}
					if string(b) != prev { // consecutive rows often share a passage
						prev = string(b)
					}
					lv.s = prev
				}
				out = append(out, lv)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				parquet.Release(p)
				return nil, &pqRowError{base + rows + 1, path, oneLine(err.Error())}
			}
		}
		parquet.Release(p)
	}
}

var errLevels = errors.New("repetition and definition levels do not fit the schema")

// value assembles the node's value for one instance from the values of its
// leaf columns (cols[0] is leaf n.first), given the definition and
// repetition levels of its parent: a string, map[string]any, []any or nil.
func (n *pqNode) value(cols [][]leafValue, def, rep int32) (any, error) {
	if len(cols) == 0 || len(cols[0]) == 0 {
		return nil, errLevels
	}
	if n.optional {
		def++
		if cols[0][0].def < def {
			return nil, nil
		}
	}
	switch n.kind {
	case pqString:
		return cols[0][0].s, nil
	case pqGroup:
		m := make(map[string]any, len(n.fields))
		for _, f := range n.fields {
			v, err := f.value(cols[f.first-n.first:f.end-n.first], def, rep)
			if err != nil {
				return nil, err
			}
			m[f.name] = v
		}
		return m, nil
	}
	def++
	rep++
	if cols[0][0].def < def {
		return []any{}, nil
	}
	out := []any{}
	pos := make([]int, len(cols))
	sub := make([][]leafValue, len(cols))
	for pos[0] < len(cols[0]) {
		for j, c := range cols {
			if pos[j] >= len(c) {
				return nil, errLevels
			}
			k := pos[j] + 1
			for k < len(c) && c[k].rep > rep {
				k++
			}
			sub[j], pos[j] = c[pos[j]:k], k
		}
		v, err := n.elem.value(sub, def, rep)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	for j, c := range cols {
		if pos[j] != len(c) {
			return nil, errLevels
		}
	}
	return out, nil
}

// assembleRow turns one row (the values of each leaf column, by column
// index) into a Question, checking it as the JSON Lines path does.
func assembleRow(row [][]leafValue, cols []*pqNode, rowNo int64) (Question, error) {
	vals := make([]any, len(cols))
	for i, c := range cols {
		v, err := c.value(row[c.first:c.end], 0, 0)
		if err != nil {
			return Question{}, &pqRowError{rowNo, c.path, err.Error()}
		}
		vals[i] = v
	}
	str := func(i int) string {
		s, _ := vals[i].(string)
		return s
	}
	q := Question{SectionID: str(0), QueryID: str(1), Passage: str(2), Question: str(3)}
	for i := 1; i <= 3; i++ {
		if str(i) == "" {
			return Question{}, &pqRowError{rowNo, cols[i].path, "missing or empty"}
		}
	}
	for i, dst := range []*json.RawMessage{&q.Answer, &q.ValidatedAnswers} {
		c := cols[4+i]
		if vals[4+i] == nil {
			return Question{}, &pqRowError{rowNo, c.path, "null"}
		}
		b, err := json.Marshal(vals[4+i])
		if err != nil {
			return Question{}, &pqRowError{rowNo, c.path, err.Error()}
		}
		*dst = b
	}
	return q, nil
}
