package demodata

import (
	"reflect"
	"strings"
	"testing"

	"tally/scoring/drop"
)

func TestGenerate(t *testing.T) {
	a, b := Generate(3, 200), Generate(3, 200)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different questions")
	}
	if reflect.DeepEqual(a[:10], Generate(4, 10)) {
		t.Fatal("different seeds, same questions")
	}
	kinds := map[Kind]int{}
	for _, q := range a {
		kinds[q.Kind]++
		if !strings.Contains(q.Passage, q.Answer) || strings.Count(q.Passage, ". ") != 2 {
			t.Errorf("%s: answer %q not in passage %q", q.ID, q.Answer, q.Passage)
		}
		if q.Kind == Decimal && (strings.HasSuffix(q.Answer, "0") || !strings.Contains(q.Answer, ".")) {
			t.Errorf("%s: decimal answer %q", q.ID, q.Answer)
		}
	}
	for _, k := range []Kind{Integer, Decimal, Date, Span} {
		if kinds[k] < 20 {
			t.Errorf("%d %s answers in 200", kinds[k], k)
		}
	}
}

// TestDROPRecord checks that the DROP scorer's get_answers reads each
// kind's record back as the answer the model is trained to write.
func TestDROPRecord(t *testing.T) {
	seen := map[Kind]bool{}
	for _, q := range Generate(5, 60) {
		rec, err := q.DROPRecord()
		if err != nil {
			t.Fatal(err)
		}
		answers, err := drop.Answers(rec)
		if err != nil {
			t.Fatal(err)
		}
		if len(answers) != 1 || len(answers[0]) != 1 || answers[0][0] != q.Answer {
			t.Errorf("%s (%s): answers %q, want [[%q]]", q.ID, q.Kind, answers, q.Answer)
		}
		em, f1 := drop.Score(" "+q.Answer, answers)
		if em != 1 || f1 != 1 {
			t.Errorf("%s: gold answer scores %v/%v", q.ID, em, f1)
		}
		seen[q.Kind] = true
	}
	if len(seen) != 4 {
		t.Errorf("kinds seen: %v", seen)
	}
}

func TestFewShot(t *testing.T) {
	qs := Generate(1, 3)
	got := FewShot(qs[:2], qs[2])
	want := qs[0].Solved() + "\n\n" + qs[1].Solved() + "\n\n" + "Passage: " + qs[2].Passage + "\nQuestion: " + qs[2].Question + "\nAnswer:"
	if got != want {
		t.Errorf("FewShot:\n%q\nwant\n%q", got, want)
	}
	if !strings.HasSuffix(Text(qs[:1]), " "+qs[0].Answer+"\n\n") {
		t.Errorf("Text: %q", Text(qs[:1]))
	}
}
