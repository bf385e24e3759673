// Package leval scores L-Eval (OpenLMLab/LEval) predictions exactly as the
// benchmark's own scripts do.
//
// Reference: OpenLMLab/LEval at commit
// cd34b050269148aed75acbbe4a599873ad0f37e9, files Evaluation/auto_eval.py
// (the per-task processing functions, the metric chosen per task, the
// LEvalMetrics._compute aggregation and the topic_retrieval / sci_fi
// splits), Evaluation/em.py (exact_match_score with 0.25 partial credit),
// Evaluation/f1.py (f1_score) and Evaluation/rouge.py (compute_rouge over
// rouge_score, reproduced by tally/scoring/rouge), and the length
// instruction of Baselines/*-test.py (WordCount).
//
// Per-item scores are fractions (exact match 0, 0.25 or 1; F1 and ROUGE in
// [0, 1]); Aggregate returns the figures auto_eval.py prints, on its 0-100
// scale and rounded to 4 decimals as it rounds them.
package leval

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"tally/scoring/rouge"
)

// Metric names as auto_eval.py's DATASET_TO_METRICS keys them.
const (
	// MetricExactMatch is the "exam" configuration: exact_match.
	MetricExactMatch = "exact_match"
	// MetricF1 is the "f1" configuration.
	MetricF1 = "f1"
	// MetricRouge is the "rouge" configuration.
	MetricRouge = "rouge"
)

// Processing kinds, naming the auto_eval.py functions applied before
// scoring.
const (
	// ProcMC is process_output_mc / process_gt_mc with one letter kept.
	ProcMC = "multiple_choice"
	// ProcMCMulti is process_output_mc for coursera (several letters).
	ProcMCMulti = "multiple_choice_multi"
	// ProcMath is process_math on both sides (gsm100).
	ProcMath = "math"
	// ProcCode is process_output_code / process_gt_code (codeU).
	ProcCode = "code"
	// ProcJudge is process_output_judge / process_gt_judge (sci_fi).
	ProcJudge = "judge"
	// ProcRetrieval is raw text, aggregated per position i%3
	// (topic_retrieval_longchat).
	ProcRetrieval = "retrieval"
	// ProcNone is raw text.
	ProcNone = "none"
)

// TaskInfo describes one L-Eval task as auto_eval.py scores it.
type TaskInfo struct {
	// Name is the task file name without .jsonl / .pred.jsonl.
	Name string `json:"name"`
	// Metric is MetricExactMatch, MetricF1 or MetricRouge.
	Metric string `json:"metric"`
	// Processing is one of the Proc* constants.
	Processing string `json:"processing"`
	// Closed is true for the closed-ended (exam) tasks.
	Closed bool `json:"closed"`
}

// tasks is the task table: the closed-ended tasks of LEval_config.py
// datasets_closed_ended and the open-ended tasks of datasets_open_ended,
// with the evaluation field their prediction files carry.
var tasks = [...]TaskInfo{
	{"coursera", MetricExactMatch, ProcMCMulti, true},
	{"quality", MetricExactMatch, ProcMC, true},
	{"tpo", MetricExactMatch, ProcMC, true},
	{"gsm100", MetricExactMatch, ProcMath, true},
	{"codeU", MetricExactMatch, ProcCode, true},
	{"sci_fi", MetricExactMatch, ProcJudge, true},
	{"topic_retrieval_longchat", MetricExactMatch, ProcRetrieval, true},
	{"financial_qa", MetricF1, ProcNone, false},
	{"gov_report_summ", MetricRouge, ProcNone, false},
	{"legal_contract_qa", MetricF1, ProcNone, false},
	{"meeting_summ", MetricRouge, ProcNone, false},
	{"multidoc_qa", MetricF1, ProcNone, false},
	{"narrative_qa", MetricF1, ProcNone, false},
	{"natural_question", MetricF1, ProcNone, false},
	{"news_summ", MetricRouge, ProcNone, false},
	{"paper_assistant", MetricRouge, ProcNone, false},
	{"patent_summ", MetricRouge, ProcNone, false},
	{"review_summ", MetricRouge, ProcNone, false},
	{"scientific_qa", MetricF1, ProcNone, false},
	{"tv_show_summ", MetricRouge, ProcNone, false},
}

// Tasks returns the L-Eval tasks auto_eval.py can score, with their metric
// and processing.
func Tasks() []TaskInfo {
	out := make([]TaskInfo, len(tasks))
	copy(out, tasks[:])
	return out
}

// Task returns the description of one task.
func Task(name string) (TaskInfo, bool) {
	for _, t := range tasks {
		if t.Name == name {
			return t, true
		}
	}
	return TaskInfo{}, false
}

