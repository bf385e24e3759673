package lmeval

import (
	"fmt"
	"math"
	"strings"

	"tally/internal/pyre"
	"tally/internal/pystr"
	"tally/scoring/textmatch"
)

// Ports of the Python modules of lm-eval's long-context suites (lm-eval
// 4e7e0d47): LongBench's metrics.py (its process_results functions but
// the ROUGE ones, which need the rouge package's ROUGE-L, and the Chinese
// F1, which needs jieba's segmentation) and BabiLong's common_utils.py
// (its process_results and custom_dataset).

func init() {
	registerHookModule(&hookModule{where: "longbench/metrics.py", defs: map[string]hookDef{
		"get_qa_f1_with_score":          resultsHook(longbenchQAF1, "score", "qa_f1_score"),
		"get_classification_with_score": resultsHook(longbenchClassification, "score", "classification_score"),
		"get_count_with_score":          resultsHook(longbenchCount(`\d+`, ""), "score", "count_score"),
		"get_retrieval_with_score":      resultsHook(longbenchCount(`\d+`, `Paragraph (\d+)`), "score", "retrieval_score"),
		"get_retrieval_zh_with_score":   resultsHook(longbenchCount(`\d+`, `段落(\d+)`), "score", "retrieval_zh_score"),
		"get_code_sim_with_score":       resultsHook(longbenchCodeSim, "score", "code_sim_score"),
	}}, "2b80d9715f8e7b709d3a7927c99f7a7c36cd5f413af1a16d946ae1a4a13b36d1")
	registerHookModule(&hookModule{where: "babilong/common_utils.py", defs: map[string]hookDef{
		"process_results": babilongResults,
		"load_dataset":    babilongDataset,
	}}, "557de4855a370f2f251176982a110aaac9209fa50645bf110d7d42b1151878bc")
}

// longbenchScore is one of metrics.py's per-answer scores: the
// prediction (results[0], stripped or not as its get_* function does)
// against one ground truth, and the document; the value an int or a
// float as Python's is.
type longbenchScore struct {
	strip bool
	score func(pred string, truth any, doc *Map) (any, error)
}

// resultsHook ports a get_X_with_score(doc, results): the best score over
// doc["answers"] (max(score, output) from output = 0.0: Python's max
// keeps its first argument among equals, so an int 0 stays an int), under
// every name given.
func resultsHook(s longbenchScore, names ...string) hookDef {
	return func(m *pyModule, kw *Map) (*pyHook, error) {
		if kw.Len() > 0 {
			return nil, fmt.Errorf("process_results takes no keyword arguments here")
		}
		return &pyHook{results: func(doc *Map, results []any) (*Map, error) {
			pred, ok := results[0].(string)
			if !ok {
				return nil, fmt.Errorf("the response %s is not a str", pyStr(results[0]))
			}
			if s.strip {
				pred = pystr.Strip(pred)
			}
			av, ok := doc.Get("answers")
			if !ok {
				return nil, fmt.Errorf("the document has no \"answers\" (KeyError)")
			}
			answers, ok := av.([]any)
			if !ok {
				return nil, fmt.Errorf("answers %s is not a list", pyStr(av))
			}
			var output any = 0.0
			for _, truth := range answers {
				score, err := s.score(pred, truth, doc)
				if err != nil {
					return nil, err
				}
				a, _ := number(score)
				b, _ := number(output)
				if !(b > a) { // max(score, output): score unless output is greater
					output = score
				}
			}
			out := NewMap()
			for _, n := range names {
				out.Set(n, output)
			}
			return out, nil
		}}, nil
	}
}

// articles is normalize_answer's remove_articles pattern.
var articles = pyre.MustCompile(`\b(a|an|the)\b`)

// pyPunctuation is Python's string.punctuation.
const pyPunctuation = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// normalizeAnswer is metrics.py's normalize_answer: lower-cased,
// punctuation removed, articles made spaces, white space collapsed.
func normalizeAnswer(s string) (string, error) {
	s = strings.Map(func(r rune) rune {
		if strings.ContainsRune(pyPunctuation, r) {
			return -1
		}
		return r
	}, pystr.Lower(s))
	s, err := articles.Sub(" ", s)
	if err != nil {
		return "", err
	}
	return strings.Join(strings.FieldsFunc(s, pystr.IsSpace), " "), nil
}

// f1Tokens is metrics.py's f1_score on token lists: the int 0 when no
// token is shared, else the F1 of the multiset overlap.
func f1Tokens(pred, truth []string) any {
	same := textmatch.Shared(pred, truth)
	if same == 0 {
		return int64(0)
	}
	precision := 1.0 * float64(same) / float64(len(pred))
	recall := 1.0 * float64(same) / float64(len(truth))
	return (2 * precision * recall) / (precision + recall)
}

