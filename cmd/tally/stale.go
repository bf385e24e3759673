package main

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"tally/report"
	"tally/rescore"
)

// noteChecked says on w what the store-only report of ds recomputed and
// what it could not check for staleness, naming tasks by their labels.
func noteChecked(w io.Writer, c *rescore.Checker, ds *report.Dataset) {
	noteRecomputed(w, c.Recomputed(), false)
	tasks := map[string]*report.TaskData{}
	for _, td := range ds.Tasks {
		tasks[td.Task] = td
	}
	unchecked := c.Unchecked()
	for _, t := range slices.Sorted(maps.Keys(unchecked)) {
		td, ok := tasks[t]
		switch {
		case ok && td.Variant != nil && td.Variant.Spec.Legacy != nil && t != td.Name():
			fmt.Fprintf(w, "note: task %s: its %d scores are shown as an earlier tally stored them (this variant's task config was not recorded)\n", td.Label, unchecked[t])
		case ok:
			fmt.Fprintf(w, "note: %d scores of task %s could not be checked for staleness (its task config is not known to this tally)\n", unchecked[t], td.Label)
		default:
			fmt.Fprintf(w, "note: %d scores of task %s could not be checked for staleness (its task config is not known to this tally)\n", unchecked[t], t)
		}
	}
}
