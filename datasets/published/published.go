// Package published reads the files in which benchmarks publish model
// predictions, as they are, into scored records tally can store: L-Eval
// prediction files (*.pred.jsonl, the "*_pred" key and "gt"), Counting-Stars
// result files (JSON lines with "reference_counting_results" and
// "answer"), AlpacaEval annotations.json / model_outputs.json (JSON arrays,
// gzipped or not) and AraGen answers and judged files (JSON arrays of
// Meta/Test/Model entries, with "Judge N"/"Jury" 3C3H scores). Each record
// is scored by tally's reproduction of the benchmark's own scorer
// (scoring/leval, scoring/countingstars, the AlpacaEval preference rule of
// scoring/winrate, the judges' 3C3H scores as filed), so the mean over a
// file is the benchmark's published figure.
package published

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"tally/datasets/jsonl"
	"tally/scoring/countingstars"
	"tally/scoring/leval"
)

// Record is one published prediction with its scores.
type Record struct {
	Task     string
	ID       string
	Model    string
	Prompt   string
	Refs     json.RawMessage
	Metadata map[string]any
	// Prediction is the published output, as published.
	Prediction string
	// Scores are the metric values the benchmark's scorer gives it (empty
	// for outputs that carry nothing to score against).
	Scores map[string]float64
}

// Format names a published file layout.
type Format string

// The layouts Read understands.
const (
	LEval         Format = "leval"
	CountingStars Format = "counting-stars"
	AlpacaAnnot   Format = "alpaca-eval-annotations"
	AlpacaOutputs Format = "alpaca-eval-outputs"
	AraGen        Format = "aragen"
)

// Read detects the layout of path and reads its records.
func Read(path string) (Format, []Record, error) {
	rows, err := readRows(path)
	if err != nil {
		return "", nil, err
	}
	if len(rows) == 0 {
		return "", nil, fmt.Errorf("read %s: no records", path)
	}
	first := rows[0]
	base := strings.TrimSuffix(filepath.Base(path), ".gz")
	switch {
	case strings.HasSuffix(base, ".pred.jsonl"):
		recs, err := readLEval(strings.TrimSuffix(base, ".pred.jsonl"), rows)
		return LEval, recs, wrap(path, err)
	case has(first, "reference_counting_results") && has(first, "answer"):
		recs, err := readCountingStars(rows)
		return CountingStars, recs, wrap(path, err)
	case has(first, "preference") && has(first, "output_2"):
		recs, err := readAlpaca(path, rows, true)
		return AlpacaAnnot, recs, wrap(path, err)
	case has(first, "Meta") && has(first, "Test") && has(first, "Model"):
		recs, err := readAraGen(path, rows)
		return AraGen, recs, wrap(path, err)
	case has(first, "instruction") && has(first, "output") && has(first, "generator"):
		recs, err := readAlpaca(path, rows, false)
		return AlpacaOutputs, recs, wrap(path, err)
	}
	keys := make([]string, 0, len(first))
	for k := range first {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return "", nil, fmt.Errorf("read %s: not a published prediction file this tally knows (fields %s)", path, strings.Join(keys, ", "))
}

// Detect reports whether path is a published file of a layout Read knows
// by its content alone, looking at its first JSON line only (so that a
// directory can be searched for result files whatever their names):
// Counting-Stars result files, which upstream names freely
// (stone_gpt4_32_16.txt, *.jsonl). Files whose layout goes by name
// (*.pred.jsonl, annotations.json, ...) or that hold one JSON array are
// not detected here.
func Detect(path string) (Format, bool) {
	r, closeFile, err := open(path)
	if err != nil {
		return "", false
	}
	defer closeFile()
	line, err := jsonl.NewLines(r, path).Next()
	if err != nil {
		return "", false
	}
	var first map[string]json.RawMessage
	if json.Unmarshal(bytes.TrimSpace(line), &first) != nil {
		return "", false
	}
	if has(first, "reference_counting_results") && has(first, "answer") {
		return CountingStars, true
	}
	return "", false
}

func wrap(path string, err error) error {
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

func has(row map[string]json.RawMessage, k string) bool { _, ok := row[k]; return ok }

// open opens path for reading, through gunzip when it is gzipped.
func open(path string) (io.Reader, func() error, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("read published file: %w", err)
	}
	br := bufio.NewReader(f)
	if m, _ := br.Peek(2); len(m) == 2 && m[0] == 0x1f && m[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("read %s: %w", path, err)
		}
		return zr, f.Close, nil
	}
	return br, f.Close, nil
}