// longbenchQAF1 is get_qa_f1_score's qa_f1_score: the token F1 of the
// normalised answers.
var longbenchQAF1 = longbenchScore{strip: true, score: func(pred string, truth any, _ *Map) (any, error) {
	t, ok := truth.(string)
	if !ok {
		return nil, fmt.Errorf("answer %s is not a str", pyStr(truth))
	}
	p, err := normalizeAnswer(pred)
	if err != nil {
		return nil, err
	}
	if t, err = normalizeAnswer(t); err != nil {
		return nil, err
	}
	return f1Tokens(strings.FieldsFunc(p, pystr.IsSpace), strings.FieldsFunc(t, pystr.IsSpace)), nil
}}

// longbenchClassification is classification_score: the classes of
// doc["all_classes"] found in the prediction, less those found inside
// the ground truth but not equal to it (removed while the list is
// iterated, so the one after a removed class is not looked at, as in
// Python), 1/len of them when the ground truth is among them.
var longbenchClassification = longbenchScore{strip: true, score: func(pred string, truth any, doc *Map) (any, error) {
	t, ok := truth.(string)
	if !ok {
		return nil, fmt.Errorf("answer %s is not a str", pyStr(truth))
	}
	cv, ok := doc.Get("all_classes")
	if !ok {
		return nil, fmt.Errorf("the document has no \"all_classes\" (KeyError)")
	}
	classes, ok := cv.([]any)
	if !ok {
		return nil, fmt.Errorf("all_classes %s is not a list", pyStr(cv))
	}
	var matches []string
	for _, c := range classes {
		s, ok := c.(string)
		if !ok {
			return nil, fmt.Errorf("class %s is not a str", pyStr(c))
		}
		if strings.Contains(pred, s) {
			matches = append(matches, s)
		}
	}
	for i := 0; i < len(matches); i++ {
		term := matches[i]
		if strings.Contains(t, term) && term != t {
			for j, m := range matches { // list.remove: the first equal one
				if m == term {
					matches = append(matches[:j:j], matches[j+1:]...)
					break
				}
			}
		}
	}
	for _, m := range matches {
		if m == t {
			return 1.0 / float64(len(matches)), nil
		}
	}
	return 0.0, nil
}}

// longbenchCount is count_score (truthPattern "") or retrieval_score
// (the ground truth's paragraph number, the first match of truthPattern;
// none raises IndexError): the share of the numbers in the prediction
// that equal it, 0.0 when it has none.
func longbenchCount(numbers, truthPattern string) longbenchScore {
	num := pyre.MustCompile(numbers)
	var tp *pyre.Regexp
	if truthPattern != "" {
		tp = pyre.MustCompile(truthPattern)
	}
	return longbenchScore{strip: true, score: func(pred string, truth any, _ *Map) (any, error) {
		want := pyStr(truth)
		if tp != nil {
			t, ok := truth.(string)
			if !ok {
				return nil, fmt.Errorf("answer %s is not a str", pyStr(truth))
			}
			found, err := tp.FindAllStrings(t)
			if err != nil {
				return nil, err
			}
			ms, _ := found.([]string)
			if len(ms) == 0 {
				return nil, fmt.Errorf("answer %q names no paragraph (IndexError)", t)
			}
			want = ms[0]
		}
		found, err := num.FindAllStrings(pred)
		if err != nil {
			return nil, err
		}
		ns, _ := found.([]string)
		right := 0
		for _, n := range ns {
			if n == want {
				right++
			}
		}
		if len(ns) == 0 {
			return 0.0, nil
		}
		return float64(right) / float64(len(ns)), nil
	}}
}

// longbenchCodeSim is code_sim_score (on the unstripped prediction): its
// first non-blank line with no "`", "#" or "//" against the ground truth,
// fuzzywuzzy's fuzz.ratio over 100.
var longbenchCodeSim = longbenchScore{strip: false, score: func(pred string, truth any, _ *Map) (any, error) {
	t, ok := truth.(string)
	if !ok {
		return nil, fmt.Errorf("answer %s is not a str", pyStr(truth))
	}
	line := ""
	for _, l := range strings.Split(pred, "\n") {
		if pystr.Strip(l) == "" {
			continue
		}
		if !strings.Contains(l, "`") && !strings.Contains(l, "#") && !strings.Contains(l, "//") {
			line = l
			break
		}
	}
	return float64(fuzzRatio(line, t)) / 100, nil
}}

// fuzzRatio is fuzzywuzzy 0.18's fuzz.ratio with its pure-Python
// backend (difflib, what `pip install fuzzywuzzy` uses without
// python-Levenshtein): 100 for equal strings, 0 when either is empty,
// else round(100 · SequenceMatcher(None, s1, s2).ratio()), halves to even.
func fuzzRatio(s1, s2 string) int {
	if s1 == s2 {
		return 100
	}
	a, b := []rune(s1), []rune(s2)
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	return int(math.RoundToEven(100 * sequenceRatio(a, b)))
}

