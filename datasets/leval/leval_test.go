package leval

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"tally/internal/sharedtest"
	"testing"

	"tally/datasets"
)

// sharedData returns ../shared/data/<rel> next to the module root; a
// missing file fails the test.
func sharedData(t testing.TB, rel string) string {
	t.Helper()
	return sharedtest.Path(t, "data", rel)
}

func taskPath(t testing.TB, task string) string {
	kind := "Open-ended-tasks"
	if IsClosedEnded(task) {
		kind = "Closed-ended-tasks"
	}
	return sharedData(t, filepath.Join("leval", "LEval-data", kind, task+".jsonl"))
}

var realFiles = []struct {
	task      string
	docs, qs  int
	evaluated map[string]int // questions per evaluation value
}{
	{"coursera", 15, 172, map[string]int{"exam": 172}},
	{"quality", 15, 202, map[string]int{"exam": 202}},
	{"tpo", 15, 269, map[string]int{"exam": 269}},
	{"sci_fi", 7, 64, map[string]int{"exam": 64}},
	{"financial_qa", 8, 68, map[string]int{"f1": 52, "LLM": 8, "human": 8}},
	{"scientific_qa", 23, 184, nil},
	{"news_summ", 12, 12, map[string]int{"rouge": 11, "LLM": 1}},
}

