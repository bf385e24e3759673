// Package leval loads L-Eval (OpenLMLab/LEval) task files into samples,
// building prompts as the benchmark's own baseline scripts build them.
//
// Reference: OpenLMLab/LEval at commit
// cd34b050269148aed75acbbe4a599873ad0f37e9.
//
//   - System prompt: Baselines/LEval_config.py, get_sys_prompt (the branch is
//     chosen by task name in the same order: gsm, topic, coursera, codeU,
//     sci_fi, then the generic exam prompt for closed-ended tasks, else the
//     open-ended prompt).
//   - User message and truncation: Baselines/turbo16k-test.py, main (the
//     script that produced the turbo-16k-0613 prediction files L-Eval
//     publishes). Closed-ended ("exam_eval") tasks use
//     "Document is as follows. {} Question: {} \nPlease directly give answer
//     without any additional output or explanation\n Answer: ";
//     open-ended tasks use "Document is as follows. {} Instruction: {} The
//     suggested output length is around N words. Output: " with N =
//     len(out.split()) of the reference (tally/scoring/leval.WordCount);
//     gsm100 and codeU send document + "\n\n" + instruction.
//   - Prompt = system prompt + user message, concatenated exactly as the
//     script saves them in the "prompt" field of its prediction files
//     (save_d['prompt'] = sys_prompt + context). The system prompt is also
//     kept in Metadata["system_prompt"] so a chat backend can split it off.
//   - Truncation "leval": the while loop of turbo16k-test.py main (and of
//     the other Baselines/*-test.py): while the document has more than
//     max_length tokens, keep the first max_length-cnt pieces of
//     document.split(" ") (the last pieces for codeU), cnt += 250.
package leval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"tally/datasets"
	"tally/datasets/jsonl"
	scoreleval "tally/scoring/leval"
)

// Truncation modes for Options.Truncate.
const (
	// TruncateLEval is L-Eval's own loop: cut document.split(" ") to
	// budget-cnt pieces from the right (from the left for codeU), cnt +=
	// 250, until the document fits.
	TruncateLEval = "leval"
	// TruncateHead keeps the head (beginning) of the document: the longest
	// prefix ending at a word boundary that fits the budget.
	TruncateHead = "head"
	// TruncateTail keeps the tail (end) of the document: the longest suffix
	// starting at a word boundary that fits the budget.
	TruncateTail = "tail"
	// TruncateNone never truncates.
	TruncateNone = "none"
)

// Options control how an L-Eval file is loaded.
type Options struct {
	// MaxPromptTokens bounds each prompt (0: no bound). The document gets
	// what the longest of its prompts leaves once the template and
	// instruction are counted, so all questions of a document share one
	// truncated document (and a prefix).
	MaxPromptTokens int
	// DocumentOnly makes MaxPromptTokens bound the document alone, as
	// L-Eval's max_length does (the baselines pass k*1000 - 512 and do not
	// count the instruction): set it to reproduce L-Eval's cut exactly.
	DocumentOnly bool
	// Count counts tokens; nil counts whitespace-separated words
	// (len(strings.Fields(s))).
	Count func(string) int
	// Truncate is TruncateLEval (the default when empty), TruncateHead,
	// TruncateTail or TruncateNone.
	Truncate string
	// SkipBad skips bad documents (malformed lines, missing or mistyped
	// fields, empty documents, instructions/outputs length mismatches,
	// empty references), counting them, instead of failing.
	SkipBad bool
	// Task overrides the task name (default: the file name without
	// .jsonl / .jsonl.gz).
	Task string
}

// Loaded is what Load returns.
type Loaded struct {
	// Samples holds one sample per (document, instruction), in file order.
	Samples []datasets.Sample
	// Documents is the number of documents loaded.
	Documents int
	// Skipped counts the lines skipped with SkipBad; FirstSkip is the
	// error of the first malformed JSON line, or if none, of the first
	// invalid document.
	Skipped   int
	FirstSkip error
}

