#!/usr/bin/env bash
# CPU speed of tally's native engine against Ollama on the same weights
# (issues 16 and 36). Prints one table; ratios come from one run.
#
#   scripts/cpu-bench.sh [WORKDIR]
#
# (a) builds scripts/cpu-bench with GOEXPERIMENT=simd (override by setting
#     GOEXPERIMENT yourself, e.g. GOEXPERIMENT= for the portable kernels),
# (b) writes a random 76M-parameter Llama (hidden 768, 12 layers, 32k
#     context, 512-entry tokenizer) as F16 and as BF16 safetensors into
#     WORKDIR/model-F16 and WORKDIR/model-BF16,
# (c) builds the anchor: Ollama v0.6.5 from its Go module with
#     CGO_CFLAGS/CGO_CXXFLAGS=-O3 -march=$OLLAMA_MARCH, once per CPU model
#     and -march, into ${TALLY_CACHE:-~/.cache/tally}/ollama-v0.6.5-<march>-<cpu>/bin.
#     -march defaults to native (as an installed Ollama's CPU backend
#     runs); with GOMLX_SIMD_AVX512=false on a CPU that has AVX-512 (tally
#     imitating an AVX2 machine) it defaults to x86-64-v3 (AVX2, FMA, F16C:
#     what -march=native gives on an AVX2 machine), so both sides imitate it,
# (d) for each checkpoint runs the same prompts through tally's native
#     engine (its own process per phase and round) and an Ollama server
#     with the model created in it (one server per phase): the short phase
#     (8 prompts of 270 tokens one at a time and 8 at once, 128 new tokens;
#     OLLAMA_NUM_PARALLEL=8), then the long phase (one prompt of 4,096 and
#     one of 16,384 tokens at batch 1, 16 new tokens each;
#     OLLAMA_NUM_PARALLEL=1, num_ctx 16,416). Each phase runs ROUNDS times,
#     the two engines in turn and in alternating order (tally first in odd
#     rounds), so that load from other work on the machine falls on both,
# (e) prints one Markdown table: prefill/decode tok/s and peak RSS of each
#     engine (medians of the rounds) and each ratio of tally to Ollama
#     (the median of the rounds' ratios, each round's in brackets), then
#     the kernels each side ran (tally's kernel family and products' dtype;
#     the CPU features ggml reports and the weights' type it loaded: Ollama
#     v0.6.5 converts a BF16 checkpoint's matrices to F16).
#
# Environment: WEIGHTS (default "F16 BF16"), PHASES (default "short long"),
# ROUNDS (default 1; a round of both phases and checkpoints takes 5
# minutes with AVX-512 and 7 with AVX2 on a quiet 2-core machine, 15 or
# more on a loaded one), OLLAMA_MARCH (see (c)), DTYPE (tally's --dtype,
# default auto), GOMLX_SIMD_AVX512=false / GOMLX_SIMD_AVX2=false (tally's
# kernels, see docs/speed.md).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VERSION=v0.6.5
CACHE=${TALLY_CACHE:-$HOME/.cache/tally}
WORK=${1:-$(mktemp -d "${TMPDIR:-/tmp}/tally-cpu-bench.XXXXXX")}
WEIGHTS=${WEIGHTS:-F16 BF16}
PHASES=${PHASES:-short long}
ROUNDS=${ROUNDS:-1}
DTYPE=${DTYPE:-auto}
mkdir -p "$WORK"
export GOEXPERIMENT=${GOEXPERIMENT-simd}
log() { echo "cpu-bench: $*" >&2; }

if [ -z "${OLLAMA_MARCH:-}" ] && [ "${GOMLX_SIMD_AVX512:-}" = false ] && grep -qw avx512f /proc/cpuinfo; then
	OLLAMA_MARCH=x86-64-v3
	log "GOMLX_SIMD_AVX512=false on an AVX-512 CPU: the anchor Ollama is built with -march=x86-64-v3 (AVX2)"
