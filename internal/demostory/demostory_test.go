package demostory

import (
	"encoding/json"
	"strings"
	"testing"

	"tally/datasets"
	"tally/generate"
)

func TestSummarize(t *testing.T) {
	settings := []generate.StopSetting{{Name: "dot", Seqs: []string{"."}}, {Name: "nl", Seqs: []string{"\n"}}, {Name: "none"}}
	ref := func(a string) json.RawMessage { b, _ := json.Marshal([][]string{{a}}); return b }
	samples := []datasets.Sample{{ID: "a", References: ref("7.5")}, {ID: "b", References: ref("12")}}
	type row struct {
		set, id, pred string
		drop, fixed   float64
	}
	rows := []row{
		{"nl", "a", " 7.5", 1, 1}, {"nl", "b", " 12", 1, 1},
		{"dot", "a", " 7", 0, 0}, {"dot", "b", " 12\n\nPassage: Tom scored 3 points", 0, 0.29},
		{"none", "a", " 7.5\n\nPassage: Tom", 0, 0.5}, {"none", "b", " 12\n\nPassage: Ann", 0, 0.5},
	}
	res := generate.Results{"demo": {}}
	for _, r := range rows {
		if res["demo"][r.set] == nil {
			res["demo"][r.set] = map[string][]generate.SampleScore{}
		}
		res["demo"][r.set]["drop.f1"] = append(res["demo"][r.set]["drop.f1"], generate.SampleScore{SampleID: r.id, Value: r.drop, Prediction: r.pred})
		res["demo"][r.set]["drop-fixed.f1"] = append(res["demo"][r.set]["drop-fixed.f1"], generate.SampleScore{SampleID: r.id, Value: r.fixed, Prediction: r.pred})
	}
	got := Summarize("demo", settings, samples, res)
	t.Log(got)
	for _, want := range []string{
		"2 of 2 answers fully right, drop F1 1.00",
		"cut 1 of 1 decimal answers at their point (7.5 → 7): drop F1 on them 1.00 → 0.00 (-1.00)",
		"drop F1 over all questions 0.00 (-1.00",
		"2 of 2 answers ran on into the next passage (\"7.5\\n\\nPassage: …\")",
		"it scored 2 of the 2 run-on number answers 0 (F1 over all questions 0.00",
		"credited 2 of them (F1 0.50)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	if s := Summarize("demo", settings[:2], samples, res); s != "" {
		t.Errorf("summary without a no-stop setting: %q", s)
	}
}
