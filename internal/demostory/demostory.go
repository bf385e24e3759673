// Package demostory tells, in plain language, what a DROP-scored task run
// under the stop settings "\n", "." and none (budget only) shows: the Open
// LLM Leaderboard's DROP stop-word finding, as `tally demo` prints it under
// its table.
package demostory

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"tally/datasets"
	"tally/generate"
)

// setting finds the setting whose only sequence is seq ("" for none).
func setting(settings []generate.StopSetting, seq string) (generate.StopSetting, bool) {
	for _, s := range settings {
		var seqs []string
		for _, q := range s.Seqs {
			if q != "" {
				seqs = append(seqs, q)
			}
		}
		if (seq == "" && len(seqs) == 0) || (len(seqs) == 1 && seqs[0] == seq) {
			return s, true
		}
	}
	return generate.StopSetting{}, false
}

// numberGold reports whether the sample's first gold answer is a number.
func numberGold(s datasets.Sample) bool {
	var answers [][]string
	if json.Unmarshal(s.References, &answers) != nil || len(answers) == 0 || len(answers[0]) != 1 {
		return false
	}
	_, err := strconv.ParseFloat(answers[0][0], 64)
	return err == nil
}

// decimalGold returns the sample's first gold answer when it is a decimal
// number such as "7.5".
func decimalGold(s datasets.Sample) (string, bool) {
	var answers [][]string
	if json.Unmarshal(s.References, &answers) != nil || len(answers) == 0 || len(answers[0]) != 1 {
		return "", false
	}
	a := answers[0][0]
	if !strings.Contains(a, ".") {
		return "", false
	}
	if _, err := strconv.ParseFloat(a, 64); err != nil {
		return "", false
	}
	return a, true
}

// stats are one setting's figures.
type stats struct {
	f1, fixed    float64 // mean drop and drop-fixed F1 over every sample
	decF1        float64 // mean drop F1 over the decimal-answer samples
	pred         map[string]string
	dropF1, fxF1 map[string]float64
}

func collect(res generate.Results, task, set string, dec map[string]string) (stats, bool) {
	byMetric := res[task][set]
	drop, fixed := byMetric["drop.f1"], byMetric["drop-fixed.f1"]
	if len(drop) == 0 || len(fixed) == 0 {
		return stats{}, false
	}
	st := stats{pred: map[string]string{}, dropF1: map[string]float64{}, fxF1: map[string]float64{}}
	nd := 0
	for _, x := range drop {
		st.f1 += x.Value
		st.pred[x.SampleID] = x.Prediction
		st.dropF1[x.SampleID] = x.Value
		if _, ok := dec[x.SampleID]; ok {
			st.decF1 += x.Value
			nd++
		}
	}
	for _, x := range fixed {
		st.fixed += x.Value
		st.fxF1[x.SampleID] = x.Value
	}
	st.f1 /= float64(len(drop))
	st.fixed /= float64(len(fixed))
	if nd > 0 {
		st.decF1 /= float64(nd)
	}
	return st, true
}

// Summarize returns the story of one task's results, a few lines, or ""
// when the task was not scored with drop and drop-fixed under the three
// settings "\n", "." and none.
func Summarize(task string, settings []generate.StopSetting, samples []datasets.Sample, res generate.Results) string {
	nl, ok1 := setting(settings, "\n")
	dot, ok2 := setting(settings, ".")
	none, ok3 := setting(settings, "")
	if !ok1 || !ok2 || !ok3 {
		return ""
	}
	dec := map[string]string{}
	for _, s := range samples {
		if a, ok := decimalGold(s); ok {
			dec[s.ID] = a
		}
	}
	sNL, ok1 := collect(res, task, nl.Name, dec)
	sDot, ok2 := collect(res, task, dot.Name, dec)
	sNone, ok3 := collect(res, task, none.Name, dec)
	if !ok1 || !ok2 || !ok3 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nWhat this shows (the Open LLM Leaderboard's DROP stop-word finding), %s:\n", task)
	right := 0
	for _, v := range sNL.dropF1 {
		if v == 1 {
			right++
		}
	}
	fmt.Fprintf(&b, "  stop %q (%s): the answer ends at the line break; %d of %d answers fully right, drop F1 %.2f.\n",
		"\n", nl.Name, right, len(sNL.dropF1), sNL.f1)

	cut, ex := 0, ""
	for _, smp := range samples {
		gold, ok := dec[smp.ID]
		p := strings.TrimSpace(sDot.pred[smp.ID])
		if ok && p != "" && strings.HasPrefix(gold, p+".") {
			cut++
			if ex == "" {
				ex = " (" + gold + " → " + p + ")"
			}
		}
	}
	fmt.Fprintf(&b, "  stop %q (%s): cut %d of %d decimal answers at their point%s: drop F1 on them %.2f → %.2f (%+.2f);\n",
		".", dot.Name, cut, len(dec), ex, sNL.decF1, sDot.decF1, sDot.decF1-sNL.decF1)
	fmt.Fprintf(&b, "    the other answers ran on to the next passage's first \".\": drop F1 over all questions %.2f (%+.2f vs %q).\n",
		sDot.f1, sDot.f1-sNL.f1, "\n")

	ranOn, numbers, zeroed, credited := 0, 0, 0, 0
	ex = ""
	for _, smp := range samples {
		p, ok := sNone.pred[smp.ID]
		before, _, found := strings.Cut(strings.TrimLeft(p, " "), "\n")
		if !ok || !found || strings.TrimSpace(before) == "" {
			continue
		}
		ranOn++
		if ex == "" {
			ex = fmt.Sprintf(" (%q)", strings.TrimSpace(before)+"\n\nPassage: …")
		}
		if !numberGold(smp) {
			continue
		}
		numbers++
		if sNone.dropF1[smp.ID] == 0 {
			zeroed++
		}
		if sNone.fxF1[smp.ID] > 0 {
			credited++
		}
	}
	fmt.Fprintf(&b, "  no stop (%s, budget only): %d of %d answers ran on into the next passage%s;\n",
		none.Name, ranOn, len(sNone.pred), ex)
	fmt.Fprintf(&b, "    drop splits on spaces only, so a number followed by a line break is not read as a number:\n")
	fmt.Fprintf(&b, "    it scored %d of the %d run-on number answers 0 (F1 over all questions %.2f, %+.2f vs %q);\n",
		zeroed, numbers, sNone.f1, sNone.f1-sNL.f1, "\n")
	fmt.Fprintf(&b, "    drop-fixed, which splits on any whitespace, credited %d of them (F1 %.2f).\n", credited, sNone.fixed)
	return b.String()
}
