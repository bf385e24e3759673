package judge

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"tally/datasets"
	"tally/datasets/jsonl"
)

// Pair is one AlpacaEval comparison: an instruction, the baseline's output
// and the evaluated model's output.
type Pair struct {
	// Instruction is the prompt both models answered.
	Instruction string
	// Output1 is the baseline's output (AlpacaEval's output_1).
	Output1 string
	// Generator1 names the baseline (generator_1; "" when absent).
	Generator1 string
	// Output2 is the evaluated model's output (output_2).
	Output2 string
	// Generator2 names the evaluated model (generator_2; "" when absent).
	Generator2 string
	// Dataset is the instruction's source set ("" when absent).
	Dataset string
	// Preference is the annotation already in the file, if any: AlpacaEval
	// coding (1 baseline, 2 model, 1.5 or legacy 0 draw, weighted values in
	// between); nil when absent or null.
	Preference *float64
}

// openMaybeGzip opens a file, through gunzip when it starts with the gzip
// magic bytes; close closes both.
func openMaybeGzip(path string) (r *bufio.Reader, close func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	br := bufio.NewReaderSize(f, 1<<20)
	if m, _ := br.Peek(2); len(m) == 2 && m[0] == 0x1f && m[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("opening gzip stream: %w", err)
		}
		return bufio.NewReaderSize(zr, 1<<20), func() { zr.Close(); f.Close() }, nil
	}
	return br, func() { f.Close() }, nil
}

// eachRow calls f with each object of r, a JSON array (each element at
// most jsonl.MaxLine long, read one at a time) or JSON lines (each line
// at most that long); where names the element or line for errors.
func eachRow(r *bufio.Reader, name string, f func(raw []byte, where string) error) error {
	for {
		b, err := r.Peek(1)
		if err != nil {
			return nil // empty
		}
		if c := b[0]; c == ' ' || c == '\t' || c == '\r' || c == '\n' {
			r.ReadByte()
			continue
		}
		if b[0] == '[' {
			return elements(r, name, func(elem []byte, i int) error { return f(elem, fmt.Sprintf("index %d", i-1)) })
		}
		break
	}
	lines := jsonl.NewLines(r, name)
	for {
		line, err := lines.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if text := bytes.TrimSpace(line); len(text) > 0 {
			if err := f(text, fmt.Sprintf("line %d", lines.Line())); err != nil {
				return err
			}
		}
	}
}

// LoadPairs reads AlpacaEval pairs from an annotations.json file (a JSON
// array of objects, optionally gzip-compressed, e.g. annotations.json.gz)
// or a JSON-lines file of the same objects. Each object needs the string
// fields instruction, output_1 and output_2; generator_1, generator_2 and
// dataset are optional strings, preference an optional number; other
// fields are ignored. Errors name the file, the array index or line, and
// the field.
func LoadPairs(path string) ([]Pair, error) {
	r, closeFile, err := openMaybeGzip(path)
	if err != nil {
		return nil, fmt.Errorf("judge: reading pairs: %w", err)
	}
	defer closeFile()
	pairs, err := decodePairsFrom(r, path)
	if err != nil {
		return nil, fmt.Errorf("judge: %s: %w", path, err)
	}
	return pairs, nil
}

// decodePairs decodes a JSON array or JSON lines of pair objects.
func decodePairs(data []byte) ([]Pair, error) {
	return decodePairsFrom(bufio.NewReader(bytes.NewReader(data)), "pairs")
}

