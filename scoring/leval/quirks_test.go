package leval

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

func TestProcessOutputMCQuirks(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		multi bool
		want  string
	}{
		{"blank gives None", " \n", false, "None"},
		{"substring of ABCD returned as is", "BC", false, "BC"},
		{"first A-D anywhere wins: Answer starts with A", "Answer: C", false, "A"},
		{"lowercase letters are not answers", "c", false, "A"},
		{"no A-D falls through to the default A", "none of them", false, "A"},
		{"coursera keeps a leading run", "DBA", true, "ABD"},
		{"coursera: one leading letter then option-like capitals", "A. first B) second", true, "AB"},
		{"coursera: capitals need a following space, dot or paren", "(A) and (C)", true, "AC"},
		{"coursera: text after Question is ignored", "D Question A. B.", true, "D"},
		{"coursera: last resort is the first A-D run, unsorted", "xxBAyy", true, "BA"},
		{"coursera: a capital before a space is an option", "xxBA yy", true, "A"},
		{"coursera: Answer: BA gives the A of Answer", "Answer: BA", true, "A"},
		{"coursera: Unicode space counts as whitespace", "Options: A\u2003and C\u3000", true, "AC"},
	}
	for _, tt := range tests {
		if got := ProcessOutputMC(tt.in, tt.multi); got != tt.want {
			t.Errorf("%s: ProcessOutputMC(%q, %v) = %q, want %q", tt.name, tt.in, tt.multi, got, tt.want)
		}
	}
}