func TestRealFiles(t *testing.T) {
	for _, tc := range realFiles {
		t.Run(tc.task, func(t *testing.T) {
			got, err := Load(taskPath(t, tc.task), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Documents != tc.docs || len(got.Samples) != tc.qs || got.Skipped != 0 {
				t.Fatalf("docs %d samples %d skipped %d, want %d %d 0", got.Documents, len(got.Samples), got.Skipped, tc.docs, tc.qs)
			}
			ids := map[string]bool{}
			ev := map[string]int{}
			for _, s := range got.Samples {
				if s.Task != tc.task || ids[s.ID] {
					t.Fatalf("sample %s: task %q or duplicate id", s.ID, s.Task)
				}
				ids[s.ID] = true
				var refs []string
				if err := json.Unmarshal(s.References, &refs); err != nil || len(refs) != 1 || refs[0] == "" {
					t.Fatalf("sample %s: references %s: %v", s.ID, s.References, err)
				}
				if !strings.HasPrefix(s.ID, s.ShareKey+"/") {
					t.Fatalf("id %s not under share key %s", s.ID, s.ShareKey)
				}
				if s.Metadata["dropped_tokens"] != 0 {
					t.Fatalf("sample %s dropped tokens without a limit", s.ID)
				}
				ev[s.Metadata["evaluation"].(string)]++
			}
			if tc.evaluated != nil && fmt.Sprint(ev) != fmt.Sprint(tc.evaluated) {
				t.Fatalf("evaluation counts %v, want %v", ev, tc.evaluated)
			}
		})
	}
}

// TestGoldenPrompts checks hand-written prompts, one per branch of
// get_sys_prompt and of turbo16k-test.py's message building.
func TestGoldenPrompts(t *testing.T) {
	line := func(ins, outs string) string {
		return `{"input": "Doc text {x}.", "instructions": [` + ins + `], "outputs": [` + outs + `], "source": "s", "evaluation": "e"}`
	}
	tests := []struct {
		task, in, want string
	}{
		{"coursera", line(`"Q1?"`, `"AB"`),
			"Now you are given a very long document. Please follow the instruction based on this document. For multi-choice questions, there could be a sinlge correct option or multiple correct options. Please only provide the letter corresponding to the answer (like A or AB) when answering. " +
				"Document is as follows. Doc text {x}. Question: Q1? \nPlease directly give answer without any additional output or explanation\n Answer: "},
		{"quality", line(`"Q2?"`, `"B"`),
			"Now you are given a very long document. Please follow the instruction based on this document. For multi-choice questions, there is only a sinlge correct option. Please only provide the letter corresponding to the answer (like A or B) when answering. For other questions, please directly give the concise and accurate answer. " +
				"Document is as follows. Doc text {x}. Question: Q2? \nPlease directly give answer without any additional output or explanation\n Answer: "},
		{"sci_fi", line(`"Is it so?"`, `"True [fact: False]"`),
			"Now you are given a scientific fiction. I will ask you some questions and the answer should be \"True\" or \"False\". Notice that you should answer the question based on the evidence in the document instead of your background knowledge." +
				"Document is as follows. Doc text {x}. Question: Is it so? \nPlease directly give answer without any additional output or explanation\n Answer: "},
		{"financial_qa", line(`"Why?"`, `"Because  of\tthe\nrates."`),
			"Now you are given a very long document. Please follow the instruction after this document. These instructions may include summarizing a document, answering questions based on the document, or writing a required paragraph. " +
				"Document is as follows. Doc text {x}. Instruction: Why? The suggested output length is around 4 words. Output: "},
		{"gsm100", line(`"Q: 1+1?"`, `"2"`),
			"Given several question answer pairs, you need to follow a similar format to answer the last question. Make sure the response is end with The answer is _ . " +
				"Doc text {x}.\n\nQ: 1+1?"},
		{"codeU", line(`"What is printed?"`, `"3"`),
			"Now you are given a code base consisting of a large amount of functions and the corresponding comments. In the end, I will call some functions defined in the code base. Please carefully read these codes and comments and answer the question." +
				"Doc text {x}.\n\nWhat is printed?"},
		{"topic_retrieval_longchat", line(`"First topic?"`, `"cats"`),
			"Below is a record of our previous conversation on many different topics. You are the ASSISTANT, and I am the USER. At the beginning of each topic, the USER will say 'I would like to discuss the topic of <TOPIC>'. Memorize each <TOPIC>. At the end of the record, I will ask you to retrieve the first/second/third topic names. Now the record start. " +
				"Document is as follows. Doc text {x}. Question: First topic? \nPlease directly give answer without any additional output or explanation\n Answer: "},
	}
	for _, tc := range tests {
		t.Run(tc.task, func(t *testing.T) {
			got, err := LoadReader(strings.NewReader(tc.in), tc.task+".jsonl", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Samples) != 1 {
				t.Fatalf("%d samples", len(got.Samples))
			}
			s := got.Samples[0]
			if s.Prompt != tc.want {
				t.Fatalf("prompt\n got %q\nwant %q", s.Prompt, tc.want)
			}
			if s.ID != tc.task+"/0/0" || s.ShareKey != tc.task+"/0" {
				t.Fatalf("id %q share %q", s.ID, s.ShareKey)
			}
			if !strings.HasPrefix(s.Prompt, s.Metadata["system_prompt"].(string)) {
				t.Fatal("prompt does not start with the system prompt")
			}
		})
	}
}

// TestRealPromptHead checks the first coursera prompt against the file,
// by hand: system prompt, "Document is as follows. ", the document as is.
func TestRealPromptHead(t *testing.T) {
	got, err := Load(taskPath(t, "coursera"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := got.Samples[0]
	const head = "Now you are given a very long document. Please follow the instruction based on this document. For multi-choice questions, there could be a sinlge correct option or multiple correct options. Please only provide the letter corresponding to the answer (like A or AB) when answering. Document is as follows. "
	const tail = " Question: Question 1. What is the main goal of data science?\nA. Analyze and predict future trends\nB. Generate massive amounts of data\nC. Answer questions using data\nD. Increase the use of technology \nPlease directly give answer without any additional output or explanation\n Answer: "
	if !strings.HasPrefix(s.Prompt, head) || !strings.HasSuffix(s.Prompt, tail) {
		t.Fatalf("prompt head/tail differ: %q ... %q", s.Prompt[:400], s.Prompt[len(s.Prompt)-400:])
	}
	if string(s.References) != `["C"]` || s.ID != "coursera/0/0" {
		t.Fatalf("references %s id %s", s.References, s.ID)
	}
	for _, k := range []string{"task", "source", "evaluation", "doc_index", "question_index", "dropped_tokens"} {
		if _, ok := s.Metadata[k]; !ok {
			t.Fatalf("metadata lacks %q", k)
		}
	}
}

type predRow struct {
	Query  string `json:"query"`
	GT     string `json:"gt"`
	Prompt string `json:"prompt"`
}

func readPreds(t *testing.T, rel string) []predRow {
	t.Helper()
	f, err := os.Open(sharedData(t, filepath.Join("leval", "Predictions", rel)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []predRow
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r predRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// fill substitutes the two "{}" of a saved L-Eval prompt template.
func fill(t *testing.T, tmpl, doc, inst string) string {
	parts := strings.Split(tmpl, "{}")
	if len(parts) != 3 {
		t.Fatalf("template has %d placeholders: %q", len(parts)-1, tmpl)
	}
	return parts[0] + doc + parts[1] + inst + parts[2]
}

// TestAgainstPublishedPrompts compares prompts with the templates L-Eval
// saved in its turbo-16k-0613 prediction files (saved as sys_prompt +
// context with "{}" for document and question). Those files predate the
// current script by a few edits: "additonal" was later corrected to
// "additional", and the ngram_eval files carry an older system prompt
// ("You are an AI visual assistant. ..."); the rest must match exactly.
func TestAgainstPublishedPrompts(t *testing.T) {
	for _, task := range []string{"coursera", "quality", "tpo"} {
		t.Run(task, func(t *testing.T) {
			got, err := Load(taskPath(t, task), Options{})
			if err != nil {
				t.Fatal(err)
			}
			preds := readPreds(t, "exam_eval/turbo-16k-0613/"+task+".pred.jsonl")
			docs := loadDocs(t, task)
			if len(preds) != len(got.Samples) {
				t.Fatalf("%d predictions for %d samples", len(preds), len(got.Samples))
			}
			for i, p := range preds {
				s := got.Samples[i]
				doc := docs[s.Metadata["doc_index"].(int)]
				want := fill(t, strings.Replace(p.Prompt, "additonal", "additional", 1), doc, p.Query)
				if s.Prompt != want {
					t.Fatalf("sample %s differs from the published template", s.ID)
				}
			}
		})
	}
	// Open-ended: the length instruction, N = len(gt.split()).
	t.Run("scientific_qa", func(t *testing.T) {
		got, err := Load(taskPath(t, "scientific_qa"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		byQ := map[[2]string]datasets.Sample{}
		for _, s := range got.Samples {
			var refs []string
			_ = json.Unmarshal(s.References, &refs)
			byQ[[2]string{questionOf(s), refs[0]}] = s
		}
		docs := loadDocs(t, "scientific_qa")
		n := 0
		for _, rel := range []string{"ngram_eval/turbo-16k-0613/scientific_qa.pred.jsonl", "llm_gpt4_eval/turbo-16k-0613.pred.jsonl"} {
			for _, p := range readPreds(t, rel) {
				s, ok := byQ[[2]string{p.Query, p.GT}]
				if !ok {
					continue
				}
				i := strings.Index(p.Prompt, "Document is as follows.")
				want := fill(t, p.Prompt[i:], docs[s.Metadata["doc_index"].(int)], p.Query)
				if !strings.HasSuffix(s.Prompt, want) {
					t.Fatalf("sample %s: user message differs from %s", s.ID, rel)
				}
				if strings.HasPrefix(rel, "llm") && s.Prompt != fill(t, p.Prompt, docs[s.Metadata["doc_index"].(int)], p.Query) {
					t.Fatalf("sample %s: prompt differs from %s", s.ID, rel)
				}
				n++
			}
		}
		if n != 160+16 {
			t.Fatalf("compared %d prompts, want 176", n)
		}
	})
}

func questionOf(s datasets.Sample) string {
	const a, b = " Instruction: ", " The suggested output length is around "
	i := strings.LastIndex(s.Prompt, a)
	j := strings.LastIndex(s.Prompt, b)
	return s.Prompt[i+len(a) : j]
}

func loadDocs(t *testing.T, task string) []string {
	t.Helper()
	data, err := os.ReadFile(taskPath(t, task))
	if err != nil {
		t.Fatal(err)
	}
	var docs []string
	for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		var d struct {
			Input string `json:"input"`
		}
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d.Input)
	}
	return docs
}

func words(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("w%d", i)
	}
	return strings.Join(w, " ")
}

func TestTruncate(t *testing.T) {
	double := func(s string) int { return 2 * CountWords(s) }
	ten := func(s string) int { return 10 * CountWords(s) }
	doc := words(1000)
	tests := []struct {
		name, mode, task string
		budget           int
		count            func(string) int
		want             string
	}{
		{"fits", TruncateLEval, "t", 1000, nil, doc},
		{"leval one round", TruncateLEval, "t", 300, nil, words(300)},
		// 2 tokens a word, budget 600: [:600] -> 1200, [:350] -> 700, [:100] -> 200.
		{"leval 250 steps", TruncateLEval, "t", 600, double, words(100)},
		{"leval code keeps tail", TruncateLEval, "codeU", 600, double, doc[strings.Index(doc, "w900 "):]},
		// 10 a word, budget 100: [:100] -> 1000, then [:-150] of 100 -> [].
		{"leval negative bound", TruncateLEval, "t", 100, ten, ""},
		{"head", TruncateHead, "t", 600, double, words(300)},
		{"tail", TruncateTail, "t", 2, nil, "w998 w999"},
		{"none", TruncateNone, "t", 1, nil, doc},
		{"empty budget", TruncateHead, "t", 0, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Truncate(doc, tc.budget, tc.mode, tc.task, tc.count)
			if got != tc.want {
				t.Fatalf("got %d words %.40q..., want %d words %.40q...", CountWords(got), got, CountWords(tc.want), tc.want)
			}
		})
	}
	// L-Eval splits on single spaces: newlines and double spaces survive.
	if got := Truncate("a\nb  c d", 2, TruncateLEval, "t", nil); got != "a\nb " {
		t.Fatalf("split(\" \") semantics: got %q", got)
	}
}

// TestTruncateRealFile bounds every prompt of a real file and records what
// was dropped.
func TestTruncateRealFile(t *testing.T) {
	full, err := Load(taskPath(t, "coursera"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{TruncateLEval, TruncateHead, TruncateTail} {
		for _, docOnly := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/docOnly=%v", mode, docOnly), func(t *testing.T) {
				const limit = 3000
				got, err := Load(taskPath(t, "coursera"), Options{MaxPromptTokens: limit, Truncate: mode, DocumentOnly: docOnly})
				if err != nil {
					t.Fatal(err)
				}
				docOf := map[string]string{}
				truncated := 0
				for i, s := range got.Samples {
					dropped := s.Metadata["dropped_tokens"].(int)
					kept := s.Metadata["document_tokens"].(int)
					if dropped > 0 {
						truncated++
					}
					orig := full.Samples[i].Metadata["document_tokens"].(int)
					if kept+dropped != orig {
						t.Fatalf("%s: kept %d + dropped %d != %d", s.ID, kept, dropped, orig)
					}
					if docOnly && kept > limit || !docOnly && CountWords(s.Prompt) > limit {
						t.Fatalf("%s: %d prompt words, %d document words over %d", s.ID, CountWords(s.Prompt), kept, limit)
					}
					// All questions of a document share the (truncated) document.
					doc := s.Prompt[:strings.Index(s.Prompt, " Question: ")]
					if prev, ok := docOf[s.ShareKey]; ok && prev != doc {
						t.Fatalf("%s: document differs within share key", s.ID)
					}
					docOf[s.ShareKey] = doc
				}
				if truncated == 0 {
					t.Fatal("nothing truncated")
				}
			})
		}
	}
	if _, err := Load(taskPath(t, "coursera"), Options{MaxPromptTokens: 20}); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("budget below the template: %v", err)
	}
	if _, err := Load(taskPath(t, "coursera"), Options{MaxPromptTokens: 10, Truncate: "middle"}); err == nil {
		t.Fatal("unknown mode accepted")
	}
}

func TestBadInput(t *testing.T) {
	good := `{"input": "d", "instructions": ["q"], "outputs": ["a"], "source": "s", "evaluation": "f1"}`
	tests := []struct {
		name, line, errSub string
	}{
		{"malformed", `{"input": `, "line 2"},
		{"missing input", `{"instructions": ["q"], "outputs": ["a"], "source": "s", "evaluation": "f1"}`, `line 2: field "input": missing`},
		{"input not string", `{"input": 3, "instructions": ["q"], "outputs": ["a"], "source": "s", "evaluation": "f1"}`, `field "input": want a string, got a number`},
		{"empty document", `{"input": " \n", "instructions": ["q"], "outputs": ["a"], "source": "s", "evaluation": "f1"}`, `field "input": empty document`},
		{"instructions not list", `{"input": "d", "instructions": "q", "outputs": ["a"], "source": "s", "evaluation": "f1"}`, `field "instructions": want a list`},
		{"instruction not string", `{"input": "d", "instructions": [1], "outputs": ["a"], "source": "s", "evaluation": "f1"}`, `field "instructions": item 0`},
		{"mismatch", `{"input": "d", "instructions": ["q", "r"], "outputs": ["a"], "source": "s", "evaluation": "f1"}`, `field "outputs": 1 outputs for 2 instructions`},
		{"no reference", `{"input": "d", "instructions": ["q"], "outputs": [""], "source": "s", "evaluation": "f1"}`, `field "outputs": item 0: empty reference`},
		{"no questions", `{"input": "d", "instructions": [], "outputs": [], "source": "s", "evaluation": "f1"}`, `field "instructions": no instructions`},
		{"missing source", `{"input": "d", "instructions": ["q"], "outputs": ["a"], "evaluation": "f1"}`, `field "source": missing`},
		{"null evaluation", `{"input": "d", "instructions": ["q"], "outputs": ["a"], "source": "s", "evaluation": null}`, `field "evaluation": missing`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := good + "\n" + tc.line + "\n" + good + "\n"
			_, err := LoadReader(strings.NewReader(in), "x/news_summ.jsonl", Options{})
			if err == nil || !strings.Contains(err.Error(), "x/news_summ.jsonl") || !strings.Contains(err.Error(), tc.errSub) {
				t.Fatalf("error %v, want naming the file and %q", err, tc.errSub)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
			got, err := LoadReader(strings.NewReader(in), "x/news_summ.jsonl", Options{SkipBad: true})
			if err != nil {
				t.Fatal(err)
			}
			if got.Skipped != 1 || len(got.Samples) != 2 || got.FirstSkip == nil {
				t.Fatalf("skipped %d samples %d first %v", got.Skipped, len(got.Samples), got.FirstSkip)
			}
			// IDs follow line numbers, so a skipped line does not shift them.
			if got.Samples[1].ID != "news_summ/2/0" {
				t.Fatalf("second id %q", got.Samples[1].ID)
			}
		})
	}
}

func FuzzLoadReader(f *testing.F) {
	f.Add(`{"input": "d e f", "instructions": ["q", "r"], "outputs": ["a b", "c"], "source": "s", "evaluation": "f1"}`, 2, "leval")
	f.Add(`{"input": "x", "instructions": ["q"], "outputs": ["<a&b>"], "source": "s", "evaluation": "exam"}`+"\n{", 0, "head")
	f.Add(`{"input": "  ", "instructions": [null], "outputs": [1]}`, 5, "tail")
	f.Add("\xff\n[]\n{}", 1, "none")
	f.Fuzz(func(t *testing.T, in string, limit int, mode string) {
		if limit < 0 || limit > 1<<20 {
			limit = 1
		}
		for _, task := range []string{"coursera", "financial_qa", "codeU"} {
			got, err := LoadReader(strings.NewReader(in), task+".jsonl", Options{MaxPromptTokens: limit, Truncate: mode, SkipBad: true})
			if err != nil {
				if !strings.Contains(err.Error(), "unknown truncation") {
					t.Fatalf("skip-bad load failed: %v", err)
				}
				return
			}
			seen := map[string]bool{}
			for _, s := range got.Samples {
				if seen[s.ID] || !json.Valid(s.References) {
					t.Fatalf("duplicate id or bad references: %s %s", s.ID, s.References)
				}
				seen[s.ID] = true
				if s.Metadata["dropped_tokens"].(int) < 0 {
					t.Fatal("negative dropped tokens")
				}
			}
			strict, err := LoadReader(strings.NewReader(in), task+".jsonl", Options{MaxPromptTokens: limit, Truncate: mode})
			if (err == nil) != (got.Skipped == 0) {
				t.Fatalf("strict error %v but %d skipped", err, got.Skipped)
			}
			if err == nil && len(strict.Samples) != len(got.Samples) {
				t.Fatal("strict and skip-bad loads differ")
			}
		}
	})
}

// BenchmarkLoad measures load throughput per real file (MB/s from
// SetBytes; samples/s reported).
func BenchmarkLoad(b *testing.B) {
	for _, tc := range realFiles {
		b.Run(tc.task, func(b *testing.B) {
			path := taskPath(b, tc.task)
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(st.Size())
			n := 0
			for b.Loop() {
				got, err := Load(path, Options{})
				if err != nil {
					b.Fatal(err)
				}
				n += len(got.Samples)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "samples/s")
		})
	}
}

// BenchmarkLoadTruncated is Load on the largest file with a 4000-word
// prompt limit (L-Eval truncation).
func BenchmarkLoadTruncated(b *testing.B) {
	path := taskPath(b, "coursera")
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(st.Size())
	for b.Loop() {
		if _, err := Load(path, Options{MaxPromptTokens: 4000}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadMemory reports, for the largest file (coursera), the heap
// allocated per load and the heap still live once it is loaded (the
// samples); the peak of a load lies between the two.
func BenchmarkLoadMemory(b *testing.B) {
	path := taskPath(b, "coursera")
	var allocated, live, sys uint64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		got, err := Load(path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		allocated += after.TotalAlloc - before.TotalAlloc
		runtime.GC()
		runtime.ReadMemStats(&after)
		live += after.HeapAlloc - before.HeapAlloc
		sys = max(sys, after.HeapSys)
		runtime.KeepAlive(got)
	}
	n := float64(b.N)
	b.ReportMetric(float64(allocated)/n/1e6, "alloc-MB/op")
	b.ReportMetric(float64(live)/n/1e6, "live-MB/op")
	b.ReportMetric(float64(sys)/1e6, "heap-sys-MB")
}