// Item is one scored L-Eval question.
type Item struct {
	// Task is the task name.
	Task string `json:"task"`
	// Prediction is the prediction as the metric sees it (after the task's
	// processing; for sci_fi the loyalty part).
	Prediction string `json:"prediction"`
	// Reference is the ground truth as the metric sees it (for sci_fi the
	// loyalty part).
	Reference string `json:"reference"`
	// Score is the item's score as a fraction: exact match (0, 0.25, 1),
	// F1, or for ROUGE tasks the ROUGE-L F-measure; for sci_fi the mean of
	// the loyalty and fact scores.
	Score float64 `json:"score"`
	// Loyalty is the sci_fi loyalty part (nil elsewhere).
	Loyalty *JudgePart `json:"loyalty,omitempty"`
	// Fact is the sci_fi fact part (nil elsewhere).
	Fact *JudgePart `json:"fact,omitempty"`
	// Rouge holds the ROUGE scores of ROUGE tasks (nil elsewhere). Its
	// RougeLsum splits on the newlines already in the texts, not on
	// L-Eval's nltk punkt sentences, so it is not L-Eval's rouge/rougeLsum.
	Rouge *rouge.Scores `json:"rouge,omitempty"`
}

// JudgePart is one half (loyalty or fact) of a sci_fi item.
type JudgePart struct {
	// Prediction is "true", "false" or "<error>" (process_output_judge).
	Prediction string `json:"prediction"`
	// Reference is the lowercased, stripped ground-truth part.
	Reference string `json:"reference"`
	// Score is the exact match of the two (0 or 1).
	Score float64 `json:"score"`
}

// ScoreItem processes and scores one prediction against its ground truth
// ("gt") as auto_eval.py does for task. Errors are returned where the
// reference raises (a blank multiple-choice ground truth, a sci_fi text
// without "[fact:") and for unknown tasks.
func ScoreItem(task, prediction, reference string) (Item, error) {
	info, ok := Task(task)
	if !ok {
		return Item{}, fmt.Errorf("leval: unknown task %q", task)
	}
	it := Item{Task: task}
	switch info.Processing {
	case ProcMC, ProcMCMulti:
		ref, err := ProcessGTMC(reference)
		if err != nil {
			return Item{}, fmt.Errorf("leval %s: processing ground truth: %w", task, err)
		}
		it.Reference = ref
		it.Prediction = ProcessOutputMC(prediction, info.Processing == ProcMCMulti)
	case ProcMath:
		it.Reference = ProcessMath(reference)
		it.Prediction = ProcessMath(prediction)
	case ProcCode:
		it.Reference = ProcessGTCode(reference)
		it.Prediction = ProcessOutputCode(prediction, reference)
	case ProcJudge:
		lr, fr, err := ProcessGTJudge(reference)
		if err != nil {
			return Item{}, fmt.Errorf("leval %s: processing ground truth: %w", task, err)
		}
		lp, fp, err := ProcessOutputJudge(prediction)
		if err != nil {
			return Item{}, fmt.Errorf("leval %s: processing prediction: %w", task, err)
		}
		it.Loyalty = &JudgePart{lp, lr, ExactMatch(lp, lr)}
		it.Fact = &JudgePart{fp, fr, ExactMatch(fp, fr)}
		it.Prediction, it.Reference = lp, lr
		it.Score = (it.Loyalty.Score + it.Fact.Score) / 2
		return it, nil
	default:
		it.Reference = reference
		it.Prediction = prediction
	}
	switch info.Metric {
	case MetricExactMatch:
		it.Score = ExactMatch(it.Prediction, it.Reference)
	case MetricF1:
		it.Score = F1(it.Prediction, it.Reference)
	case MetricRouge:
		// rouge.py's postprocess_text puts each nltk sentence on its own
		// line; that changes only ROUGE-Lsum, which is not reproduced.
		s := rouge.Score(it.Prediction, it.Reference)
		it.Rouge = &s
		it.Score = s.RougeL.FMeasure
	}
	return it, nil
}

