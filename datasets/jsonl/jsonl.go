// Package jsonl reads JSON Lines files into rows, with errors that name the
// file and line, and an option to skip bad lines and count them.
package jsonl

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// Row is one decoded JSON object.
type Row map[string]any

// Result is what Read returns: the rows, and how many lines were skipped
// (only with skipBad) with the first skip's error.
type Result struct {
	Rows      []Row
	Lines     []int // 1-based line number of each row
	Skipped   int
	FirstSkip error
}

// ReadFile reads a JSON Lines file (gzip when the name ends in .gz). A
// malformed line, invalid UTF-8 or a line that is not an object is an error
// naming the file and line; with skipBad such lines are counted and skipped
// instead. Blank lines are ignored.
func ReadFile(path string, skipBad bool) (Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return Result{}, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return Result{}, fmt.Errorf("read %s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	return Read(r, path, skipBad)
}

// Read reads JSON Lines from r; name is used in errors. A line longer
// than MaxLine is an error even with skipBad (it is not a sample, and is
// read no further).
func Read(r io.Reader, name string, skipBad bool) (Result, error) {
	return read(NewLines(r, name), name, skipBad)
}

func read(lines *Lines, name string, skipBad bool) (Result, error) {
	var res Result
	for {
		line, err := lines.Next()
		if err == io.EOF {
			return res, nil
		}
		if err != nil {
			return res, err
		}
		if rerr := parseLine(line, lines.Line(), name, &res); rerr != nil {
			if !skipBad {
				return res, rerr
			}
			if res.Skipped == 0 {
				res.FirstSkip = rerr
			}
			res.Skipped++
		}
	}
}

func parseLine(line []byte, lineNo int, name string, res *Result) error {
	line = bytes.TrimRight(line, "\r\n")
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	if !utf8.Valid(line) {
		return fmt.Errorf("read %s line %d: invalid UTF-8", name, lineNo)
	}
	var row Row
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&row); err != nil {
		return fmt.Errorf("read %s line %d: %w", name, lineNo, err)
	}
	if row == nil {
		return fmt.Errorf("read %s line %d: not a JSON object", name, lineNo)
	}
	if dec.More() {
		return fmt.Errorf("read %s line %d: more than one JSON value on the line", name, lineNo)
	}
	res.Rows = append(res.Rows, row)
	res.Lines = append(res.Lines, lineNo)
	return nil
}
