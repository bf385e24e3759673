// Package pqrows reads the rows of a Parquet file, as the Hugging Face
// Hub serves datasets and `datasets` writes them, into plain Go values:
// strings, int64 (INT32 and INT64), float64 (FLOAT widened, DOUBLE),
// bool, nil for a null, []any for a list and *Row for a struct (its
// fields in schema order). It checks what the library would otherwise
// trust (the footer's length, every page header's sizes) so that a
// corrupt file is an error naming the file, row and column, never a panic
// or a huge allocation. Maps, decimals, dates, times and fixed-length or
// non-UTF-8 byte arrays are refused, naming the column.
package pqrows

import (
	"bytes"
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

// Row is one struct value (or one row): field names and values in schema
// order.
type Row struct {
	Keys []string
	Vals []any
}

// Get returns the value of field key.
func (r *Row) Get(key string) (any, bool) {
	for i, k := range r.Keys {
		if k == key {
			return r.Vals[i], true
		}
	}
	return nil, false
}

// MarshalJSON writes the row as a JSON object in field order.
func (r *Row) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range r.Keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(r.Vals[i])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// ReadFile reads every row of a Parquet file.
func ReadFile(path string) ([]*Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return Read(path, f, st.Size())
}

// Read reads every row of the Parquet data in r (size bytes); name is
// used in errors.
func Read(name string, r io.ReaderAt, size int64) ([]*Row, error) {
	pf, err := Open(name, r, size)
	if err != nil {
		return nil, err
	}
	cols, err := pf.Columns()
	if err != nil {
		return nil, fmt.Errorf("read %s row 1 %s", name, err)
	}
	rows, err := pf.Rows(cols)
	if err != nil {
		return nil, fmt.Errorf("read %s %s", name, err)
	}
	out := make([]*Row, len(rows))
	for i, vals := range rows {
		row := &Row{Keys: make([]string, len(cols)), Vals: vals}
		for j, c := range cols {
			row.Keys[j] = c.Name
		}
		out[i] = row
	}
	return out, nil
}

// Kind is the shape of a schema node.
type Kind int

// The kinds of node.
const (
	String Kind = iota // BYTE_ARRAY (STRING, ENUM, JSON or unannotated, UTF-8)
	Int                // INT32 or INT64 (plain or an INT annotation)
	Float              // FLOAT or DOUBLE
	Bool               // BOOLEAN
	Group              // a struct
	List               // a LIST group or a bare repeated field
)

// Node is one node of the file's schema: its name, dotted path (for
// errors), kind, nullability, children, and the range of leaf columns
// under it.
type Node struct {
	Name, Path string
	Kind       Kind
	Optional   bool
	Fields     []*Node // Group
	Elem       *Node   // List
	leafType   string  // the physical type, for messages
	first, end int
}

// String describes the node's type as errors show it, e.g.
// "list<string>" or "struct<day: string, month: int64>".
func (n *Node) String() string {
	switch n.Kind {
	case String:
		return "string"
	case Int, Float, Bool:
		return n.leafType
	case List:
		return "list<" + n.Elem.String() + ">"
	}
	parts := make([]string, len(n.Fields))
	for i, f := range n.Fields {
		parts[i] = f.Name + ": " + f.String()
	}
	return "struct<" + strings.Join(parts, ", ") + ">"
}

// Leaves lists the leaf nodes under n, in column order.
func (n *Node) Leaves() []*Node { return appendLeaves(nil, n) }

// RowError is a problem with one column of one row.
type RowError struct {
	Row    int64 // counted from 1
	Column string
	Msg    string
}

// Error names the row and column.
func (e *RowError) Error() string {
	return fmt.Sprintf("row %d column %q: %s", e.Row, e.Column, e.Msg)
}

// File is an open Parquet file.
type File struct {
	name string
	r    io.ReaderAt
	size int64
	f    *parquet.File
}

// Open checks the footer's length, then opens the file; name is used in
// errors.
func Open(name string, r io.ReaderAt, size int64) (pf *File, err error) {
	defer func() {
		if p := recover(); p != nil {
			pf, err = nil, fmt.Errorf("read %s: malformed Parquet: %s", name, oneLine(fmt.Sprint(p)))
		}
	}()
	var tail [8]byte
	if size < 12 {
		return nil, fmt.Errorf("read %s: not a Parquet file (%d bytes)", name, size)
	}
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, fmt.Errorf("read %s: %s", name, oneLine(err.Error()))
	}
	if string(tail[4:]) != "PAR1" {
		return nil, fmt.Errorf("read %s: not a Parquet file (no PAR1 at the end)", name)
	}
	if n := binary.LittleEndian.Uint32(tail[:4]); int64(n) > size-12 {
		return nil, fmt.Errorf("read %s: Parquet footer of %d bytes in a %d-byte file", name, n, size)
	}
	f, err := parquet.OpenFile(r, size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("read %s: %s", name, oneLine(err.Error()))
	}
	return &File{name: name, r: r, size: size, f: f}, nil
}