// Aggregate returns the figures auto_eval.py prints for task over items
// (in prediction-file order), under the reference's key names, each
// rounded to 4 decimals as LEvalMetrics._compute rounds them:
//
//   - exact-match tasks: "exact_match", "num_predicted",
//     "mean_prediction_length_characters" (of the processed predictions),
//     "LEval_score";
//   - F1 tasks: "f1" and the same three;
//   - ROUGE tasks: "rouge/rouge1", "rouge/rouge2", "rouge/rougeL",
//     "rouge/geometric_mean" (of the three means, before rounding) and the
//     same three; "rouge/rougeLsum" is left out (the reference computes it
//     on nltk punkt sentences, not reproduced here);
//   - topic_retrieval_longchat: items are split by position i%3 and each
//     third scored alone, under "first 1 sentence retrieval score/<key>"
//     (2, 3), plus "average score of the 1st/2nd/3rd sentence retrieval"
//     (the mean of the three rounded exact_match values, not rounded);
//   - sci_fi: "loyalty score/<key>" and "fact score/<key>", plus
//     "average score of fact and loyalty" (likewise).
//
// An empty group is an error, as the reference divides by zero.
func Aggregate(task string, items []Item) (map[string]float64, error) {
	info, ok := Task(task)
	if !ok {
		return nil, fmt.Errorf("leval: unknown task %q", task)
	}
	for i, it := range items {
		if it.Task != task {
			return nil, fmt.Errorf("leval: item %d is for task %q, not %q", i, it.Task, task)
		}
	}
	out := map[string]float64{}
	switch info.Processing {
	case ProcRetrieval:
		var groups [3][]part
		for i, it := range items {
			groups[i%3] = append(groups[i%3], part{it.Prediction, it.Score})
		}
		balance := 0.0
		for g := range groups {
			m, err := computeParts(info.Metric, groups[g])
			if err != nil {
				return nil, fmt.Errorf("leval %s: group %d: %w", task, g+1, err)
			}
			prefix := fmt.Sprintf("first %d sentence retrieval score/", g+1)
			for k, v := range m {
				out[prefix+k] = v
			}
			balance += m["exact_match"]
		}
		out["average score of the 1st/2nd/3rd sentence retrieval"] = balance / 3
		return out, nil
	case ProcJudge:
		var loyalty, fact []part
		for i, it := range items {
			if it.Loyalty == nil || it.Fact == nil {
				return nil, fmt.Errorf("leval %s: item %d has no loyalty/fact parts", task, i)
			}
			loyalty = append(loyalty, part{it.Loyalty.Prediction, it.Loyalty.Score})
			fact = append(fact, part{it.Fact.Prediction, it.Fact.Score})
		}
		balance := 0.0
		for g, ps := range [][]part{loyalty, fact} {
			m, err := computeParts(info.Metric, ps)
			if err != nil {
				return nil, fmt.Errorf("leval %s: %w", task, err)
			}
			prefix := [...]string{"loyalty score/", "fact score/"}[g]
			for k, v := range m {
				out[prefix+k] = v
			}
			balance += m["exact_match"]
		}
		out["average score of fact and loyalty"] = balance / 2
		return out, nil
	}
	if info.Metric == MetricRouge {
		return computeRouge(items)
	}
	ps := make([]part, len(items))
	for i, it := range items {
		ps[i] = part{it.Prediction, it.Score}
	}
	m, err := computeParts(info.Metric, ps)
	if err != nil {
		return nil, fmt.Errorf("leval %s: %w", task, err)
	}
	return m, nil
}

// part is a processed prediction and its score.
type part struct {
	prediction string
	score      float64
}

var errEmpty = errors.New("no items (the reference divides by zero)")

// finish adds num_predicted and mean_prediction_length_characters, rounds
// everything to 4 decimals and sets LEval_score, as LEvalMetrics._compute.
func finish(m map[string]float64, preds []string, scoreKey string) map[string]float64 {
	m["num_predicted"] = float64(len(preds))
	total := 0
	for _, p := range preds {
		total += utf8.RuneCountInString(p)
	}
	m["mean_prediction_length_characters"] = float64(total) / float64(len(preds))
	for k, v := range m {
		m[k] = pyRound(v, 4)
	}
	m["LEval_score"] = m[scoreKey]
	return m
}

// computeParts is compute_exact_match or compute_f1 followed by _compute:
// 100 * the sum of item scores (in order) / their number.
func computeParts(metric string, ps []part) (map[string]float64, error) {
	if len(ps) == 0 {
		return nil, errEmpty
	}
	sum := 0.0
	preds := make([]string, len(ps))
	for i, p := range ps {
		sum += p.score
		preds[i] = p.prediction
	}
	return finish(map[string]float64{metric: 100.0 * sum / float64(len(ps))}, preds, metric), nil
}

// computeRouge is the "rouge" branch of _compute_helper: per item the
// F-measures times 100 (max over the single reference), their means, and
// the geometric mean of the rouge1, rouge2 and rougeL means.
func computeRouge(items []Item) (map[string]float64, error) {
	if len(items) == 0 {
		return nil, errEmpty
	}
	var r1, r2, rl float64
	preds := make([]string, len(items))
	for i, it := range items {
		if it.Rouge == nil {
			return nil, fmt.Errorf("leval %s: item %d has no ROUGE scores", it.Task, i)
		}
		r1 += it.Rouge.Rouge1.FMeasure * 100
		r2 += it.Rouge.Rouge2.FMeasure * 100
		rl += it.Rouge.RougeL.FMeasure * 100
		preds[i] = it.Prediction
	}
	n := float64(len(items))
	m := map[string]float64{
		"rouge/rouge1": r1 / n,
		"rouge/rouge2": r2 / n,
		"rouge/rougeL": rl / n,
	}
	m["rouge/geometric_mean"] = math.Pow(m["rouge/rouge1"]*m["rouge/rouge2"]*m["rouge/rougeL"], 1.0/3.0)
	return finish(m, preds, "rouge/geometric_mean"), nil
}

// WordCount is the length L-Eval puts in its length instruction for
// open-ended tasks ("The suggested output length is around N words." in
// Baselines/turbo16k-test.py and others, "Answer this question with N
// words." in llama2-chat-test.py and others): len(out.split()) of the
// reference output, Python's split on Unicode whitespace.
func WordCount(s string) int {
	return len(pySplit(s))
}
