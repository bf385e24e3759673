package drop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Answers is the reference get_answers: the gold answers of a DROP record,
// "answer" first and then each validated answer, each parsed as
// parse_answer does — a non-empty "number" gives (str(number),), else a
// non-empty "spans" gives tuple(spans), else the date gives
// (" ".join([day, month, year]).strip(),) — with exact duplicates dropped,
// first occurrence kept.
//
// "validated_answers" may be column-oriented, as in the Hugging Face
// EleutherAI/drop rows the reference reads ({"number": [...], "date":
// [...], "spans": [...]}, as many answers as "number" has), or a list of
// answer objects, as in AllenAI's drop_dataset_dev.json; the list form is
// read as the Hugging Face conversion flattens it (the reference itself
// would raise TypeError on it).
//
// It fails where the reference raises: missing keys, a column shorter than
// "number", spans or date fields that are not strings. Python's str() is
// reproduced for a non-string "number" (JSON numbers, null → "None",
// booleans → "True"/"False"), and a string "spans" is split into its
// characters as tuple() does; arrays or objects as "number" are refused.
func Answers(doc json.RawMessage) ([][]string, error) {
	var d map[string]json.RawMessage
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("reading DROP record: %w", err)
	}
	first, ok := d["answer"]
	if !ok {
		return nil, errors.New("reading DROP record: no \"answer\" key")
	}
	va, ok := d["validated_answers"]
	if !ok {
		return nil, errors.New("reading DROP record: no \"validated_answers\" key")
	}
	return AnswersOf(first, va)
}

// AnswersOf is Answers of a record whose "answer" and "validated_answers"
// are given (as their JSON): what a loader that has read them calls,
// without writing the record again.
func AnswersOf(answer, validated json.RawMessage) ([][]string, error) {
	more, err := flattenValidated(validated)
	if err != nil {
		return nil, fmt.Errorf("reading DROP validated_answers: %w", err)
	}
	candidates := append([]candidate{{raw: answer}}, more...)
	var out [][]string
	for k, c := range candidates {
		obj := c.obj
		if obj == nil {
			if err := json.Unmarshal(c.raw, &obj); err != nil {
				return nil, fmt.Errorf("parsing DROP answer %d: %w", k, err)
			}
		}
		a, err := parseAnswer(obj)
		if err != nil {
			return nil, fmt.Errorf("parsing DROP answer %d: %w", k, err)
		}
		dup := false
		for _, o := range out {
			if equalStrings(o, a) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, a)
		}
	}
	return out, nil
}

// candidate is one answer object of a record: its JSON (raw), or, for an
// entry of validated answers in the column form, its members (obj).
type candidate struct {
	raw json.RawMessage
	obj map[string]json.RawMessage
}

// flattenValidated is _flatten_validated_answers: the column form becomes
// one answer object per entry of "number" (its members taken from each
// column); the list form is taken as is.
func flattenValidated(raw json.RawMessage) ([]candidate, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, err
		}
		out := make([]candidate, len(list))
		for i, c := range list {
			out[i].raw = c
		}
		return out, nil
	}
	var cols struct {
		Number *[]json.RawMessage `json:"number"`
		Date   *[]json.RawMessage `json:"date"`
		Spans  *[]json.RawMessage `json:"spans"`
	}
	if err := json.Unmarshal(raw, &cols); err != nil {
		return nil, err
	}
	if cols.Number == nil {
		return nil, errors.New("no \"number\" column")
	}
	n := len(*cols.Number)
	if n == 0 {
		return nil, nil
	}
	if cols.Date == nil || len(*cols.Date) < n {
		return nil, errors.New("\"date\" column shorter than \"number\"")
	}
	if cols.Spans == nil || len(*cols.Spans) < n {
		return nil, errors.New("\"spans\" column shorter than \"number\"")
	}
	out := make([]candidate, n)
	for i := range n {
		out[i].obj = map[string]json.RawMessage{
			"number": (*cols.Number)[i],
			"date":   (*cols.Date)[i],
			"spans":  (*cols.Spans)[i],
		}
	}
	return out, nil
}

