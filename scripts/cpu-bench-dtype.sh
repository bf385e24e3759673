#!/usr/bin/env bash
# Cost of each --dtype on the native engine (issue 24): the model of
# scripts/cpu-bench.sh stored as BF16, run by `cpu-bench native` in each
# dtype in turn, ROUNDS times, each run its own process; prints every run
# and each dtype's ratio to the first one per round, with their medians.
# No Ollama: the ratios are between dtypes of the same engine.
#
#   scripts/cpu-bench-dtype.sh [WORKDIR]
#
# Environment: DTYPES (default "auto float32"), WEIGHTS (BF16 or F16,
# default BF16), ROUNDS (default 3), GOEXPERIMENT (default simd).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=${1:-$(mktemp -d "${TMPDIR:-/tmp}/tally-cpu-bench-dtype.XXXXXX")}
DTYPES=${DTYPES:-auto float32}
WEIGHTS=${WEIGHTS:-BF16}
ROUNDS=${ROUNDS:-3}
mkdir -p "$WORK"
export GOEXPERIMENT=${GOEXPERIMENT-simd}
log() { echo "cpu-bench-dtype: $*" >&2; }

(cd "$ROOT" && go build -o "$WORK/cpu-bench" ./scripts/cpu-bench)
"$WORK/cpu-bench" model -out "$WORK/model" -dtype "$WEIGHTS"
files=()
for round in $(seq 1 "$ROUNDS"); do
	for d in $DTYPES; do
		log "round $round: --dtype $d ($WEIGHTS weights, GOEXPERIMENT=$GOEXPERIMENT)"
		"$WORK/cpu-bench" native -model "$WORK/model" -dtype "$d" >"$WORK/$d.$round.json"
		files+=("$WORK/$d.$round.json")
	done
done
"$WORK/cpu-bench" compare "${files[@]}"