// Document is one L-Eval line: a long document with its questions.
type Document struct {
	// Input is the long document.
	Input string
	// Instructions are the questions, aligned with Outputs.
	Instructions []string
	// Outputs are the references.
	Outputs []string
	// Source is the document's origin (e.g. "coursera_a").
	Source string
	// Evaluation is the metric family ("exam", "f1", "rouge", "LLM",
	// "human").
	Evaluation string
}

// IsClosedEnded reports whether task is one of L-Eval's closed-ended
// (exam_eval) tasks, per LEval_config.py's datasets_closed_ended.
func IsClosedEnded(task string) bool {
	switch task {
	case "coursera", "quality", "topic_retrieval_longchat", "tpo", "gsm100", "codeU", "sci_fi":
		return true
	}
	return false
}

// TaskName returns the task name for a task file path: its base name
// without .jsonl or .jsonl.gz.
func TaskName(path string) string {
	base := filepath.Base(path)
	base = strings.TrimSuffix(base, ".gz")
	return strings.TrimSuffix(base, ".jsonl")
}

// Load reads an L-Eval task file (LEval-data/*/<task>.jsonl, gzip when it
// ends in .gz) and returns one sample per (document, instruction), in file
// order. IDs are "<task>/<doc>/<question>" and share keys "<task>/<doc>",
// where <doc> is the 0-based line index (stable when lines are skipped)
// and <question> the 0-based instruction index. References are
// [output]; Metadata holds task, source, evaluation, doc_index,
// question_index, dropped_tokens, document_tokens (after truncation),
// system_prompt and, for sci_fi, fact_question.
func Load(path string, opts Options) (Loaded, error) {
	res, err := jsonl.ReadFile(path, opts.SkipBad)
	if err != nil {
		return Loaded{}, fmt.Errorf("load L-Eval: %w", err)
	}
	return fromRows(res, path, opts)
}

// LoadReader is Load on an open reader; name is used in errors and, unless
// opts.Task is set, for the task name.
func LoadReader(r io.Reader, name string, opts Options) (Loaded, error) {
	res, err := jsonl.Read(r, name, opts.SkipBad)
	if err != nil {
		return Loaded{}, fmt.Errorf("load L-Eval: %w", err)
	}
	return fromRows(res, name, opts)
}

func fromRows(res jsonl.Result, name string, opts Options) (Loaded, error) {
	task := opts.Task
	if task == "" {
		task = TaskName(name)
	}
	mode := opts.Truncate
	if mode == "" {
		mode = TruncateLEval
	}
	switch mode {
	case TruncateLEval, TruncateHead, TruncateTail, TruncateNone:
	default:
		return Loaded{}, fmt.Errorf("load L-Eval %s: unknown truncation %q (want leval, head, tail or none)", name, opts.Truncate)
	}
	if opts.MaxPromptTokens < 0 {
		return Loaded{}, fmt.Errorf("load L-Eval %s: negative MaxPromptTokens %d", name, opts.MaxPromptTokens)
	}
	count := opts.Count
	if count == nil {
		count = CountWords
	}
	out := Loaded{Skipped: res.Skipped, FirstSkip: res.FirstSkip}
	b := builder{task: task, sys: SystemPrompt(task), closed: IsClosedEnded(task), count: count, mode: mode, opts: opts}
	for i, row := range res.Rows {
		line := res.Lines[i]
		samples, err := b.document(row, line-1)
		if err != nil {
			err = fmt.Errorf("read %s line %d: %w", name, line, err)
			if !opts.SkipBad {
				return Loaded{}, err
			}
			if out.FirstSkip == nil {
				out.FirstSkip = err
			}
			out.Skipped++
			continue
		}
		out.Documents++
		out.Samples = append(out.Samples, samples...)
	}
	return out, nil
}