// parseAnswer is parse_answer, of an answer object's members.
func parseAnswer(a map[string]json.RawMessage) ([]string, error) {
	num, ok := a["number"]
	if !ok {
		return nil, errors.New("no \"number\" key")
	}
	var s string
	if t := bytes.TrimSpace(num); len(t) == 0 || t[0] != '"' || json.Unmarshal(t, &s) != nil || s != "" {
		str, err := pyStr(num)
		if err != nil {
			return nil, fmt.Errorf("number: %w", err)
		}
		return []string{str}, nil
	}
	spansRaw, ok := a["spans"]
	if !ok {
		return nil, errors.New("no \"spans\" key")
	}
	var spans []string
	switch t := bytes.TrimSpace(spansRaw); {
	case len(t) > 0 && t[0] == '"':
		var str string
		if err := json.Unmarshal(t, &str); err != nil {
			return nil, err
		}
		for _, r := range str {
			spans = append(spans, string(r))
		}
	case len(t) > 0 && t[0] == '[':
		if err := json.Unmarshal(t, &spans); err != nil {
			return nil, fmt.Errorf("spans: %w", err)
		}
		if spans == nil {
			spans = []string{}
		}
	default:
		return nil, fmt.Errorf("spans is not a list: %s", t)
	}
	if len(spans) > 0 {
		return spans, nil
	}
	dateRaw, ok := a["date"]
	if !ok {
		return nil, errors.New("no \"date\" key")
	}
	var date map[string]json.RawMessage
	if err := json.Unmarshal(dateRaw, &date); err != nil || date == nil {
		return nil, fmt.Errorf("date is not an object: %s", dateRaw)
	}
	parts := make([]string, 3)
	for i, k := range []string{"day", "month", "year"} {
		v, ok := date[k]
		if !ok {
			return nil, fmt.Errorf("date has no %q", k)
		}
		if err := json.Unmarshal(v, &parts[i]); err != nil || bytes.TrimSpace(v)[0] != '"' {
			return nil, fmt.Errorf("date %s is not a string: %s", k, v)
		}
	}
	return []string{pyStrip(strings.Join(parts, " "))}, nil
}

// pyStr is Python's str() of a JSON scalar as json.loads reads it.
func pyStr(raw json.RawMessage) (string, error) {
	t := string(bytes.TrimSpace(raw))
	switch {
	case t == "":
		return "", errors.New("empty value")
	case t[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	case t == "null":
		return "None", nil
	case t == "true":
		return "True", nil
	case t == "false":
		return "False", nil
	case t[0] == '-' || (t[0] >= '0' && t[0] <= '9'):
		if !strings.ContainsAny(t, ".eE") {
			if t == "-0" {
				return "0", nil
			}
			return t, nil
		}
		f, err := strconv.ParseFloat(t, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
				return "", err
			}
		}
		return pyRepr(f), nil
	}
	return "", fmt.Errorf("unsupported value %s", t)
}

// equalStrings reports whether a and b hold the same strings in order.
func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// AnswerType is the type of a DROP answer object as the benchmark's gold
// types it (drop_eval.py's answer_json_to_strings, allenai/allennlp-reading-
// comprehension, the order parse_answer reads it in): "number" when its
// number is non-empty, else "span" or "spans" (one or several) when its
// spans are non-empty, else "date" — a year alone is a date.
func AnswerType(answer json.RawMessage) (string, error) {
	var a map[string]json.RawMessage
	if err := json.Unmarshal(answer, &a); err != nil {
		return "", fmt.Errorf("parsing DROP answer: %w", err)
	}
	parsed, err := parseAnswer(a)
	if err != nil {
		return "", fmt.Errorf("parsing DROP answer: %w", err)
	}
	var s string
	if t := bytes.TrimSpace(a["number"]); len(t) == 0 || t[0] != '"' || json.Unmarshal(t, &s) != nil || s != "" {
		return "number", nil
	}
	var spans []string
	if json.Unmarshal(a["spans"], &spans) == nil && len(spans) > 0 {
		if len(parsed) > 1 {
			return "spans", nil
		}
		return "span", nil
	}
	var str string
	if json.Unmarshal(a["spans"], &str) == nil && str != "" {
		return "spans", nil
	}
	return "date", nil
}
