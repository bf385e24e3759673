package demotrain

import (
	"context"
	"fmt"
	"strings"

	"tally/backends"
	"tally/internal/demodata"
)

// Accuracy is held-out exact-match accuracy, overall and per answer kind.
type Accuracy struct {
	Correct, Total int
	ByKind         map[demodata.Kind][2]int // correct, total
	// Answers are the generated continuations, in question order.
	Answers []string
}

// String formats the accuracy as "0.93 (93/100; decimal 40/42, …)".
func (a Accuracy) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%.3f (%d/%d", float64(a.Correct)/float64(max(1, a.Total)), a.Correct, a.Total)
	for _, k := range []demodata.Kind{demodata.Integer, demodata.Decimal, demodata.Date, demodata.Span} {
		if c, ok := a.ByKind[k]; ok {
			fmt.Fprintf(&b, "; %s %d/%d", k, c[0], c[1])
		}
	}
	b.WriteString(")")
	return b.String()
}

// Evaluate answers each question of qs greedily with be, its prompt
// preceded by shots solved questions (the ones before it in qs, wrapping
// around), and counts the answers that, cut at the first newline, equal
// the gold answer.
func Evaluate(ctx context.Context, be backends.Backend, qs []demodata.Question, shots int) (Accuracy, error) {
	tok := be.Tokenizer()
	reqs := make([]backends.Request, len(qs))
	for i, q := range qs {
		var sh []demodata.Question
		for j := 1; j <= shots; j++ {
			sh = append(sh, qs[(i+len(qs)-j)%len(qs)])
		}
		ids, err := tok.Encode(demodata.FewShot(sh, q), false)
		if err != nil {
			return Accuracy{}, fmt.Errorf("tokenize %s: %w", q.ID, err)
		}
		reqs[i] = backends.Request{Index: i, PromptIDs: ids, MaxTokens: 8, StopHint: []string{"\n"}}
	}
	texts := make([]string, len(qs))
	var failed error
	err := be.Generate(ctx, reqs, func(ev backends.Event) bool {
		texts[ev.Index] += ev.Text
		if ev.Err != nil && failed == nil {
			failed = ev.Err
		}
		return true
	})
	if err == nil {
		err = failed
	}
	if err != nil {
		return Accuracy{}, fmt.Errorf("evaluate demo model: %w", err)
	}
	acc := Accuracy{ByKind: map[demodata.Kind][2]int{}, Answers: texts}
	for i, q := range qs {
		ans, _, _ := strings.Cut(texts[i], "\n")
		ok := strings.TrimSpace(ans) == q.Answer
		c := acc.ByKind[q.Kind]
		c[1]++
		acc.Total++
		if ok {
			c[0]++
			acc.Correct++
		}
		acc.ByKind[q.Kind] = c
	}
	return acc, nil
}
