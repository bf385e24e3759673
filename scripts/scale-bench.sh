#!/usr/bin/env bash
# tally plan, rescore and report --format html on a store of 200,000
# generations (20 tasks of 10,000 demo-style samples, 2.4 million scores;
# issue 23, finding 9), with the code at BASE and with the working tree, in
# one run: ratios come from the same machine at the same time.
#
#   scripts/scale-bench.sh [BASE [WORKDIR]]     (BASE: a commit, default main)
#
# (a) exports BASE into WORKDIR/base and adds the working tree's
#     cmd/tally/scale_bench_test.go to it (and, to a BASE without variants,
#     a scaleVariant that stores tasks by name);
# (b) builds the store once with BASE (BenchmarkScaleStore; a few minutes)
#     and gives each side its own copy of it (the working tree's copy
#     migrated to its schema first, by a rescore that writes nothing);
# (c) runs BenchmarkScalePlan (the prompt keys of an earlier plan kept)
#     and BenchmarkScalePlanCold (none kept) for each side in turn (ROUNDS
#     times, default 2), BenchmarkHTMLScale once (the working tree's
#     benchmark, measuring BASE's binary on BASE's copy beside its own on
#     its migrated copy), then
#     BenchmarkScaleRescore once each on a fresh copy;
# (d) prints wall seconds, CPU seconds (all cores) and peak RSS of the tally
#     process per side, and the ratios working tree / BASE.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BASE=${1:-main}
WORK=${2:-$(mktemp -d "${TMPDIR:-/tmp}/tally-scale-bench.XXXXXX")}
ROUNDS=${ROUNDS:-2}
export GOEXPERIMENT=${GOEXPERIMENT-simd}
log() { echo "scale-bench: $*" >&2; }

mkdir -p "$WORK/base" "$WORK/store"
if [ ! -e "$WORK/base/go.mod" ]; then
	git -C "$ROOT" archive "$BASE" | tar -x -C "$WORK/base"
fi
cp "$ROOT/cmd/tally/scale_bench_test.go" "$WORK/base/cmd/tally/"
if [ ! -e "$WORK/base/cmd/tally/scale_variant_test.go" ]; then
	# BASE predates variants: its tasks are stored by name (see
	# scaleVariant in cmd/tally/scale_variant_test.go).
	cat >"$WORK/base/cmd/tally/scale_variant_test.go" <<'GO'
package main

import "testing"

func scaleVariant[S, C, L any](b *testing.B, st S, cfg C, loaded L, spec, name string) string { return name }
GO
fi
if [ ! -e "$WORK/store/scale.db" ]; then
	log "building the store with $BASE in $WORK/store"
	(cd "$WORK/base" && TALLY_BENCH_SCALE="$WORK/store" go test ./cmd/tally/ -run '^$' -bench '^BenchmarkScaleStore$' -benchtime 1x -timeout 60m >/dev/null)
fi

# copy SIDE: a fresh copy of the store (and its task files) for one side.
copy() {
	rm -rf "$WORK/$1"
	mkdir -p "$WORK/$1"
	cp "$WORK"/store/scale* "$WORK/$1/"
	rm -f "$WORK/$1"/scale.db-*
	# The task files name their data by absolute path: point them here.
	sed -i "s|$WORK/store/|$WORK/$1/|" "$WORK/$1"/*.yaml
}

# bench SIDE DIR NAME: run benchmark NAME of the tree DIR on SIDE's copy.
bench() {
	(cd "$2" && TALLY_BENCH_SCALE="$WORK/$1" go test ./cmd/tally/ -run '^$' -bench "^$3\$" -benchtime 1x -timeout 60m) |
		awk -v side="$1" -v name="$3" '$1 ~ /^Benchmark/ { for (i = 3; i < NF; i += 2) printf "%s %s %s %s\n", name, side, $(i+1), $i }'
}

# upgrade SIDE DIR: migrate SIDE's copy to the schema of the tree DIR, as
# the first writing command of a user's upgraded tally does (read-only
# commands such as plan read an older schema as it is): a rescore, which
# finds every score current and writes none.
upgrade() {
	(cd "$2" && go build -o "$WORK/tally-$1" ./cmd/tally)
	# Exit status 3: the store's failed samples (1%) count as 0.
	"$WORK/tally-$1" rescore --model demo --tasks "$(ls "$WORK/$1"/scale*.yaml | paste -sd, -)" --store "$WORK/$1/scale.db" >/dev/null 2>&1 || [ $? -eq 3 ]
}

results=$WORK/results.txt
: >"$results"
copy old
copy new
log "migrating the working tree's copy"
upgrade new "$ROOT"
for round in $(seq "$ROUNDS"); do
	log "plan, round $round"
	for b in BenchmarkScalePlan BenchmarkScalePlanCold; do
		bench old "$WORK/base" $b >>"$results"
		bench new "$ROOT" $b >>"$results"
	done
done
log "report --format html"
(cd "$WORK/base" && go build -o "$WORK/tally-base" ./cmd/tally)
(cd "$ROOT" && TALLY_BENCH_SCALE="$WORK/new" TALLY_BASELINE_BIN="$WORK/tally-base" TALLY_BASELINE_STORE="$WORK/old/scale.db" go test ./cmd/tally/ -run '^$' -bench '^BenchmarkHTMLScale$' -benchtime 1x -timeout 60m) |
	awk '$1 ~ /^Benchmark/ { for (i = 3; i < NF; i += 2) { m = $(i+1); side = "new"; if (m ~ /^baseline-/) { side = "old"; sub(/^baseline-/, "", m) }; printf "BenchmarkHTMLScale %s %s %s\n", side, m, $i } }' >>"$results"
log "rescore"
copy old
bench old "$WORK/base" BenchmarkScaleRescore >>"$results"
copy new
upgrade new "$ROOT"
bench new "$ROOT" BenchmarkScaleRescore >>"$results"

echo "$BASE (old) against the working tree (new); plan: mean of $ROUNDS runs"
awk '{ sum[$1" "$3" "$2] += $4; n[$1" "$3" "$2]++ }
	END {
		printf "%-22s %-12s %10s %10s %10s\n", "benchmark", "metric", "old", "new", "new/old"
		for (k in sum) {
			split(k, f, " ")
			if (f[3] != "old") continue
			o = sum[k] / n[k]; kn = f[1]" "f[2]" new"; nw = sum[kn] / n[kn]
			printf "%-22s %-12s %10.2f %10.2f %10.3f\n", f[1], f[2], o, nw, (o > 0 ? nw / o : 0)
		}
	}' "$results" | sort