// ParseDocument checks one decoded L-Eval line and returns it as a
// Document. Errors name the offending field.
func ParseDocument(row map[string]any) (Document, error) {
	var d Document
	var err error
	if d.Input, err = stringField(row, "input"); err != nil {
		return d, err
	}
	if strings.TrimSpace(d.Input) == "" {
		return d, fmt.Errorf("field %q: empty document", "input")
	}
	if d.Instructions, err = stringList(row, "instructions"); err != nil {
		return d, err
	}
	if d.Outputs, err = stringList(row, "outputs"); err != nil {
		return d, err
	}
	if len(d.Instructions) != len(d.Outputs) {
		return d, fmt.Errorf("field %q: %d outputs for %d instructions", "outputs", len(d.Outputs), len(d.Instructions))
	}
	if len(d.Instructions) == 0 {
		return d, fmt.Errorf("field %q: no instructions", "instructions")
	}
	for i, o := range d.Outputs {
		if strings.TrimSpace(o) == "" {
			return d, fmt.Errorf("field %q: item %d: empty reference", "outputs", i)
		}
	}
	if d.Source, err = stringField(row, "source"); err != nil {
		return d, err
	}
	if d.Evaluation, err = stringField(row, "evaluation"); err != nil {
		return d, err
	}
	return d, nil
}

var errMissing = errors.New("missing")

func stringField(row map[string]any, key string) (string, error) {
	v, ok := row[key]
	if !ok || v == nil {
		return "", fmt.Errorf("field %q: %w", key, errMissing)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("field %q: want a string, got %s", key, typeName(v))
	}
	return s, nil
}

func stringList(row map[string]any, key string) ([]string, error) {
	v, ok := row[key]
	if !ok || v == nil {
		return nil, fmt.Errorf("field %q: %w", key, errMissing)
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("field %q: want a list of strings, got %s", key, typeName(v))
	}
	out := make([]string, len(list))
	for i, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("field %q: item %d: want a string, got %s", key, i, typeName(x))
		}
		out[i] = s
	}
	return out, nil
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	default:
		return "a number"
	}
}

type builder struct {
	task   string
	sys    string
	closed bool
	count  func(string) int
	mode   string
	opts   Options
}

// document builds the samples of one line; docIndex is the 0-based line
// index, which keeps IDs stable when other lines are skipped.
func (b *builder) document(row map[string]any, docIndex int) ([]datasets.Sample, error) {
	d, err := ParseDocument(row)
	if err != nil {
		return nil, err
	}
	doc := d.Input
	docTokens := b.count(doc)
	dropped := 0
	if b.opts.MaxPromptTokens > 0 && b.mode != TruncateNone {
		budget := b.opts.MaxPromptTokens
		if !b.opts.DocumentOnly {
			overhead := 0
			for i, inst := range d.Instructions {
				if n := b.count(b.sys + b.prompt("", inst, d.Outputs[i])); n > overhead {
					overhead = n
				}
			}
			budget -= overhead
			if budget <= 0 {
				return nil, fmt.Errorf("field %q: MaxPromptTokens %d leaves no room for the document (template and instruction take %d tokens)", "instructions", b.opts.MaxPromptTokens, overhead)
			}
		}
		if docTokens > budget {
			doc = Truncate(doc, budget, b.mode, b.task, b.count)
			after := b.count(doc)
			dropped = docTokens - after
			docTokens = after
		}
	}
	share := fmt.Sprintf("%s/%d", b.task, docIndex)
	out := make([]datasets.Sample, len(d.Instructions))
	for i, inst := range d.Instructions {
		ref, err := jsonStringList(d.Outputs[i])
		if err != nil {
			return nil, fmt.Errorf("field %q: item %d: %w", "outputs", i, err)
		}
		md := map[string]any{
			"task":            b.task,
			"source":          d.Source,
			"evaluation":      d.Evaluation,
			"doc_index":       docIndex,
			"question_index":  i,
			"dropped_tokens":  dropped,
			"document_tokens": docTokens,
			"system_prompt":   b.sys,
		}
		if strings.Contains(b.task, "sci_fi") {
			md["fact_question"] = FactQuestion(inst)
		}
		out[i] = datasets.Sample{
			Task:       b.task,
			ID:         share + "/" + strconv.Itoa(i),
			Prompt:     b.sys + b.prompt(doc, inst, d.Outputs[i]),
			References: ref,
			Metadata:   md,
			ShareKey:   share,
		}
	}
	return out, nil
}