func decodePairsFrom(r *bufio.Reader, name string) ([]Pair, error) {
	var pairs []Pair
	err := eachRow(r, name, func(raw []byte, where string) error {
		p, err := decodePair(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		pairs = append(pairs, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return pairs, nil
}

// elements is jsonl.Elements, its own errors (the array's syntax, an
// element past the bound) said to be the array's.
func elements(r io.Reader, name string, f func(elem []byte, i int) error) error {
	var fErr error
	err := jsonl.Elements(r, name, func(elem []byte, i int) error {
		fErr = f(elem, i)
		return fErr
	})
	if err != nil && fErr == nil {
		return fmt.Errorf("decoding the JSON array: %w", err)
	}
	return err
}

func decodePair(raw []byte) (Pair, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return Pair{}, fmt.Errorf("decoding the object: %w", err)
	}
	var p Pair
	fields := []struct {
		name     string
		dst      *string
		required bool
	}{
		{"instruction", &p.Instruction, true},
		{"output_1", &p.Output1, true},
		{"generator_1", &p.Generator1, false},
		{"output_2", &p.Output2, true},
		{"generator_2", &p.Generator2, false},
		{"dataset", &p.Dataset, false},
	}
	for _, f := range fields {
		v, ok := obj[f.name]
		if !ok || string(v) == "null" {
			if f.required {
				return Pair{}, fmt.Errorf("field %q: missing or null", f.name)
			}
			continue
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return Pair{}, fmt.Errorf("field %q: not a string: %s", f.name, abbreviate(v))
		}
	}
	if v, ok := obj["preference"]; ok && string(v) != "null" {
		var f float64
		if err := json.Unmarshal(v, &f); err != nil {
			return Pair{}, fmt.Errorf("field %q: not a number: %s", "preference", abbreviate(v))
		}
		p.Preference = &f
	}
	return p, nil
}

// abbreviate quotes the start of a raw JSON value for an error message.
func abbreviate(v []byte) string {
	const max = 40
	if len(v) > max {
		return strconv.Quote(string(v[:max])) + "..."
	}
	return strconv.Quote(string(v))
}

// PairReference is the References of a pairwise sample.
type PairReference struct {
	// Order is "ab" (baseline shown first) or "ba" (model shown first).
	Order string `json:"order"`
	// Generator1 names the baseline.
	Generator1 string `json:"generator_1"`
	// Generator2 names the evaluated model.
	Generator2 string `json:"generator_2"`
	// Identical is true when both outputs are the same text; AlpacaEval
	// then records 1.5 without asking the judge
	// (PairwiseAnnotatorLocal._preprocess), and so should the metric.
	Identical bool `json:"identical,omitempty"`
}

// ParsePairReference decodes a pairwise sample's References.
func ParsePairReference(raw json.RawMessage) (PairReference, error) {
	var r PairReference
	if err := json.Unmarshal(raw, &r); err != nil {
		return PairReference{}, fmt.Errorf("judge: decoding pair references: %w", err)
	}
	if r.Order != "ab" && r.Order != "ba" {
		return PairReference{}, fmt.Errorf("judge: pair references: field \"order\" is %q, want \"ab\" or \"ba\"", r.Order)
	}
	return r, nil
}

// PairwiseSamples makes two judge samples per pair, one per order, since
// a judge's position bias is measured and cancelled by asking both ways:
// ID "<index>/ab" shows the baseline (output_1) first, "<index>/ba" the
// model (output_2) first; ShareKey is the index; References is a
// PairReference; Metadata holds "index" (the pair's position), "order",
// "system_prompt" (the template's system turn, which a chat run sends as
// the system message) and, when known, "dataset". The prompt is tmpl.Prompt with the first
// shown output as {output_1}.
func PairwiseSamples(task string, pairs []Pair, tmpl PairTemplate) []datasets.Sample {
	out := make([]datasets.Sample, 0, 2*len(pairs))
	for i, p := range pairs {
		key := strconv.Itoa(i)
		for _, order := range []string{"ab", "ba"} {
			first, second := p.Output1, p.Output2
			if order == "ba" {
				first, second = second, first
			}
			ref, err := json.Marshal(PairReference{
				Order: order, Generator1: p.Generator1, Generator2: p.Generator2,
				Identical: p.Output1 == p.Output2,
			})
			if err != nil { // cannot happen: strings and a bool always marshal
				ref = []byte("null")
			}
			meta := map[string]any{"index": i, "order": order}
			if tmpl.System != "" {
				meta["system_prompt"] = tmpl.System
			}
			if p.Dataset != "" {
				meta["dataset"] = p.Dataset
			}
			out = append(out, datasets.Sample{
				Task:       task,
				ID:         key + "/" + order,
				Prompt:     tmpl.Prompt(p.Instruction, first, second),
				References: ref,
				Metadata:   meta,
				ShareKey:   key,
			})
		}
	}
	return out
}
