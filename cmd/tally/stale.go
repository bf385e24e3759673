package main

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"tally/rescore"
)

// noteChecked says on w what the store-only report recomputed and what it
// could not check for staleness.
func noteChecked(w io.Writer, c *rescore.Checker) {
	noteRecomputed(w, c.Recomputed(), false)
	unchecked := c.Unchecked()
	for _, t := range slices.Sorted(maps.Keys(unchecked)) {
		fmt.Fprintf(w, "note: %d scores of task %s could not be checked for staleness (its task config is not known to this tally)\n", unchecked[t], t)
	}
}