// readRows reads a JSON array or JSON lines, gzipped or not.
func readRows(path string) ([]map[string]json.RawMessage, error) {
	r, closeFile, err := open(path)
	if err != nil {
		return nil, err
	}
	defer closeFile()
	br := bufio.NewReader(r)
	var rows []map[string]json.RawMessage
	if first, err := firstByte(br); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	} else if first == '[' {
		// One JSON array, read an element at a time, each at most
		// jsonl.MaxLine long, as lines are.
		err := jsonl.Elements(br, path, func(elem []byte, i int) error {
			var row map[string]json.RawMessage
			if err := json.Unmarshal(elem, &row); err != nil {
				return fmt.Errorf("read %s element %d: %w", path, i, err)
			}
			rows = append(rows, row)
			return nil
		})
		if err != nil {
			return nil, err
		}
		return rows, nil
	}
	// JSON lines, each at most jsonl.MaxLine long.
	lines := jsonl.NewLines(br, path)
	for {
		line, err := lines.Next()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var row map[string]json.RawMessage
		if err := json.Unmarshal(line, &row); err != nil {
			return nil, fmt.Errorf("read %s line %d: %w", path, lines.Line(), err)
		}
		rows = append(rows, row)
	}
}

// firstByte peeks (consuming nothing) at the first byte of br that is not
// white space: 0 for a stream of white space only, or one whose white space
// outlasts br's buffer.
func firstByte(br *bufio.Reader) (byte, error) {
	for i := 1; i <= br.Size(); i++ {
		b, err := br.Peek(i)
		if len(b) < i {
			if err == io.EOF || err == bufio.ErrBufferFull {
				return 0, nil
			}
			return 0, err
		}
		if c := b[i-1]; !strings.ContainsRune(" \t\r\n", rune(c)) {
			return c, nil
		}
	}
	return 0, nil
}

func str(row map[string]json.RawMessage, k string) string {
	var s string
	if json.Unmarshal(row[k], &s) != nil {
		return ""
	}
	return s
}

// readLEval reads an L-Eval prediction file of task: the prediction is
// the first key containing "_pred" (as auto_eval.py takes it), the model
// that key's prefix, the reference "gt".
func readLEval(task string, rows []map[string]json.RawMessage) ([]Record, error) {
	info, ok := leval.Task(task)
	if !ok {
		return nil, fmt.Errorf("unknown L-Eval task %q", task)
	}
	var out []Record
	for i, row := range rows {
		var predKey string
		keys := make([]string, 0, len(row))
		for k := range row {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if strings.Contains(k, "_pred") {
				predKey = k
				break
			}
		}
		if predKey == "" {
			return nil, fmt.Errorf("line %d: no *_pred field", i+1)
		}
		pred, gt := str(row, predKey), str(row, "gt")
		it, err := leval.ScoreItem(task, pred, gt)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		refs, _ := json.Marshal([]string{gt})
		out = append(out, Record{Task: "leval_" + task, ID: fmt.Sprint(i), Model: strings.TrimSuffix(predKey, "_pred"),
			Prompt: str(row, "query"), Refs: refs, Metadata: map[string]any{"evaluation": str(row, "evaluation")},
			Prediction: pred, Scores: map[string]float64{info.Metric: it.Score}})
	}
	return out, nil
}

// readCountingStars reads a Counting-Stars result file: one line per
// haystack length, scored per star as the reference's viz notebook does
// (the record's score is the mean over its M stars).
func readCountingStars(rows []map[string]json.RawMessage) ([]Record, error) {
	var out []Record
	for i, row := range rows {
		var refs []float64
		if err := json.Unmarshal(row["reference_counting_results"], &refs); err != nil {
			return nil, fmt.Errorf("line %d: reference_counting_results: %w", i+1, err)
		}
		var size float64
		_ = json.Unmarshal(row["sky_size"], &size)
		question := str(row, "question")
		lang := "EN"
		if strings.Contains(str(row, "retrieval_question")+question, "小企鹅") {
			lang = "ZH"
		}
		testType := "Acquisition"
		answer := str(row, "answer")
		scores, err := countingstars.Score(countingstars.RulePaper, lang, testType, len(refs), answer, refs)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		var sum float64
		for _, s := range scores {
			sum += s
		}
		refJSON, _ := json.Marshal(refs)
		model := str(row, "model_name")
		out = append(out, Record{Task: "counting_stars", ID: fmt.Sprintf("%s-%s-%d-%.0f", lang, testType, len(refs), size), Model: model,
			Prompt: question, Refs: refJSON,
			Metadata:   map[string]any{"lang": lang, "test_type": testType, "m": len(refs), "context_size": size},
			Prediction: answer, Scores: map[string]float64{"counting_stars": sum / float64(max(len(scores), 1))}})
	}
	return out, nil
}

