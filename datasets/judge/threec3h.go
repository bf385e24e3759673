package judge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"tally/datasets"
	"tally/scoring/threec3h"
)

// Entry is one AraGen question joined with a model's answers.
type Entry struct {
	// ID is Meta "SN." as written in the file (e.g. "17"), or the entry's
	// index when it has none.
	ID string
	// Round is Meta "Round": 0 single question; 1 a conversation whose
	// second question the model answered; 2 both questions answered.
	Round int
	// Task is Meta "Task" (e.g. "Question Answering (QA)").
	Task string
	// Category is Meta "Category".
	Category string
	// SubCategory is Meta "Sub-Category".
	SubCategory string
	// Question1, Answer1, Question2 and Answer2 are the Test fields
	// (questions and reference answers; the second pair only for rounds 1
	// and 2).
	Question1, Answer1, Question2, Answer2 string
	// ModelAnswer1 is Model "Answer 1" (for round 1, the answer to
	// Question 2); ModelAnswer2 is Model "Answer 2" (round 2 only). They
	// are kept as generated (e.g. with a trailing <|im_end|>).
	ModelAnswer1, ModelAnswer2 string
}

// aragenEntry is one entry of a task or answers file.
type aragenEntry struct {
	Meta  map[string]json.RawMessage `json:"Meta"`
	Test  map[string]json.RawMessage `json:"Test"`
	Model map[string]json.RawMessage `json:"Model"`
}

// LoadThreeC3H reads AraGen task entries (a JSON array of {Meta, Test},
// e.g. tasks/AraGen-12-2024.json) and a model's answers file (the same
// entries plus Model {"Answer 1", "Answer 2"}, as 3C3H's generation step
// writes under answers/), and joins them by Meta "SN." (by position when
// the entries carry no "SN."). With questionsPath "" the answers file
// alone is read, its Test blocks supplying questions and references.
//
// Each entry must have the fields its round needs as strings: Test
// "Question 1" and "Answer 1", for rounds 1 and 2 also "Question 2" and
// "Answer 2", Model "Answer 1", for round 2 also Model "Answer 2"; the
// question and reference texts must not be blank. A blank model answer is
// kept (ThreeC3HSamples leaves it out, as jury.py skips it). Errors name
// the file, the entry index and the field.
func LoadThreeC3H(questionsPath, answersPath string) ([]Entry, error) {
	answers, err := readAraGen(answersPath)
	if err != nil {
		return nil, err
	}
	tests := answers
	testsPath := answersPath
	if questionsPath != "" {
		if tests, err = readAraGen(questionsPath); err != nil {
			return nil, err
		}
		testsPath = questionsPath
	}
	// Join: answer index for each question index.
	join := make([]int, len(tests))
	if questionsPath == "" {
		for i := range join {
			join[i] = i
		}
	} else if err := joinBySN(tests, answers, join, questionsPath, answersPath); err != nil {
		return nil, err
	}
	entries := make([]Entry, 0, len(tests))
	seen := map[string]int{}
	for i, t := range tests {
		e, err := entryMeta(t, i)
		if err != nil {
			return nil, fmt.Errorf("judge: %s: entry %d: %w", testsPath, i, err)
		}
		if j, dup := seen[e.ID]; dup {
			return nil, fmt.Errorf("judge: %s: entry %d: field \"Meta.SN.\": %s repeats entry %d", testsPath, i, e.ID, j)
		}
		seen[e.ID] = i
		need := []struct {
			name  string
			dst   *string
			round int
		}{
			{"Question 1", &e.Question1, 0}, {"Answer 1", &e.Answer1, 0},
			{"Question 2", &e.Question2, 1}, {"Answer 2", &e.Answer2, 1},
		}
		for _, f := range need {
			if e.Round < f.round {
				continue
			}
			s, err := stringField(t.Test, f.name)
			if err == nil && pyStrip(s) == "" {
				err = fmt.Errorf("blank")
			}
			if err != nil {
				return nil, fmt.Errorf("judge: %s: entry %d: field \"Test.%s\": %w", testsPath, i, f.name, err)
			}
			*f.dst = s
		}
		a := answers[join[i]]
		if a.Model == nil {
			return nil, fmt.Errorf("judge: %s: entry %d: field \"Model\": missing", answersPath, join[i])
		}
		if e.ModelAnswer1, err = stringField(a.Model, "Answer 1"); err != nil {
			return nil, fmt.Errorf("judge: %s: entry %d: field \"Model.Answer 1\": %w", answersPath, join[i], err)
		}
		if e.Round == 2 {
			if e.ModelAnswer2, err = stringField(a.Model, "Answer 2"); err != nil {
				return nil, fmt.Errorf("judge: %s: entry %d: field \"Model.Answer 2\": %w", answersPath, join[i], err)
			}
		}
		if questionsPath != "" && a.Test != nil {
			q, err := stringField(a.Test, "Question 1")
			if err == nil && q != e.Question1 {
				return nil, fmt.Errorf("judge: %s: entry %d: field \"Test.Question 1\": differs from %s entry %d", answersPath, join[i], questionsPath, i)
			}
		}
		entries = append(entries, e)
	}
	return entries, nil
}