func TestProcessGTMC(t *testing.T) {
	tests := []struct {
		in, want string
		err      bool
	}{
		{"ABD", "ABD", false},
		{"A,B and C", "AB", false}, // only the first field counts
		{"E", "A", false},          // no letter: random guess A
		{"  ", "", true},           // the reference raises IndexError
	}
	for _, tt := range tests {
		got, err := ProcessGTMC(tt.in)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("ProcessGTMC(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestProcessMathQuirks(t *testing.T) {
	tests := []struct{ in, want string }{
		{"The answer is 18.", "18"},
		{"The answer is  5 The answer is 7", "7"}, // \S+ must follow one space
		{"x 1,234.5 y", "1234"},                   // digits up to the first dot
		{"So 3 + 4 = 7\n\nThe end 9", "7"},        // only text before the blank line
		{"The answer is $1,000.", "1000"},
		{"-5", "5"},               // signs are dropped
		{"value ² then", "²"},     // str.isdigit includes superscripts
		{"٣٤ apples", "٣٤"},       // and other scripts' digits
		{"a 5\nb 6", "6"},         // words are split on spaces only: "5\nb" and "6"
		{"no digits here", ""},    // empty
		{"1. 2. 3", "3"},          // last word with a digit
		{"The answer is abc", ""}, // a match without digits gives ""
	}
	for _, tt := range tests {
		if got := ProcessMath(tt.in); got != tt.want {
			t.Errorf("ProcessMath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestProcessCodeQuirks(t *testing.T) {
	if got := ProcessGTCode("[1, 2.05, 'x'] [3]"); got != "[1 25 x][3]" {
		t.Errorf("ProcessGTCode = %q", got)
	}
	tests := []struct{ out, gt, want string }{
		{"The output will be [1, 2, 3]", "[1, 2, 3]", "The output [1 2 3]"}, // re.split collapses the gap
		{"It is a list: 1 2 3 4 5 6 7", "7", "4 5 6 7"},                     // "is" deleted inside "list"
		{"the final output is 5 and more words here", "5", " 5 and more"},
		{"the final output A the final output B C", "B", " B C"},
	}
	for _, tt := range tests {
		if got := ProcessOutputCode(tt.out, tt.gt); got != tt.want {
			t.Errorf("ProcessOutputCode(%q, %q) = %q, want %q", tt.out, tt.gt, got, tt.want)
		}
	}
}

func TestJudgeQuirks(t *testing.T) {
	l, f, err := ProcessGTJudge("True [fact: False]")
	if err != nil || l != "true" || f != "false" {
		t.Errorf("ProcessGTJudge = %q %q %v", l, f, err)
	}
	// "untrue" contains "true"; the fact part has neither word.
	l, f, err = ProcessOutputJudge("untrue [fact: nope]")
	if err != nil || l != "true" || f != "<error>" {
		t.Errorf("ProcessOutputJudge = %q %q %v", l, f, err)
	}
	if _, _, err := ProcessOutputJudge("True"); err == nil {
		t.Error("ProcessOutputJudge without [fact: should fail as the reference does")
	}
}

func TestExactMatchQuirks(t *testing.T) {
	tests := []struct {
		name     string
		pred, gt string
		want     float64
	}{
		{"equal letters", "AB", "AB", 1},
		{"subset gets partial credit", "AB", "ABC", 0.25},
		{"empty prediction is a subset", "", "A", 0.25},
		{"wrong letter", "D", "B", 0},
		{"None is not a subset", "None", "A", 0},
		{"em normalisation keeps case: The stays", "The A", "A", 0},
		{"numbers compare as floats", "3", "3.0", 1},
		{"nan never equals nan", "nan", "nan", 0},
		{"Python float accepts underscores", " 1_000 ", "1000", 1},
		{"Python float accepts other digits", "١٢", "12", 1},
		{"hex is not a float: substring test", "0x10", "16", 0},
		{"substring test ignores case and spaces", "Foo Bar", "foobar", 1},
		{"empty ground truth counts as multiple choice", "x", "", 0},
	}
	for _, tt := range tests {
		if got := ExactMatch(tt.pred, tt.gt); got != tt.want {
			t.Errorf("%s: ExactMatch(%q, %q) = %v, want %v", tt.name, tt.pred, tt.gt, got, tt.want)
		}
	}
}

func TestF1AndNormalise(t *testing.T) {
	tests := []struct {
		pred, gt string
		want     float64
	}{
		{"The cat sat", "a cat sat", 1},
		{"x x x", "x", 0.5},
		{"", "x", 0},
		{"the_cat", "thecat", 1}, // underscore is punctuation
		{"naïve café", "naive cafe", 0},
	}
	for _, tt := range tests {
		if got := F1(tt.pred, tt.gt); got != tt.want {
			t.Errorf("F1(%q, %q) = %v, want %v", tt.pred, tt.gt, got, tt.want)
		}
	}
	if got := NormalizeAnswerF1("ΟΔΟΣ Σ"); got != "οδος σ" { // final sigma, lone sigma
		t.Errorf("NormalizeAnswerF1 = %q", got)
	}
	if got := NormalizeAnswerEM("théa a the An"); got != "théa An" {
		t.Errorf("NormalizeAnswerEM = %q", got)
	}
}

func TestWordCount(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0}, {"one two  three", 3}, {"a\u00a0b\u3000c\u200bd", 3}, {"x\x1cy\x1fz", 3},
	}
	for _, tt := range tests {
		if got := WordCount(tt.in); got != tt.want {
			t.Errorf("WordCount(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestPyFloat(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"1", 1, true}, {" -2.5e3 ", -2500, true}, {".5", 0.5, true}, {"5.", 5, true}, {"1e", 0, false},
		{"1_0", 10, true}, {"1__0", 0, false}, {"_1", 0, false}, {"1_", 0, false}, {"1_.5", 0, false},
		{"Infinity", math.Inf(1), true}, {"-inf", math.Inf(-1), true}, {"0x1p3", 0, false}, {"", 0, false},
		{"1e400", math.Inf(1), true}, {"²", 0, false}, {"\u00a07\u2003", 7, true},
	}
	for _, tt := range tests {
		got, ok := pyFloat(tt.in)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("pyFloat(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	if v, ok := pyFloat("nan"); !ok || !math.IsNaN(v) {
		t.Errorf("pyFloat(nan) = %v, %v", v, ok)
	}
}

func TestPyRound(t *testing.T) {
	tests := []struct{ in, want float64 }{
		{79.33333333333333, 79.3333}, {1.03125, 1.0312}, {1.03135, 1.0313} /* binary value is below the tie */, {2.5, 2.5}, {0.00005, 0.0001},
	}
	for _, tt := range tests {
		if got := pyRound(tt.in, 4); got != tt.want {
			t.Errorf("pyRound(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestScoreItemErrors(t *testing.T) {
	if _, err := ScoreItem("nope", "a", "b"); err == nil {
		t.Error("unknown task accepted")
	}
	if _, err := ScoreItem("quality", "A", " "); err == nil {
		t.Error("blank multiple-choice ground truth accepted")
	}
	if _, err := ScoreItem("sci_fi", "True", "True [fact: True]"); err == nil {
		t.Error("sci_fi prediction without [fact: accepted")
	}
	if _, err := Aggregate("quality", nil); err == nil {
		t.Error("empty aggregate accepted")
	}
}

func TestTasks(t *testing.T) {
	ts := Tasks()
	if len(ts) != 20 {
		t.Fatalf("Tasks() has %d tasks, want 20", len(ts))
	}
	seen := map[string]bool{}
	for _, ti := range ts {
		if seen[ti.Name] {
			t.Errorf("duplicate task %s", ti.Name)
		}
		seen[ti.Name] = true
		if _, err := ScoreItem(ti.Name, "A [fact: true]", "A [fact: true]"); err != nil {
			t.Errorf("ScoreItem(%s) on a trivial item: %v", ti.Name, err)
		}
	}
}

func TestLineMetric(t *testing.T) {
	ms := LineMetrics()
	if len(ms) != 1 || ms[0].Name != "leval" || ms[0].Doc == "" {
		t.Fatalf("LineMetrics() = %+v", ms)
	}
	m := ms[0]
	out, err := m.Score(json.RawMessage(`{"task":"coursera","prediction":"AB","reference":"ABC"}`))
	if err != nil {
		t.Fatalf("Score: %v", err)
	}
	b, _ := json.Marshal(out)
	if !strings.Contains(string(b), `"score":0.25`) || !strings.Contains(string(b), `"reference":"ABC"`) {
		t.Errorf("Score output %s", b)
	}
	if _, err := m.Score(json.RawMessage(`{"task":"coursera"}`)); err == nil {
		t.Error("line without prediction accepted")
	}
	agg, err := m.Aggregate([]json.RawMessage{
		json.RawMessage(`{"task":"quality","prediction":"A","reference":"A"}`),
		json.RawMessage(`{"task":"quality","prediction":"B","reference":"A"}`),
	})
	if err != nil {
		t.Fatalf("Aggregate: %v", err)
	}
	if got := agg.(map[string]float64)["exact_match"]; got != 50 {
		t.Errorf("aggregate exact_match = %v, want 50", got)
	}
	if _, err := m.Aggregate([]json.RawMessage{
		json.RawMessage(`{"task":"quality","prediction":"A","reference":"A"}`),
		json.RawMessage(`{"task":"tpo","prediction":"A","reference":"A"}`),
	}); err == nil {
		t.Error("mixed-task aggregate accepted")
	}
}

func FuzzProcessOutputMC(f *testing.F) {
	for _, s := range []string{"", "A", "Answer: BA", "(A) and (C)", "xxBA yy", "D Question A.", "\u00a0A\u2003", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, multi := range []bool{false, true} {
			got := ProcessOutputMC(s, multi)
			if got == "" {
				t.Fatalf("ProcessOutputMC(%q, %v) is empty", s, multi)
			}
		}
		if _, err := ProcessGTMC(s); err != nil && len(pySplit(s)) > 0 {
			t.Fatalf("ProcessGTMC(%q): %v", s, err)
		}
	})
}

func FuzzProcessors(f *testing.F) {
	for _, s := range []string{"The answer is 18.", "x 1,234.5\n\ny", "True [fact: False]", "[1, 2.0]", "ΟΔΟΣ İ", "\xff\xfe", "the final output"} {
		f.Add(s, "1 2")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		_ = ProcessMath(a)
		_ = ProcessGTCode(a)
		_ = ProcessOutputCode(a, b)
		_, _, _ = ProcessGTJudge(a)
		_, _, _ = ProcessOutputJudge(a)
		if s := ExactMatch(a, b); s != 0 && s != 0.25 && s != 1 {
			t.Fatalf("ExactMatch(%q, %q) = %v", a, b, s)
		}
		if s := F1(a, b); s < 0 || s > 1 {
			t.Fatalf("F1(%q, %q) = %v", a, b, s)
		}
		if n := NormalizeAnswerF1(a); strings.Contains(" "+n+" ", " the ") {
			t.Fatalf("NormalizeAnswerF1(%q) = %q keeps an article", a, n)
		}
		_ = WordCount(a)
		_, _ = pyFloat(a)
	})
}

func benchItems(b *testing.B) (tasks, preds, refs []string) {
	for _, f := range []struct{ file, task string }{
		{"data/leval/Predictions/exam_eval/turbo-16k-0613/coursera.pred.jsonl", "coursera"},
		{"data/leval/Predictions/exam_eval/turbo-16k-0613/quality.pred.jsonl", "quality"},
		{"data/leval/Predictions/exam_eval/turbo-16k-0613/tpo.pred.jsonl", "tpo"},
		{"data/leval/Predictions/exam_eval/turbo-16k-0613/codeU.pred.jsonl", "codeU"},
		{"data/leval/Predictions/exam_eval/turbo-16k-0613/topic_retrieval_longchat.pred.jsonl", "topic_retrieval_longchat"},
		{"data/leval/Predictions/ngram_eval/turbo-16k-0613/financial_qa.pred.jsonl", "financial_qa"},
		{"data/leval/Predictions/ngram_eval/turbo-16k-0613/scientific_qa.pred.jsonl", "scientific_qa"},
	} {
		rows, _ := loadPredFile(b, filepath.ToSlash(f.file))
		for _, r := range rows {
			tasks = append(tasks, f.task)
			preds = append(preds, r.Pred)
			refs = append(refs, r.GT)
		}
	}
	return
}

// BenchmarkScoreItem scores the 1095 exam and F1 questions of the shared
// turbo-16k files per iteration; samples/s is reported.
func BenchmarkScoreItem(b *testing.B) {
	tasks, preds, refs := benchItems(b)
	b.ResetTimer()
	for b.Loop() {
		for i := range tasks {
			if _, err := ScoreItem(tasks[i], preds[i], refs[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(len(tasks))*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

// BenchmarkScoreItemByTask scores the shared turbo-16k questions of one
// task per iteration.
func BenchmarkScoreItemByTask(b *testing.B) {
	tasks, preds, refs := benchItems(b)
	for _, task := range []string{"coursera", "quality", "tpo", "codeU", "topic_retrieval_longchat", "financial_qa", "scientific_qa"} {
		b.Run(task, func(b *testing.B) {
			var idx []int
			for i, t := range tasks {
				if t == task {
					idx = append(idx, i)
				}
			}
			for b.Loop() {
				for _, i := range idx {
					if _, err := ScoreItem(tasks[i], preds[i], refs[i]); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(len(idx))*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}
