package lmeval

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"tally/datasets/jsonl"
	"tally/datasets/pqrows"
)

// dataSource is where a task's splits come from (--data): files named per
// split ("test=a.parquet,train=b.jsonl"), a folder in the Hugging Face
// Hub's layout, or one file holding the evaluation split.
type dataSource struct {
	spec  string
	files map[string]string // split -> file
	dir   string
	one   string // one file: the evaluation split
	// read are the files read through it, in the order read.
	read []string
}

func parseDataSpec(spec string) (*dataSource, error) {
	ds := &dataSource{spec: spec}
	switch {
	case spec == "":
		return ds, nil
	case strings.Contains(spec, "="):
		ds.files = map[string]string{}
		for _, part := range strings.Split(spec, ",") {
			k, v, ok := strings.Cut(part, "=")
			if !ok || k == "" || v == "" {
				return nil, fmt.Errorf("--data %q: want SPLIT=FILE[,SPLIT=FILE...], a folder, or a file", spec)
			}
			if _, dup := ds.files[k]; dup {
				return nil, fmt.Errorf("--data %q: split %s given twice", spec, k)
			}
			ds.files[k] = v
		}
	default:
		st, err := os.Stat(spec)
		if err != nil {
			return nil, fmt.Errorf("--data: %w", err)
		}
		if st.IsDir() {
			ds.dir = spec
		} else {
			ds.one = spec
		}
	}
	return ds, nil
}

// dataExts are the file types read: JSON Lines (optionally gzipped),
// JSON and Parquet.
var dataExts = []string{".parquet", ".jsonl", ".jsonl.gz", ".json", ".json.gz", ".ndjson"}

// splitFiles finds the files of a split. config is the task's
// dataset_name ("default" when none); evalSplit is the split the task
// evaluates, which a single --data file stands for.
func (ds *dataSource) splitFiles(split, config, evalSplit string) ([]string, error) {
	switch {
	case ds.files != nil:
		f, ok := ds.files[split]
		if !ok {
			return nil, fmt.Errorf("no file for split %s: add %s=FILE to --data", split, split)
		}
		return []string{f}, nil
	case ds.one != "":
		if split != evalSplit {
			return nil, fmt.Errorf("--data %s is the %s split; the task also needs split %s: pass --data %s=%s,%s=FILE", ds.one, evalSplit, split, evalSplit, ds.one, split)
		}
		return []string{ds.one}, nil
	case ds.dir != "":
		if config == "" {
			config = "default"
		}
		// The Hub's layouts: CONFIG/SPLIT-00000-of-00001.parquet,
		// CONFIG/SPLIT/0000.parquet (the parquet conversion), data/SPLIT-*,
		// and SPLIT-* or SPLIT/ at the top.
		for _, base := range []string{filepath.Join(ds.dir, config), filepath.Join(ds.dir, "data", config), filepath.Join(ds.dir, "data"), ds.dir} {
			if files := globSplit(base, split); len(files) > 0 {
				return files, nil
			}
		}
		return nil, fmt.Errorf("no file for split %s of %s in %s (looked for %s/%s-*.parquet, %s/%s/*, data/%s-*, %s-* and %s.jsonl)",
			split, config, ds.dir, config, split, config, split, split, split, split)
	}
	return nil, fmt.Errorf("no data: pass --data FILE, --data SPLIT=FILE,... or --data FOLDER (the Hub's layout)")
}

func globSplit(base, split string) []string {
	var out []string
	for _, ext := range dataExts {
		for _, pat := range []string{split + ext, split + "-*" + ext, split + "_*" + ext, filepath.Join(split, "*"+ext)} {
			m, _ := filepath.Glob(filepath.Join(base, pat))
			out = append(out, m...)
		}
	}
	sort.Strings(out)
	// One shard pattern may match another's files (test.jsonl and
	// test-*.jsonl): keep each file once.
	uniq := out[:0]
	for i, f := range out {
		if i == 0 || f != out[i-1] {
			uniq = append(uniq, f)
		}
	}
	return uniq
}

// readRows reads the documents of a file: Parquet, JSON Lines (each line
// an object) or JSON (an array of objects, or JSON Lines). Key order is
// kept. skipBad skips malformed lines, counting them.
func readRows(path string, skipBad bool) ([]*Map, int, error) {
	if strings.HasSuffix(path, ".parquet") {
		rows, err := pqrows.ReadFile(path)
		if err != nil {
			return nil, 0, err
		}
		out := make([]*Map, len(rows))
		for i, r := range rows {
			out[i] = fromPQ(r).(*Map)
		}
		return out, 0, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, 0, fmt.Errorf("read %s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	br := bufio.NewReaderSize(r, 1<<20)
	if first, err := br.Peek(1); err == nil && strings.HasSuffix(strings.TrimSuffix(path, ".gz"), ".json") {
		head, _ := br.Peek(min(br.Buffered(), 4096))
		if t := bytes.TrimLeft(head, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '[' {
			// One array, read an element at a time, each at most
			// jsonl.MaxLine long (the whole file was read and decoded
			// at once: a 100 MB element took 6 GB).
			if bytes.HasPrefix(head, []byte("\ufeff")) {
				br.Discard(len("\ufeff"))
			}
			var out []*Map
			err := jsonl.Elements(br, path, func(elem []byte, i int) error {
				v, err := decodeJSON(elem)
				if err != nil {
					return fmt.Errorf("read %s element %d: %w", path, i, err)
				}
				m, ok := v.(*Map)
				if !ok {
					return fmt.Errorf("read %s: element %d is not an object", path, i)
				}
				out = append(out, m)
				return nil
			})
			if err != nil {
				return nil, 0, err
			}
			return out, 0, nil
		}
		_ = first
	}
	var out []*Map
	skipped := 0
	lines := jsonl.NewLines(br, path) // at most jsonl.MaxLine a line
	for {
		line, err := lines.Next()
		if err == io.EOF {
			return out, skipped, nil
		}
		if err != nil {
			return nil, 0, err
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			m, perr := parseLine(t)
			if perr != nil {
				if !skipBad {
					return nil, 0, fmt.Errorf("read %s line %d: %w", path, lines.Line(), perr)
				}
				skipped++
			} else {
				out = append(out, m)
			}
		}
	}
}

func parseLine(line []byte) (*Map, error) {
	if !utf8.Valid(line) {
		return nil, fmt.Errorf("invalid UTF-8")
	}
	v, err := decodeJSON(line)
	if err != nil {
		return nil, err
	}
	m, ok := v.(*Map)
	if !ok {
		return nil, fmt.Errorf("not a JSON object")
	}
	return m, nil
}

// fromPQ converts a Parquet value (pqrows) to a document value.
func fromPQ(v any) any {
	switch x := v.(type) {
	case *pqrows.Row:
		m := NewMap()
		for i, k := range x.Keys {
			m.Set(k, fromPQ(x.Vals[i]))
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = fromPQ(e)
		}
		return out
	case int32:
		return int64(x)
	case float32:
		return float64(x)
	}
	return v
}