// prompt is the user message of turbo16k-test.py main for one question.
func (b *builder) prompt(doc, inst, out string) string {
	return UserMessage(b.task, b.closed, doc, inst, out)
}

// UserMessage returns the user message Baselines/turbo16k-test.py main
// sends for one question: document + "\n\n" + instruction for gsm and
// codeU; the exam template for closed-ended tasks; otherwise the
// open-ended template with the length instruction computed from the
// reference output.
func UserMessage(task string, closed bool, doc, inst, out string) string {
	switch {
	case strings.Contains(task, "gsm") || strings.Contains(task, "codeU"):
		return doc + "\n\n" + inst
	case closed:
		return "Document is as follows. " + doc + " Question: " + inst +
			" \nPlease directly give answer without any additional output or explanation\n Answer: "
	default:
		return "Document is as follows. " + doc + " Instruction: " + inst +
			" The suggested output length is around " + strconv.Itoa(scoreleval.WordCount(out)) + " words. Output: "
	}
}

// SystemPrompt returns Baselines/LEval_config.py get_sys_prompt for a task
// (the branch order of the original: gsm, topic, coursera, codeU, sci_fi,
// the exam prompt for closed-ended tasks, else the open-ended prompt).
func SystemPrompt(task string) string {
	switch {
	case strings.Contains(task, "gsm"):
		return "Given several question answer pairs, you need to follow a similar format to answer the last question. Make sure the response is end with The answer is _ . "
	case strings.Contains(task, "topic"):
		return "Below is a record of our previous conversation on many different topics. You are the ASSISTANT, and I am the USER. At the beginning of each topic, the USER will say 'I would like to discuss the topic of <TOPIC>'. Memorize each <TOPIC>. At the end of the record, I will ask you to retrieve the first/second/third topic names. Now the record start. "
	case strings.Contains(task, "coursera"):
		return "Now you are given a very long document. Please follow the instruction based on this document. For multi-choice questions, there could be a sinlge correct option or multiple correct options. Please only provide the letter corresponding to the answer (like A or AB) when answering. "
	case strings.Contains(task, "codeU"):
		return "Now you are given a code base consisting of a large amount of functions and the corresponding comments. In the end, I will call some functions defined in the code base. Please carefully read these codes and comments and answer the question."
	case strings.Contains(task, "sci_fi"):
		return "Now you are given a scientific fiction. I will ask you some questions and the answer should be \"True\" or \"False\". Notice that you should answer the question based on the evidence in the document instead of your background knowledge."
	case IsClosedEnded(task):
		return "Now you are given a very long document. Please follow the instruction based on this document. For multi-choice questions, there is only a sinlge correct option. Please only provide the letter corresponding to the answer (like A or B) when answering. For other questions, please directly give the concise and accurate answer. "
	default:
		return "Now you are given a very long document. Please follow the instruction after this document. These instructions may include summarizing a document, answering questions based on the document, or writing a required paragraph. "
	}
}

// FactQuestion is the follow-up turn turbo16k-test.py sends for sci_fi to
// test factuality (its answer is appended to the prediction as
// " [fact: ...]").
func FactQuestion(inst string) string {
	return strings.ReplaceAll(inst, "based on the world described in the document.",
		"based on the real-world knowledge and facts up until your last training") +
		"\nPlease directly give answer without any additional output or explanation \nAnswer:"
}

func jsonStringList(s string) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode([]string{s}); err != nil {
		return nil, fmt.Errorf("encode reference: %w", err)
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// CountWords is the default token counter: len(strings.Fields(s)),
// without allocating.
func CountWords(s string) int {
	n, in := 0, false
	for i := 0; i < len(s); {
		c := s[i]
		var sp bool
		if c < utf8.RuneSelf {
			sp = c == ' ' || c >= '\t' && c <= '\r'
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			sp = unicode.IsSpace(r)
			i += size
		}
		if sp {
			in = false
		} else if !in {
			in = true
			n++
		}
	}
	return n
}
