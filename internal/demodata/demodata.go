// Package demodata generates the synthetic DROP-style reading questions of
// tally's demo model: short passages about players (points scored, miles
// run, kilos lifted, the year they joined, the team they play for) and one
// question per passage whose answer is an integer, a one- or two-decimal
// number, a date (a year) or a span. The same seed always gives
// the same questions.
//
// Training text is written the way a base model continues a few-shot DROP
// prompt: "Passage: …\nQuestion: …\nAnswer: 7.5\n\nPassage: …", so a model
// trained on it answers, then starts the next passage — the continuation
// that the Open LLM Leaderboard's DROP stop-word finding is about.
package demodata

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Kind is the kind of a question's answer.
type Kind string

// The answer kinds.
const (
	Integer Kind = "integer"
	Decimal Kind = "decimal"
	Date    Kind = "date"
	Span    Kind = "span"
)

// Question is one generated passage, question and gold answer.
type Question struct {
	// ID is "demo-<seed>-<index>".
	ID       string
	Passage  string
	Question string
	// Answer is the gold answer as the model should write it.
	Answer string
	Kind   Kind
	// Month and Year are the parts of a Date answer (the demo's dates are
	// years: Month is empty).
	Month, Year string
}

// Separator joins few-shot items, as in the leaderboard's DROP prompt.
const Separator = "\n\n"

// Prompt is the question in the leaderboard's DROP format, up to and
// including "Answer:".
func (q Question) Prompt() string {
	return "Passage: " + q.Passage + "\nQuestion: " + q.Question + "\nAnswer:"
}

// Solved is the prompt followed by " " and the answer.
func (q Question) Solved() string { return q.Prompt() + " " + q.Answer }

var (
	names = []string{"Tom", "Ann", "Ben", "Eva", "Sam", "Lia", "Max", "Zoe", "Leo", "Mia",
		"Jon", "Amy", "Ted", "Ivy", "Dan", "Kim"}
	teams = []string{"Hawks", "Bears", "Lions", "Wolves", "Eagles", "Sharks", "Tigers", "Owls", "Foxes", "Bulls"}
)

// fact is one sentence of a passage and the question it answers.
type fact struct {
	sentence, question, answer string
	kind                       Kind
	month, year                string
}

// decimal writes a number with one or two decimals whose last digit is not
// zero (so that "7.5" is the only way to write it); two decimals end in 5
// ("12.25"), which keeps the fractions few enough for a tiny model to
// learn to copy them.
func decimal(r *rand.Rand, places int) string {
	whole := r.IntN(30)
	switch places {
	case 1:
		return fmt.Sprintf("%d.%d", whole, 1+r.IntN(9))
	default:
		return fmt.Sprintf("%d.%d5", whole, r.IntN(10))
	}
}

// makeFact draws the sentence of kind k about name. The question repeats
// the sentence's verb, so that reading the passage is a matter of finding
// the sentence and copying what follows the verb.
func makeFact(r *rand.Rand, k int, name string) fact {
	switch k {
	case 0:
		n := fmt.Sprint(1 + r.IntN(40))
		return fact{name + " scored " + n + " points.", name + " scored how many points?", n, Integer, "", ""}
	case 1:
		x := decimal(r, 1)
		return fact{name + " ran " + x + " miles.", name + " ran how many miles?", x, Decimal, "", ""}
	case 2:
		x := decimal(r, 2)
		return fact{name + " lifted " + x + " kilos.", name + " lifted how many kilos?", x, Decimal, "", ""}
	case 3:
		y := fmt.Sprint(1990 + r.IntN(30))
		return fact{name + " joined in " + y + ".", name + " joined in which year?", y, Date, "", y}
	default:
		t := teams[r.IntN(len(teams))]
		return fact{name + " plays for the " + t + ".", name + " plays for which team?", t, Span, "", ""}
	}
}

// Generator draws questions from a seed.
type Generator struct {
	seed uint64
	r    *rand.Rand
	n    int
}