fi
MARCH=${OLLAMA_MARCH:-native}
cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//; s/[^A-Za-z0-9]\{1,\}/-/g; s/-$//')
BINDIR=$CACHE/ollama-$VERSION-$MARCH-${cpu:-unknown}/bin
BIN=$BINDIR/ollama
if [ ! -x "$BIN" ]; then
	log "building ollama $VERSION with -O3 -march=$MARCH into $BINDIR (takes minutes)"
	mkdir -p "$BINDIR"
	(cd "${TMPDIR:-/tmp}" && GOEXPERIMENT= CGO_ENABLED=1 CGO_CFLAGS="-O3 -march=$MARCH" CGO_CXXFLAGS="-O3 -march=$MARCH" \
		GOBIN="$BINDIR" GOFLAGS=-mod=mod go install "github.com/ollama/ollama@$VERSION") >&2
fi

(cd "$ROOT" && go build -o "$WORK/cpu-bench" ./scripts/cpu-bench)

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
PID=
trap 'if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; fi' EXIT
# serve PARALLEL starts an Ollama server with OLLAMA_NUM_PARALLEL=PARALLEL
# on a free port; its pid is $PID, its log $WORK/serve.log.
serve() {
	local p port=
	for _ in $(seq 1 50); do
		p=$((20000 + RANDOM % 40000))
		if port_free "$p"; then port=$p; break; fi
	done
	[ -n "$port" ] || { log "no free port"; exit 1; }
	export OLLAMA_HOST=127.0.0.1:$port
	mkdir -p "$WORK/ollama-models"
	OLLAMA_MODELS="$WORK/ollama-models" OLLAMA_NUM_PARALLEL=$1 OLLAMA_KEEP_ALIVE=30m \
		"$BIN" serve </dev/null >"$WORK/serve.log" 2>&1 &
	PID=$!
	for _ in $(seq 1 300); do
		"$BIN" list >/dev/null 2>&1 && return
		kill -0 "$PID" 2>/dev/null || { log "ollama serve died:"; tail -20 "$WORK/serve.log" >&2; exit 1; }
		sleep 0.2
	done
	log "ollama serve did not start"
	exit 1
}
unserve() {
	kill "$PID" 2>/dev/null || true
	wait "$PID" 2>/dev/null || true
	PID=
}

files=()
# native W PHASE ROUND and ollama W PHASE ROUND measure one engine once.
native() {
	log "$1, $2 phase, round $3: native engine (GOEXPERIMENT=$GOEXPERIMENT, --dtype $DTYPE)"
	"$WORK/cpu-bench" native -model "$WORK/model-$1" -dtype "$DTYPE" -phase "$2" >"$WORK/native-$1-$2-$3.json"
	files+=("$WORK/native-$1-$2-$3.json")
}
ollama() {
	log "$1, $2 phase, round $3: Ollama $VERSION ($BIN)"
	"$WORK/cpu-bench" ollama -model "$WORK/model-$1" -name "$NAME" -pid "$PID" -phase "$2" -log "$WORK/serve.log" >"$WORK/ollama-$1-$2-$3.json"
	files+=("$WORK/ollama-$1-$2-$3.json")
}
start=$SECONDS
for w in $WEIGHTS; do
	"$WORK/cpu-bench" model -out "$WORK/model-$w" -dtype "$w"
	NAME=cpu-bench-$(echo "$w" | tr 'A-Z' 'a-z')
	for phase in $PHASES; do
		parallel=8
		[ "$phase" = long ] && parallel=1
		serve "$parallel"
		if ! "$BIN" show "$NAME" >/dev/null 2>&1; then
			printf 'FROM %s\n' "$WORK/model-$w" >"$WORK/Modelfile-$w"
			"$BIN" create "$NAME" -f "$WORK/Modelfile-$w" >"$WORK/create-$w.log" 2>&1 || { log "ollama create failed:"; tail -20 "$WORK/create-$w.log" >&2; exit 1; }
		fi
		for round in $(seq 1 "$ROUNDS"); do
			if [ $((round % 2)) = 1 ]; then
				native "$w" "$phase" "$round"
				ollama "$w" "$phase" "$round"
			else
				ollama "$w" "$phase" "$round"
				native "$w" "$phase" "$round"
			fi
		done
		cp "$WORK/serve.log" "$WORK/serve-$w-$phase.log"
		unserve
	done
done
log "measured in $((SECONDS - start)) s; results in $WORK"
"$WORK/cpu-bench" report -model "$WORK/model-${WEIGHTS%% *}" "${files[@]}" | tee "$WORK/report.md"
