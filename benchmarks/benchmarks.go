// Package benchmarks links every built-in benchmark into a program: each
// blank import below runs a package's init, which registers its loader
// (tally/datasets.RegisterLoader) or its metrics (tally/scoring.Register).
// Adding a benchmark means its own packages under datasets/ and scoring/,
// its task YAML under tasks/builtin/, and one import line here.
package benchmarks

import (
	_ "tally/datasets/countingstars" // loader counting-stars
	_ "tally/datasets/drop"          // loader drop
	_ "tally/datasets/jsonl"         // loader jsonl
	_ "tally/datasets/judge"         // loaders pairwise-judge, 3c3h-judge
	_ "tally/datasets/leval"         // loader leval
	_ "tally/scoring/countingstars"  // counting-stars
	_ "tally/scoring/drop"           // drop, drop-fixed, drop-answers, drop-normalize
	_ "tally/scoring/judge"          // judge-preference, kappa, pairwise, self-preference
	_ "tally/scoring/leval"          // leval
	_ "tally/scoring/rouge"          // rouge
	_ "tally/scoring/textmatch"      // exact_match, f1
	_ "tally/scoring/threec3h"       // 3c3h, 3c3h-jury, 3c3h-extract, 3c3h-file
	_ "tally/scoring/winrate"        // alpaca-winrate
)