// Column builds the node of the top-level column name; found is false
// when the file has none. A type this package does not read is an error
// naming the column.
func (pf *File) Column(name string) (n *Node, found bool, err error) {
	leaf := 0
	for _, f := range pf.f.Schema().Fields() {
		if f.Name() != name {
			leaf += countLeaves(f)
			continue
		}
		n, err := buildNode(f, f.Name(), f.Name(), &leaf)
		return n, true, err
	}
	return nil, false, nil
}

// Columns builds every top-level column's node.
func (pf *File) Columns() ([]*Node, error) {
	var out []*Node
	leaf := 0
	for _, f := range pf.f.Schema().Fields() {
		n, err := buildNode(f, f.Name(), f.Name(), &leaf)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
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

// leafKind is the kind a leaf is read as, or an error naming its type.
func leafKind(n parquet.Node, path string) (Kind, string, error) {
	t := n.Type()
	lt := t.LogicalType()
	ct := t.ConvertedType()
	annotated := lt != nil && lt.Value != nil
	switch t.Kind() {
	case parquet.ByteArray:
		if annotated {
			switch lt.Value.(type) {
			case *format.StringType, *format.EnumType, *format.JsonType:
			default:
				return 0, "", fmt.Errorf("column %q: type %s is not a string", path, t)
			}
		} else if ct != nil && *ct != deprecated.UTF8 && *ct != deprecated.Enum && *ct != deprecated.Json {
			return 0, "", fmt.Errorf("column %q: type %s is not a string", path, t)
		}
		return String, "string", nil
	case parquet.Int32, parquet.Int64:
		if annotated {
			if _, ok := lt.Value.(*format.IntType); !ok {
				return 0, "", fmt.Errorf("column %q: type %s is not supported", path, t)
			}
		} else if ct != nil && *ct != deprecated.Int8 && *ct != deprecated.Int16 && *ct != deprecated.Int32 && *ct != deprecated.Int64 &&
			*ct != deprecated.Uint8 && *ct != deprecated.Uint16 && *ct != deprecated.Uint32 && *ct != deprecated.Uint64 {
			return 0, "", fmt.Errorf("column %q: type %s is not supported", path, t)
		}
		if t.Kind() == parquet.Int32 {
			return Int, "int32", nil
		}
		return Int, "int64", nil
	case parquet.Float:
		return Float, "float", nil
	case parquet.Double:
		return Float, "double", nil
	case parquet.Boolean:
		return Bool, "bool", nil
	}
	return 0, "", fmt.Errorf("column %q: type %s is not supported", path, t)
}

// buildNode converts the schema node n (named name, at path) into a Node,
// numbering its leaves from *leaf.
func buildNode(n parquet.Node, name, path string, leaf *int) (*Node, error) {
	out := &Node{Name: name, Path: path, Optional: n.Optional(), first: *leaf}
	switch {
	case n.Repeated():
		elem, err := buildNode(parquet.Required(n), name, path, leaf)
		if err != nil {
			return nil, err
		}
		out.Kind, out.Optional, out.Elem = List, false, elem
	case n.Leaf():
		k, lt, err := leafKind(n, path)
		if err != nil {
			return nil, err
		}
		out.Kind, out.leafType = k, lt
		*leaf++
	case isListNode(n):
		fields := n.Fields()
		if len(fields) != 1 || !fields[0].Repeated() {
			return nil, fmt.Errorf("column %q: LIST group without a single repeated field", path)
		}
		rep := fields[0]
		var elem *Node
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
		out.Kind, out.Elem = List, elem
	case isMapNode(n):
		return nil, fmt.Errorf("column %q: MAP is not supported", path)
	default:
		out.Kind = Group
		for _, f := range n.Fields() {
			c, err := buildNode(f, f.Name(), path+"."+f.Name(), leaf)
			if err != nil {
				return nil, err
			}
			out.Fields = append(out.Fields, c)
		}
		if len(out.Fields) == 0 {
			return nil, fmt.Errorf("column %q: empty group", path)
		}
	}
	out.end = *leaf
	return out, nil
}

// Rows reads the given top-level columns (nodes from Column or Columns):
// for each row, each column's value.
func (pf *File) Rows(cols []*Node) (rows [][]any, err error) {
	defer func() {
		if p := recover(); p != nil {
			rows, err = nil, fmt.Errorf("malformed Parquet: %s", oneLine(fmt.Sprint(p)))
		}
	}()
	var leaves []*Node
	for _, c := range cols {
		leaves = appendLeaves(leaves, c)
	}
	if err := checkPages(pf.r, pf.size, pf.f.Metadata(), leaves); err != nil {
		return nil, fmt.Errorf("%s", oneLine(err.Error()))
	}
	var base int64 // rows before the current row group
	for _, rg := range pf.f.RowGroups() {
		got, err := readRowGroup(rg, cols, leaves, base)
		if err != nil {
			return nil, fmt.Errorf("%s", oneLine(err.Error()))
		}
		rows = append(rows, got...)
		base += rg.NumRows()
	}
	return rows, nil
}

// Limits on one page, far above what a text dataset needs: the library
// allocates what a page header claims before it reads the page.
const (
	maxPageBytes   = 1 << 28
	maxPageValues  = 1 << 24
	maxHeaderBytes = 1 << 20
)

// checkPages walks the page headers of every column chunk read and
// refuses sizes the chunk cannot hold or beyond the limits above, so that
// a corrupt header cannot make the library allocate gigabytes.
func checkPages(r io.ReaderAt, size int64, md *format.FileMetaData, leaves []*Node) error {
	var proto thrift.CompactProtocol
	buf := make([]byte, min(maxHeaderBytes, size))
	var base int64
	for _, rg := range md.RowGroups {
		for _, l := range leaves {
			bad := func(msg string, args ...any) error {
				return &RowError{base + 1, l.Path, fmt.Sprintf(msg, args...)}
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

func appendLeaves(out []*Node, n *Node) []*Node {
	switch n.Kind {
	case Group:
		for _, f := range n.Fields {
			out = appendLeaves(out, f)
		}
		return out
	case List:
		return appendLeaves(out, n.Elem)
	}
	return append(out, n)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// leafValue is one value of a leaf column with its levels; v is nil for a
// null.
type leafValue struct {
	rep, def int32
	v        any
}

// readRowGroup reads the leaf columns of one row group and assembles its
// rows; base is the number of rows before it.
func readRowGroup(rg parquet.RowGroup, cols, leaves []*Node, base int64) ([][]any, error) {
	chunks := rg.ColumnChunks()
	nrows := rg.NumRows()
	if nrows < 0 {
		return nil, fmt.Errorf("row %d: negative row count %d", base+1, nrows)
	}
	values := make([][]leafValue, len(chunks))
	for _, l := range leaves {
		if l.first >= len(chunks) {
			return nil, &RowError{base + 1, l.Path, "column chunk missing"}
		}
		v, err := readColumn(chunks[l.first], l, base)
		if err != nil {
			return nil, err
		}
		if n := countRows(v); n != nrows {
			return nil, &RowError{base + min(n, nrows) + 1, l.Path, fmt.Sprintf("column has %d rows, row group %d", n, nrows)}
		}
		values[l.first] = v
	}
	cursor := make([]int, len(chunks))
	row := make([][]leafValue, len(chunks))
	out := make([][]any, 0, min(nrows, 1<<16))
	for i := int64(0); i < nrows; i++ {
		for _, l := range leaves {
			c, start := values[l.first], cursor[l.first]
			end := start + 1
			for end < len(c) && c[end].rep != 0 {
				end++
			}
			row[l.first], cursor[l.first] = c[start:end], end
		}
		vals := make([]any, len(cols))
		for j, c := range cols {
			v, err := c.value(row[c.first:c.end], 0, 0)
			if err != nil {
				return nil, &RowError{base + i + 1, c.Path, err.Error()}
			}
			vals[j] = v
		}
		out = append(out, vals)
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
func readColumn(cc parquet.ColumnChunk, leaf *Node, base int64) (out []leafValue, err error) {
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
			return nil, &RowError{base + rows + 1, leaf.Path, oneLine(err.Error())}
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
					switch leaf.Kind {
					case String:
						b := v.ByteArray()
						if !utf8.Valid(b) {
							parquet.Release(p)
							return nil, &RowError{base + rows, leaf.Path, "invalid UTF-8"}
						}
						if string(b) != prev { // consecutive rows often share a passage
							prev = string(b)
						}
						lv.v = prev
					case Int:
						if leaf.leafType == "int32" {
							lv.v = int64(v.Int32())
						} else {
							lv.v = v.Int64()
						}
					case Float:
						if leaf.leafType == "float" {
							lv.v = float64(v.Float())
						} else {
							lv.v = v.Double()
						}
					case Bool:
						lv.v = v.Boolean()
					}
				}
				out = append(out, lv)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				parquet.Release(p)
				return nil, &RowError{base + rows + 1, leaf.Path, oneLine(err.Error())}
			}
		}
		parquet.Release(p)
	}
}

var errLevels = errors.New("repetition and definition levels do not fit the schema")

// value assembles the node's value for one instance from the values of its
// leaf columns (cols[0] is leaf n.first), given the definition and
// repetition levels of its parent.
func (n *Node) value(cols [][]leafValue, def, rep int32) (any, error) {
	if len(cols) == 0 || len(cols[0]) == 0 {
		return nil, errLevels
	}
	if n.Optional {
		def++
		if cols[0][0].def < def {
			return nil, nil
		}
	}
	switch n.Kind {
	case String, Int, Float, Bool:
		return cols[0][0].v, nil
	case Group:
		r := &Row{Keys: make([]string, len(n.Fields)), Vals: make([]any, len(n.Fields))}
		for i, f := range n.Fields {
			v, err := f.value(cols[f.first-n.first:f.end-n.first], def, rep)
			if err != nil {
				return nil, err
			}
			r.Keys[i], r.Vals[i] = f.Name, v
		}
		return r, nil
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
		v, err := n.Elem.value(sub, def, rep)
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
