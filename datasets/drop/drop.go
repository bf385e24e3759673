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
func Load(path string) ([]Question, error) {
	if strings.HasSuffix(path, ".parquet") {
		return loadParquet(path)
	}
	if strings.HasSuffix(path, ".jsonl") || strings.HasSuffix(path, ".jsonl.gz") {
		return loadRows(path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read DROP %s: %w", path, err)
	}
	return parseOriginal(path, data)
}

type original map[string]struct {
	Passage string `json:"passage"`
	QAPairs []struct {
		Question         string          `json:"question"`
		QueryID          string          `json:"query_id"`
		Answer           json.RawMessage `json:"answer"`
		ValidatedAnswers json.RawMessage `json:"validated_answers"`
	} `json:"qa_pairs"`
}

func parseOriginal(path string, data []byte) ([]Question, error) {
	var doc original
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("read DROP %s: %w", path, err)
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

func loadRows(path string) ([]Question, error) {
	res, err := jsonl.ReadFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("read DROP: %w", err)
	}
	return questionRows(res, path)
}

// LoadRows reads DROP questions in the Hugging Face layout from JSON
// Lines data (data built into tally); name labels it in errors.
func LoadRows(data []byte, name string) ([]Question, error) {
	res, err := jsonl.Read(bytes.NewReader(data), name, false)
	if err != nil {
		return nil, fmt.Errorf("read DROP: %w", err)
	}
	return questionRows(res, name)
}

// questionRows turns JSON Lines rows into questions.
func questionRows(res jsonl.Result, path string) ([]Question, error) {
	out := make([]Question, 0, len(res.Rows))
	for i, row := range res.Rows {
		b, _ := json.Marshal(row)
		var q Question
		if err := json.Unmarshal(b, &q); err != nil {
			return nil, fmt.Errorf("read DROP %s line %d: %w", path, res.Lines[i], err)
		}
		for field, v := range map[string]string{"query_id": q.QueryID, "passage": q.Passage, "question": q.Question} {
			if v == "" {
				return nil, fmt.Errorf("read DROP %s line %d: field %q missing or empty", path, res.Lines[i], field)
			}
		}
		if len(q.Answer) == 0 {
			return nil, fmt.Errorf("read DROP %s line %d: field \"answer\" missing", path, res.Lines[i])
		}
		out = append(out, q)
	}
	return out, nil
}