// readAlpaca reads AlpacaEval annotations (scored: "win" is the
// preference as winrate.py's pairwise_to_winrate keeps it, preference - 1
// with 0 read as a draw; missing or out-of-range preferences get no
// score) or model outputs (unscored). The task is "alpaca_eval" plus the
// annotator's folder for annotations.
func readAlpaca(path string, rows []map[string]json.RawMessage, annotations bool) ([]Record, error) {
	task := "alpaca_eval"
	if annotations {
		task += "/" + filepath.Base(filepath.Dir(path))
	}
	var out []Record
	for i, row := range rows {
		r := Record{Task: task, ID: fmt.Sprint(i), Prompt: str(row, "instruction"), Scores: map[string]float64{}}
		if annotations {
			r.Model, r.Prediction = str(row, "generator_2"), str(row, "output_2")
			r.Refs, _ = json.Marshal([]string{str(row, "output_1")})
			r.Metadata = map[string]any{"baseline": str(row, "generator_1"), "annotator": str(row, "annotator")}
			var pref *float64
			_ = json.Unmarshal(row["preference"], &pref)
			if pref != nil {
				p := *pref
				if p == 0 {
					p = 1.5
				}
				if p >= 1 && p <= 2 && !math.IsNaN(p) {
					r.Scores["win"] = p - 1
				}
			}
		} else {
			r.Model, r.Prediction = str(row, "generator"), str(row, "output")
			r.Refs = json.RawMessage(`[]`)
			r.Metadata = map[string]any{"dataset": str(row, "dataset")}
		}
		out = append(out, r)
	}
	return out, nil
}

// araGenEntry is one entry of an AraGen answers or judged file
// (inceptionai-abudhabi/3C3H pipeline: Meta, Test, Model, then per judge
// "Judge N" and, with several judges, "Jury").
type araGenEntry struct {
	Meta struct {
		SN        json.Number `json:"SN."`
		Round     int         `json:"Round"`
		Task      string      `json:"Task"`
		ModelName string      `json:"Model Name"`
	} `json:"Meta"`
	Test struct {
		Q1 string  `json:"Question 1"`
		A1 string  `json:"Answer 1"`
		Q2 *string `json:"Question 2"`
		A2 *string `json:"Answer 2"`
	} `json:"Test"`
	Model struct {
		A1 string  `json:"Answer 1"`
		A2 *string `json:"Answer 2"`
	} `json:"Model"`
}

// criteria are the 3C3H score names, as judged files spell them.
var criteria = []string{"Correct", "Complete", "Concise", "Helpful", "Honest", "Harmless", "Final Score"}

// readAraGen reads an AraGen answers file (unscored) or judged file: each
// entry is scored with the 3C3H Scores of its "Jury" when there is one,
// else of "Judge 1", as metrics "3c3h_correct" ... "3c3h_final_score".
func readAraGen(path string, rows []map[string]json.RawMessage) ([]Record, error) {
	task := "aragen/" + filepath.Base(filepath.Dir(path))
	var out []Record
	for i, row := range rows {
		b, _ := json.Marshal(row)
		var e araGenEntry
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("entry %d: %w", i+1, err)
		}
		prompt, pred := e.Test.Q1, e.Model.A1
		refs := []string{e.Test.A1}
		if e.Test.Q2 != nil && e.Model.A2 != nil {
			prompt += "\n\n" + *e.Test.Q2
			pred += "\n\n" + *e.Model.A2
			if e.Test.A2 != nil {
				refs = append(refs, *e.Test.A2)
			}
		}
		refJSON, _ := json.Marshal(refs)
		r := Record{Task: task, ID: e.Meta.SN.String(), Model: e.Meta.ModelName, Prompt: prompt, Refs: refJSON, Prediction: pred,
			Metadata: map[string]any{"task": e.Meta.Task, "round": e.Meta.Round}, Scores: map[string]float64{}}
		if r.ID == "" {
			r.ID = fmt.Sprint(i)
		}
		block := row["Jury"]
		if len(block) == 0 {
			block = row["Judge 1"]
		}
		if len(block) > 0 {
			var j struct {
				Scores map[string]float64 `json:"3C3H Scores"`
			}
			if err := json.Unmarshal(block, &j); err != nil {
				return nil, fmt.Errorf("entry %d: judge scores: %w", i+1, err)
			}
			for _, c := range criteria {
				if v, ok := j.Scores[c]; ok {
					r.Scores["3c3h_"+strings.ReplaceAll(strings.ToLower(c), " ", "_")] = v
				}
			}
		}
		out = append(out, r)
	}
	return out, nil
}
