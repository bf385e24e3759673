// Package drop loads DROP (Dua et al., 2019) questions from the layouts
// users have: the original AllenAI JSON (drop_dataset_dev.json:
// {section_id: {passage, qa_pairs}}) and the Hugging Face EleutherAI/drop
// rows as JSON Lines (one question per line with section_id, query_id,
// passage, question, answer, validated_answers) or as Parquet
// (validation-00000-of-00001.parquet, the same columns).
package drop

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"tally/datasets/jsonl"
)

// Question is one DROP question with its passage. Answer and
// ValidatedAnswers keep the source's JSON so the reference scorer's
// get_answers can read them unchanged.
type Question struct {
	SectionID        string          `json:"section_id"`
	QueryID          string          `json:"query_id"`
	Passage          string          `json:"passage"`
	Question         string          `json:"question"`
	Answer           json.RawMessage `json:"answer"`
	ValidatedAnswers json.RawMessage `json:"validated_answers"`
}

// Doc returns the question as the JSON record lm-evaluation-harness's DROP
// utilities take (answer and validated_answers as in the source).
func (q Question) Doc() json.RawMessage {
	b, _ := json.Marshal(q)
	return b
}

// Load reads DROP questions from path: a .json file in the original
// AllenAI layout, or .jsonl/.jsonl.gz or .parquet rows in the Hugging Face
// layout. Questions come in file order (sections sorted by id for the
// original layout, which is a JSON object).
//
// A Parquet file's answer and validated_answers (structs of strings and
// lists, validated_answers column-oriented as Hugging Face writes it) become
// the same JSON the JSON Lines path keeps for that row: keys sorted, nulls
// kept. Errors name the file, the row (counted from 1) and the column.
func Load(path string) ([]Question, error) { return load(path, true) }

// load is Load; rows in JSON Lines keep their answers' JSON as written
// unless canon is set (a reader that only parses them needs no more).
func load(path string, canon bool) ([]Question, error) {
	if strings.HasSuffix(path, ".parquet") {
		return loadParquet(path)
	}
	if strings.HasSuffix(path, ".jsonl") || strings.HasSuffix(path, ".jsonl.gz") {
		return loadRows(path, canon)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read DROP %s: %w", path, err)
	}
	defer f.Close()
	return parseOriginalFrom(path, f)
}

type original map[string]section

// section is one passage of DROP's own format, with its questions.
type section struct {
	Passage string `json:"passage"`
	QAPairs []struct {
		Question         string          `json:"question"`
		QueryID          string          `json:"query_id"`
		Answer           json.RawMessage `json:"answer"`
		ValidatedAnswers json.RawMessage `json:"validated_answers"`
	} `json:"qa_pairs"`
}

func parseOriginal(path string, data []byte) ([]Question, error) {
	return parseOriginalFrom(path, bytes.NewReader(data))
}

// parseOriginalFrom reads DROP's own format (an object of sections) a
// section at a time, each at most jsonl.MaxLine long (the bound of a data
// line), rather than the whole file at once.
func parseOriginalFrom(path string, r io.Reader) ([]Question, error) {
	doc := original{}
	err := jsonl.Members(r, path, func(key string, value []byte, _ int) error {
		var sec section
		if err := json.Unmarshal(value, &sec); err != nil {
			return fmt.Errorf("read DROP %s: section %s: %w", path, key, err)
		}
		doc[key] = sec
		return nil
	})
	if err != nil {
		if strings.Contains(err.Error(), "DROP") {
			return nil, err
		}
		return nil, fmt.Errorf("read DROP: %w", err)
	}
	ids := make([]string, 0, len(doc))
	for id := range doc {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var out []Question
	for _, id := range ids {
		sec := doc[id]
		if sec.Passage == "" {
			return nil, fmt.Errorf("read DROP %s: section %s: empty passage", path, id)
		}
		for i, qa := range sec.QAPairs {
			if qa.QueryID == "" || qa.Question == "" || len(qa.Answer) == 0 {
				return nil, fmt.Errorf("read DROP %s: section %s question %d: missing query_id, question or answer", path, id, i)
			}
			va := qa.ValidatedAnswers
			if len(va) == 0 {
				va = json.RawMessage("[]")
			}
			out = append(out, Question{SectionID: id, QueryID: qa.QueryID, Passage: sec.Passage, Question: qa.Question, Answer: qa.Answer, ValidatedAnswers: va})
		}
	}
	return out, nil
}

func loadRows(path string, canon bool) ([]Question, error) {
	return questionRows(path, canon, func(f func(line []byte, lineNo int) error) error { return jsonl.ObjectsFile(path, f) })
}

// LoadRows reads DROP questions in the Hugging Face layout from JSON
// Lines data (data built into tally); name labels it in errors.
func LoadRows(data []byte, name string) ([]Question, error) { return loadData(data, name, true) }

// loadData is LoadRows, the answers canonical when canon is set (see load).
func loadData(data []byte, name string, canon bool) ([]Question, error) {
	return questionRows(name, canon, func(f func(line []byte, lineNo int) error) error {
		return jsonl.Objects(bytes.NewReader(data), name, f)
	})
}

// questionRows decodes the JSON Lines rows that each (jsonl.Objects of a
// file or data named path) hands over into questions, checking their
// fields, and with canon writes their answers as json.Marshal does.
func questionRows(path string, canon bool, each func(f func(line []byte, lineNo int) error) error) ([]Question, error) {
	var out []Question
	var rowErr error
	err := each(func(line []byte, lineNo int) error {
		var q Question
		if rowErr = json.Unmarshal(line, &q); rowErr != nil {
			rowErr = fmt.Errorf("read DROP %s line %d: %w", path, lineNo, rowErr)
			return rowErr
		}
		for _, f := range []struct{ name, v string }{{"query_id", q.QueryID}, {"passage", q.Passage}, {"question", q.Question}} {
			if f.v == "" {
				rowErr = fmt.Errorf("read DROP %s line %d: field %q missing or empty", path, lineNo, f.name)
				return rowErr
			}
		}
		if len(q.Answer) == 0 {
			rowErr = fmt.Errorf("read DROP %s line %d: field \"answer\" missing", path, lineNo)
			return rowErr
		}
		if canon {
			if q.Answer, rowErr = canonical(q.Answer); rowErr == nil {
				q.ValidatedAnswers, rowErr = canonical(q.ValidatedAnswers)
			}
		}
		if rowErr != nil {
			rowErr = fmt.Errorf("read DROP %s line %d: %w", path, lineNo, rowErr)
			return rowErr
		}
		out = append(out, q)
		return nil
	})
	switch {
	case rowErr != nil:
		return nil, rowErr
	case err != nil:
		return nil, fmt.Errorf("read DROP: %w", err)
	}
	return out, nil
}

// canonical writes a JSON value again as json.Marshal writes what it
// decodes to (objects' keys sorted, numbers as written): the answers of
// a row are kept so, whatever their source's layout (empty stays empty).
func canonical(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return raw, nil
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}