// New returns a generator of the questions of seed.
func New(seed uint64) *Generator {
	return &Generator{seed: seed, r: rand.New(rand.NewPCG(seed, seed^0x5eed))}
}

// Next draws the next question. Each passage holds three sentences about
// three different players, in random order: one number (points scored, an
// integer; miles run, one decimal; or kilos lifted, two decimals), one
// join date and one team. Half the questions ask for the number (a third
// of all answers are decimals), a quarter each for the date and the team.
func (g *Generator) Next() Question {
	r := g.r
	ks := []int{r.IntN(3), 3, 4}
	ns := r.Perm(len(names))[:3]
	fs := make([]fact, 3)
	for j := range fs {
		fs[j] = makeFact(r, ks[j], names[ns[j]])
	}
	var f fact
	switch x := r.IntN(4); {
	case x < 2:
		f = fs[0]
	case x == 2:
		f = fs[1]
	default:
		f = fs[2]
	}
	order := r.Perm(3)
	sent := make([]string, 3)
	for j, o := range order {
		sent[j] = fs[o].sentence
	}
	q := Question{ID: fmt.Sprintf("demo-%d-%04d", g.seed, g.n), Passage: strings.Join(sent, " "),
		Question: f.question, Answer: f.answer, Kind: f.kind, Month: f.month, Year: f.year}
	g.n++
	return q
}

// Generate returns the first n questions of seed.
func Generate(seed uint64, n int) []Question {
	g := New(seed)
	out := make([]Question, n)
	for i := range out {
		out[i] = g.Next()
	}
	return out
}

// Text joins the solved questions as one few-shot stream:
// "Passage: …\nAnswer: X\n\nPassage: …\nAnswer: Y\n\n".
func Text(qs []Question) string {
	var b strings.Builder
	for _, q := range qs {
		b.WriteString(q.Solved())
		b.WriteString(Separator)
	}
	return b.String()
}

// DROPRecord is the question as a Hugging Face EleutherAI/drop row (the
// layout tally's drop loader reads): a number, a date or spans as the
// answer, and no validated answers.
func (q Question) DROPRecord() ([]byte, error) {
	type date struct {
		Day   string `json:"day"`
		Month string `json:"month"`
		Year  string `json:"year"`
	}
	type answer struct {
		Number string   `json:"number"`
		Date   date     `json:"date"`
		Spans  []string `json:"spans"`
	}
	a := answer{Spans: []string{}}
	switch q.Kind {
	case Integer, Decimal:
		a.Number = q.Answer
	case Date:
		a.Date = date{Month: q.Month, Year: q.Year}
	case Span:
		a.Spans = []string{q.Answer}
	}
	rec := struct {
		SectionID        string          `json:"section_id"`
		QueryID          string          `json:"query_id"`
		Passage          string          `json:"passage"`
		Question         string          `json:"question"`
		Answer           answer          `json:"answer"`
		ValidatedAnswers json.RawMessage `json:"validated_answers"`
	}{q.ID, q.ID, q.Passage, q.Question, a, json.RawMessage(`{"number":[],"date":[],"spans":[]}`)}
	b, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("encode demo question %s: %w", q.ID, err)
	}
	return b, nil
}

// FewShot is q's prompt preceded by the solved shots, joined by
// Separator, as the leaderboard's DROP task builds its prompts.
func FewShot(shots []Question, q Question) string {
	parts := make([]string, 0, len(shots)+1)
	for _, s := range shots {
		parts = append(parts, s.Solved())
	}
	return strings.Join(append(parts, q.Prompt()), Separator)
}

// Seeds and sizes of the demo: the training questions come from the
// trainer's own seed (1 by default), the demo task's from TaskSeed and the
// trainer's held-out accuracy from HeldOutSeed.
const (
	TaskSeed      = 2026
	HeldOutSeed   = 2027
	TaskQuestions = 40
	TaskShots     = 2
)
