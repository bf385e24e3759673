package generate

import (
	"errors"
	"fmt"

	"tally/scoring"
	"tally/store"
)

// Unscorable is the score stored for a (sample, setting) whose prediction
// the metric's reference cannot score (the reference raises): the run goes
// on, the sample is left out of that metric's mean, and this score (value
// 1) counts such samples.
const Unscorable = "unscorable"

// scoreSetting scores a generation under setting k of its job (dg, when
// not nil, is the sample's digester). A scorer error does not stop the
// run: the pair gets an Unscorable score and warn describes the error;
// but a scorer that can no longer run (scoring.ErrUnavailable: a task's
// Python worker gone) gives no score and fatal, which ends the run.
func scoreSetting(it *Item, g *store.Generation, k int, runID int64, dg *ScoreDigester) (scores []store.Score, warn string, fatal error) {
	set := it.Job.Settings[k]
	budget := it.Job.MaxTokens
	pred, ok, _ := it.truncate(g, set)
	if !ok {
		// The generation still cannot answer (it ended early on a stop that
		// only other settings share); leave it for a continuation.
		return nil, "", nil
	}
	vals, err := it.Job.Score(pred, *it.Sample)
	if errors.Is(err, scoring.ErrUnavailable) {
		return nil, "", fmt.Errorf("score %s under %s: %w", sampleName(it.Sample), set.Name, err)
	}
	if err != nil {
		vals = map[string]float64{Unscorable: 1}
		warn = fmt.Sprintf("%s under %s: %v", sampleName(it.Sample), set.Name, err)
	}
	if dg == nil {
		x := NewScoreDigester(it.Job, it.Sample)
		dg = &x
	}
	digest := dg.Digest(set, budget, pred)
	out := make([]store.Score, 0, len(vals))
	for m, v := range vals {
		out = append(out, store.Score{GenKey: g.Key, Task: it.Sample.Task, SampleID: it.Sample.ID, Setting: set.Name,
			SettingKey: set.Key(), Budget: budget, Metric: m, Value: v, Prediction: pred, RunID: runID, Digest: digest})
	}
	return out, warn, nil
}
