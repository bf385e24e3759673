package drop

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"tally/datasets"
	"tally/datasets/lmevallog"
	scoredrop "tally/scoring/drop"
)

func init() {
	datasets.RegisterLoader(datasets.Loader{
		Name: "drop",
		Doc:  "DROP's original JSON, Hugging Face rows, or an lm-evaluation-harness DROP sample log (its prompts kept verbatim)",
		Rows: taskRows,
		// The file at Path (Hugging Face rows, the original JSON, parquet or an
		// lm-eval sample log), nothing else.
		OnlyData: true,
	})
}

// taskRows reads DROP questions as template rows (section_id, query_id,
// passage, question, target: the first gold answer's spans joined by ", ")
// with their gold answers as get_answers builds them. Embedded data
// (req.Data) is read as Hugging Face rows in JSON Lines.
func taskRows(req datasets.Request) (datasets.Rows, error) {
	if isLog(req.Path) {
		return logRows(req.Path)
	}
	var qs []Question
	var err error
	if req.Data != nil {
		qs, err = loadData(req.Data, req.Path, false)
	} else {
		qs, err = load(req.Path, false)
	}
	if err != nil {
		return datasets.Rows{}, err
	}
	out := datasets.Rows{Rows: make([]map[string]any, len(qs)), Refs: make([]json.RawMessage, len(qs)), Notes: make([]map[string]string, len(qs))}
	for i, q := range qs {
		va := q.ValidatedAnswers
		if len(va) == 0 {
			va = json.RawMessage("null") // as q.Doc() writes it
		}
		answers, err := scoredrop.AnswersOf(q.Answer, va)
		if err != nil {
			return datasets.Rows{}, fmt.Errorf("%s question %s: %w", req.Path, q.QueryID, err)
		}
		target := ""
		if len(answers) > 0 {
			target = strings.Join(answers[0], ", ")
		}
		out.Rows[i] = map[string]any{"section_id": q.SectionID, "query_id": q.QueryID, "passage": q.Passage,
			"question": q.Question, "target": target}
		out.Refs[i], _ = json.Marshal(answers)
		if out.Notes[i], err = answerNotes(q.Answer); err != nil {
			return datasets.Rows{}, fmt.Errorf("%s question %s: %w", req.Path, q.QueryID, err)
		}
	}
	return out, nil
}

// NoteAnswerType is the sample note (datasets.Sample.Notes) of the gold
// answer's type, as DROP types it (scoredrop.AnswerType: number, span,
// spans or date), which the HTML report's DROP view shows results by.
const NoteAnswerType = "answer_type"

// answerNotes are a question's sample notes: its gold answer's type.
func answerNotes(answer json.RawMessage) (map[string]string, error) {
	t, err := scoredrop.AnswerType(answer)
	if err != nil {
		return nil, err
	}
	return map[string]string{NoteAnswerType: t}, nil
}

// isLog reports whether path is an lm-evaluation-harness sample log.
func isLog(path string) bool {
	if !strings.HasSuffix(path, ".jsonl") && !strings.HasSuffix(path, ".jsonl.gz") {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return false
		}
		defer gz.Close()
		r = gz
	}
	line, _ := bufio.NewReaderSize(r, 1<<20).ReadBytes('\n')
	var row map[string]any
	return json.Unmarshal(line, &row) == nil && lmevallog.IsLog(row)
}

// logRows reads an lm-evaluation-harness DROP sample log: each doc is a
// Hugging Face EleutherAI/drop row, and the logged prompt is kept verbatim.
// A document logged once per filter is one sample. A samples file tally
// wrote (--output-path) has its template rows as docs, with no "answer":
// the gold answers and metadata are the ones tally wrote beside each line.
func logRows(path string) (datasets.Rows, error) {
	recs, err := lmevallog.ReadFile(path)
	if err != nil {
		return datasets.Rows{}, err
	}
	recs = lmevallog.OnePerDoc(recs)
	out := datasets.Rows{Rows: make([]map[string]any, len(recs)), Refs: make([]json.RawMessage, len(recs)), Notes: make([]map[string]string, len(recs))}
	for i, r := range recs {
		var row map[string]any
		if err := json.Unmarshal(r.Doc, &row); err != nil {
			return datasets.Rows{}, fmt.Errorf("%s line %d: field \"doc\": %w", path, r.Line, err)
		}
		if own, ok := r.Own(); ok && row["answer"] == nil && len(own.References) > 0 {
			row[datasets.VerbatimPrompt] = r.Prompt
			out.Rows[i], out.Refs[i] = row, own.References
			out.Notes[i] = own.Notes
			continue
		}
		answers, err := scoredrop.Answers(r.Doc)
		if err != nil {
			return datasets.Rows{}, fmt.Errorf("%s line %d: %w", path, r.Line, err)
		}
		var doc struct {
			Answer json.RawMessage `json:"answer"`
		}
		if json.Unmarshal(r.Doc, &doc) == nil {
			out.Notes[i], _ = answerNotes(doc.Answer) // Answers read it: it parses
		}
		row[datasets.VerbatimPrompt] = r.Prompt
		row["target"] = ""
		out.Rows[i] = row
		out.Refs[i], _ = json.Marshal(answers)
	}
	return out, nil
}