// sequenceRatio is Python's difflib.SequenceMatcher(None, a, b).ratio()
// with autojunk: 2·M/T, M the characters of its matching blocks
// (find_longest_match recursively; for a b of 200 or more, elements
// occurring more than len(b)//100 + 1 times are "popular" and start no
// match, though a match may extend over them).
func sequenceRatio(a, b []rune) float64 {
	b2j := map[rune][]int{}
	for i, c := range b {
		b2j[c] = append(b2j[c], i)
	}
	if n := len(b); n >= 200 {
		ntest := n/100 + 1
		for c, idx := range b2j {
			if len(idx) > ntest {
				delete(b2j, c)
			}
		}
	}
	longest := func(alo, ahi, blo, bhi int) (int, int, int) {
		besti, bestj, bestsize := alo, blo, 0
		j2len := map[int]int{}
		for i := alo; i < ahi; i++ {
			newj2len := map[int]int{}
			for _, j := range b2j[a[i]] {
				if j < blo {
					continue
				}
				if j >= bhi {
					break
				}
				k := j2len[j-1] + 1
				newj2len[j] = k
				if k > bestsize {
					besti, bestj, bestsize = i-k+1, j-k+1, k
				}
			}
			j2len = newj2len
		}
		for besti > alo && bestj > blo && a[besti-1] == b[bestj-1] {
			besti, bestj, bestsize = besti-1, bestj-1, bestsize+1
		}
		for besti+bestsize < ahi && bestj+bestsize < bhi && a[besti+bestsize] == b[bestj+bestsize] {
			bestsize++
		}
		return besti, bestj, bestsize
	}
	matches := 0
	queue := [][4]int{{0, len(a), 0, len(b)}}
	for len(queue) > 0 {
		q := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		i, j, k := longest(q[0], q[1], q[2], q[3])
		if k == 0 {
			continue
		}
		matches += k
		if q[0] < i && q[2] < j {
			queue = append(queue, [4]int{q[0], i, q[2], j})
		}
		if i+k < q[1] && j+k < q[3] {
			queue = append(queue, [4]int{i + k, q[1], j + k, q[3]})
		}
	}
	if t := len(a) + len(b); t > 0 {
		return 2.0 * float64(matches) / float64(t)
	}
	return 1.0
}

// babilongControl is postprocess_pred's pattern.
var babilongControl = pyre.MustCompile(`[\x00-\x1f]`)

// babilongResults ports babilong's process_results: acc 1.0 when the
// target (stripped) is in the prediction (stripped, control characters
// made newlines, stripped again), lower-cased, else 0.0.
func babilongResults(m *pyModule, kw *Map) (*pyHook, error) {
	if kw.Len() > 0 {
		return nil, fmt.Errorf("process_results takes no keyword arguments here")
	}
	return &pyHook{results: func(doc *Map, results []any) (*Map, error) {
		pred, ok := results[0].(string)
		if !ok {
			return nil, fmt.Errorf("the response %s is not a str", pyStr(results[0]))
		}
		p, err := babilongControl.Sub("\n", pystr.Strip(pred))
		if err != nil {
			return nil, err
		}
		p = pystr.Strip(p)
		target := ""
		if v, ok := doc.Get("target"); ok {
			s, isStr := v.(string)
			if !isStr {
				return nil, fmt.Errorf("target %s is not a str", pyStr(v))
			}
			target = s
		}
		score := 0.0
		if strings.Contains(pystr.Lower(p), pystr.Lower(pystr.Strip(target))) {
			score = 1.0
		}
		out := NewMap()
		out.Set("acc", score)
		return out, nil
	}}, nil
}

// babilongDataset ports babilong's load_dataset(**kwargs): the split
// qa_split of RMT-team/babilong-1k-samples' configuration
// max_seq_lengths ("0k" when not given), which tally reads from --data
// (its folder max_seq_lengths/, in the Hub's layout).
func babilongDataset(m *pyModule, kw *Map) (*pyHook, error) {
	if kw.Len() > 0 {
		return nil, fmt.Errorf("load_dataset takes no keyword arguments here")
	}
	return &pyHook{dataset: func(kwargs *Map) (datasetSpec, error) {
		name := "0k"
		if v, ok := kwargs.Get("max_seq_lengths"); ok {
			s, isStr := v.(string)
			if !isStr {
				return datasetSpec{}, fmt.Errorf("max_seq_lengths %s is not a str", pyStr(v))
			}
			name = s
		}
		split, ok := kwargs.Get("qa_split")
		s, isStr := split.(string)
		if !ok || !isStr {
			return datasetSpec{}, fmt.Errorf("no qa_split in dataset_kwargs")
		}
		return datasetSpec{name: name, splits: []string{s}}, nil
	}}, nil
}