// readAraGen decodes a JSON array of AraGen entries.
func readAraGen(path string) ([]aragenEntry, error) {
	r, closeFile, err := openMaybeGzip(path)
	if err != nil {
		return nil, fmt.Errorf("judge: reading AraGen entries: %w", err)
	}
	defer closeFile()
	entries, err := decodeAraGenFrom(r, path)
	if err != nil {
		return nil, fmt.Errorf("judge: %s: %w", path, err)
	}
	return entries, nil
}

func decodeAraGen(data []byte) ([]aragenEntry, error) {
	return decodeAraGenFrom(bufio.NewReader(bytes.NewReader(data)), "entries")
}

// decodeAraGenFrom decodes a JSON array of AraGen entries, an element at
// a time (each at most jsonl.MaxLine long).
func decodeAraGenFrom(r *bufio.Reader, name string) ([]aragenEntry, error) {
	var out []aragenEntry
	err := elements(r, name, func(raw []byte, n int) error {
		i := n - 1
		out = append(out, aragenEntry{})
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return fmt.Errorf("entry %d: decoding the object: %w", i, err)
		}
		for _, f := range []struct {
			name string
			dst  *map[string]json.RawMessage
		}{{"Meta", &out[i].Meta}, {"Test", &out[i].Test}, {"Model", &out[i].Model}} {
			v, ok := obj[f.name]
			if !ok || string(v) == "null" {
				continue
			}
			if err := json.Unmarshal(v, f.dst); err != nil {
				return fmt.Errorf("entry %d: field %q: not an object: %s", i, f.name, abbreviate(v))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// joinBySN fills join[i] with the index of the answer for question i,
// matching Meta "SN." when every entry of both files has one, else by
// position.
func joinBySN(tests, answers []aragenEntry, join []int, qPath, aPath string) error {
	sn := func(e aragenEntry) (string, bool) {
		v, ok := e.Meta["SN."]
		if !ok || string(v) == "null" {
			return "", false
		}
		return string(bytes.TrimSpace(v)), true
	}
	all := true
	for _, set := range [][]aragenEntry{tests, answers} {
		for _, e := range set {
			if _, ok := sn(e); !ok {
				all = false
			}
		}
	}
	if !all {
		if len(tests) != len(answers) {
			return fmt.Errorf("judge: %s has %d entries and %s %d; without Meta \"SN.\" they are joined by position", qPath, len(tests), aPath, len(answers))
		}
		for i := range join {
			join[i] = i
		}
		return nil
	}
	byID := map[string]int{}
	for j, a := range answers {
		id, _ := sn(a)
		if k, dup := byID[id]; dup {
			return fmt.Errorf("judge: %s: entry %d: field \"Meta.SN.\": %s repeats entry %d", aPath, j, id, k)
		}
		byID[id] = j
	}
	for i, t := range tests {
		id, _ := sn(t)
		j, ok := byID[id]
		if !ok {
			return fmt.Errorf("judge: %s: entry %d: field \"Meta.SN.\": no answer with SN. %s in %s", qPath, i, id, aPath)
		}
		join[i] = j
	}
	if len(answers) != len(tests) {
		return fmt.Errorf("judge: %s has %d entries and %s %d", qPath, len(tests), aPath, len(answers))
	}
	return nil
}

// entryMeta reads ID, Round, Task and Category from Meta.
func entryMeta(t aragenEntry, index int) (Entry, error) {
	e := Entry{ID: strconv.Itoa(index)}
	if v, ok := t.Meta["SN."]; ok && string(v) != "null" {
		var s string
		var n json.Number
		switch {
		case json.Unmarshal(v, &n) == nil:
			e.ID = n.String()
		case json.Unmarshal(v, &s) == nil && s != "":
			e.ID = s
		default:
			return Entry{}, fmt.Errorf("field \"Meta.SN.\": not a number or string: %s", abbreviate(v))
		}
	}
	if v, ok := t.Meta["Round"]; ok && string(v) != "null" {
		var r float64
		if err := json.Unmarshal(v, &r); err != nil || r != 0 && r != 1 && r != 2 {
			return Entry{}, fmt.Errorf("field \"Meta.Round\": %s, want 0, 1 or 2", abbreviate(v))
		}
		e.Round = int(r)
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"Task", &e.Task}, {"Category", &e.Category}, {"Sub-Category", &e.SubCategory}} {
		if v, ok := t.Meta[f.name]; ok && string(v) != "null" {
			if err := json.Unmarshal(v, f.dst); err != nil {
				return Entry{}, fmt.Errorf("field \"Meta.%s\": not a string: %s", f.name, abbreviate(v))
			}
		}
	}
	return e, nil
}

// stringField reads a required string field.
func stringField(obj map[string]json.RawMessage, name string) (string, error) {
	v, ok := obj[name]
	if !ok || string(v) == "null" {
		return "", fmt.Errorf("missing or null")
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", fmt.Errorf("not a string: %s", abbreviate(v))
	}
	return s, nil
}

// pyStripSet is the characters Python's str.strip() removes
// (str.isspace()).
const pyStripSet = "\t\n\v\f\r\x1c\x1d\x1e\x1f \u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"

// pyStrip is Python's str.strip().
func pyStrip(s string) string { return strings.Trim(s, pyStripSet) }

// The round-specific texts jury.py appends to the system prompt
// (r0_ass_sys_prompt, r1_ass_sys_prompt, r2_ass_sys_prompt in
// inceptionai-abudhabi/3C3H commit
// 1514b2a5b0f488cfb8cb4ba33adaca0e9415dadd, pipeline/jury.py).
const (
	roundSystem0 = "\nBelow you will receive one Question, one Answer as ground truth, and one Answer as model answer. You should follow the instructions above in evaluating the model answer.\n"
	roundSystem1 = "\nBelow, you will receive a conversation flow between an assistant and a user, generally composed of 2 questions or more. Your goal is to evaluate the model's answer based on the ground truth answer.\n"
	roundSystem2 = "\nBelow, you will receive a conversation flow between an assistant and a user, generally composed of 2 questions or more. Your goal is to evaluate the model's first answer with respect to the first ground truth answer and the model's second answer with respect to the second ground truth answer based on the ground truth answers.\n"
)

// The user prompts of jury.py main() for rounds 0, 1 and 2 (same commit),
// with the 16-space indentation of its f-strings, which the judges
// received. %[n]s are the stripped fields in the order of userArgs.
const (
	indent   = "                "
	roundOne = "\n" + indent + "### Question:\n" + indent + "%[1]s\n\n" +
		indent + "### Correct Answer:\n" + indent + "%[2]s\n\n" +
		indent + "### Model's Answer:\n" + indent + "%[3]s\n\n" +
		indent + "Please evaluate the model's answer based on the criteria mentioned.\n" + indent
	roundTwo = "\n" + indent + "### Question 1:\n" + indent + "%[1]s\n" +
		indent + "### Answer to Question 1:\n" + indent + "%[2]s\n" +
		indent + "### Question 2:\n" + indent + "%[4]s\n\n" +
		indent + "### Correct Answer to Question 2:\n" + indent + "%[5]s\n\n" +
		indent + "### Model's Answer to Question 2:\n" + indent + "%[3]s\n\n" +
		indent + "Please evaluate the model's answer based on the criteria mentioned.\n" + indent
	roundThree = "\n" + indent + "### Question 1:\n" + indent + "%[1]s\n" +
		indent + "### Correct Answer 1 to Question 1:\n" + indent + "%[2]s\n" +
		indent + "### Model's Answer 1 to Question 1:\n" + indent + "%[3]s\n\n" +
		indent + "### Question 2:\n" + indent + "%[4]s\n" +
		indent + "### Correct Answer 2 to Question 2:\n" + indent + "%[5]s\n" +
		indent + "### Model's Answer 2 to Question 2:\n" + indent + "%[6]s\n\n" +
		indent + "Please evaluate the model's answers based on the criteria mentioned above and remember to use both (<results1>, </results1>) and (<results2>, </results2>) in your response for each answer evaluation.\n" + indent
)

// roundTexts returns the round's system text and user prompt format.
func roundTexts(round int) (system, user string, nargs int) {
	switch round {
	case 0:
		return roundSystem0, roundOne, 3
	case 1:
		return roundSystem1, roundTwo, 5
	}
	return roundSystem2, roundThree, 6
}

// Missing names the first field jury.py needs for e's round that is blank
// after Python's strip() (e.g. "Model.Answer 1"), or "Meta.Round" for a
// round other than 0, 1 and 2 (jury.py skips both); it returns "" when e
// can be judged.
func (e Entry) Missing() string {
	if e.Round < 0 || e.Round > 2 {
		return "Meta.Round"
	}
	fields := []struct {
		name  string
		v     string
		round int
	}{
		{"Test.Question 1", e.Question1, 0}, {"Test.Answer 1", e.Answer1, 0},
		{"Test.Question 2", e.Question2, 1}, {"Test.Answer 2", e.Answer2, 1},
		{"Model.Answer 1", e.ModelAnswer1, 0}, {"Model.Answer 2", e.ModelAnswer2, 2},
	}
	for _, f := range fields {
		if e.Round >= f.round && pyStrip(f.v) == "" {
			return f.name
		}
	}
	return ""
}

// ThreeC3HReference is the References of a 3C3H judge sample.
type ThreeC3HReference struct {
	// Round is the entry's round (0, 1 or 2); round 2 is scored from two
	// result blocks.
	Round int `json:"round"`
	// Task is Meta "Task", the key of AraGen's per-task scores.
	Task string `json:"task,omitempty"`
}

// ThreeC3HSamples makes one judge sample per entry, assembled as 3C3H's
// pipeline/jury.py (commit 1514b2a5b0f488cfb8cb4ba33adaca0e9415dadd)
// does: the system prompt (the text of sp1.md or sp2.md, passed in),
// then the round's instruction, then the round's user prompt with the
// stripped question(s), reference answer(s) and model answer(s). The
// system and user turns are flattened by plain concatenation (the round
// text ends and the user prompt starts with a newline, leaving a blank
// line between them). jury.py's in-code system prompt starts with a
// newline that the .md files lack; it is not added.
//
// ID is Entry.ID (the index when empty), References a ThreeC3HReference,
// Metadata "task", "category", "sub_category", "round" and "system_prompt"
// (the system prompt and round text, jury.py's system message, which a chat
// run sends as such). Entries that
// jury.py skips (Missing() != "": a blank model answer) are left out, and
// AraGen counts them as failed entries.
func ThreeC3HSamples(task string, entries []Entry, systemPrompt string) []datasets.Sample {
	out := make([]datasets.Sample, 0, len(entries))
	for i, e := range entries {
		if e.Missing() != "" {
			continue
		}
		id := e.ID
		if id == "" {
			id = strconv.Itoa(i)
		}
		args := []any{pyStrip(e.Question1), pyStrip(e.Answer1), pyStrip(e.ModelAnswer1),
			pyStrip(e.Question2), pyStrip(e.Answer2), pyStrip(e.ModelAnswer2)}
		system, format, n := roundTexts(e.Round)
		user := fmt.Sprintf(format, args[:n]...)
		ref, err := json.Marshal(ThreeC3HReference{Round: e.Round, Task: e.Task})
		if err != nil { // cannot happen
			ref = []byte("null")
		}
		out = append(out, datasets.Sample{
			Task:       task,
			ID:         id,
			Prompt:     systemPrompt + system + user,
			References: ref,
			Metadata: map[string]any{
				"task": e.Task, "category": e.Category, "sub_category": e.SubCategory, "round": e.Round,
				"system_prompt": systemPrompt + system,
			},
		})
	}
	return out
}

// ScoreThreeC3H scores one judge output as jury.py does; it is
// threec3h.ScoreJudgeOutput, where the 3c3h metric is defined.
func ScoreThreeC3H(judgeOutput string, round int) (map[string]float64, error) {
	return threec3h.ScoreJudgeOutput(judgeOutput, round)
}
