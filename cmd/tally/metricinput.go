package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
)

// metricInput accepts what benchmarks publish as well as JSON lines: a
// gzip stream (detected by its magic bytes) is decompressed, and a JSON
// array (first non-space byte '[') is turned into one line per element.
// Anything else passes through unchanged.
func metricInput(r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("read gzip input: %w", err)
		}
		br = bufio.NewReaderSize(zr, 1<<16)
	}
	for {
		b, err := br.Peek(1)
		if err != nil || len(b) == 0 {
			return br, nil
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			br.ReadByte()
			continue
		case '[':
			return arrayLines(br)
		}
		return br, nil
	}
}

// arrayLines decodes a JSON array element by element and returns its
// elements as JSON lines.
func arrayLines(r io.Reader) (io.Reader, error) {
	dec := json.NewDecoder(r)
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("read JSON array: %w", err)
	}
	var out bytes.Buffer
	for n := 1; dec.More(); n++ {
		var el json.RawMessage
		if err := dec.Decode(&el); err != nil {
			return nil, fmt.Errorf("read JSON array element %d: %w", n, err)
		}
		var c bytes.Buffer
		if err := json.Compact(&c, el); err != nil {
			return nil, fmt.Errorf("read JSON array element %d: %w", n, err)
		}
		out.Write(c.Bytes())
		out.WriteByte('\n')
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("read JSON array end: %w", err)
	}
	return &out, nil
}
