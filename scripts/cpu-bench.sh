#!/usr/bin/env bash
# CPU speed of tally's native engine against Ollama on the same weights
# (issue 16). Prints one table; ratios come from one run.
#
#   scripts/cpu-bench.sh [WORKDIR]
#
# (a) builds scripts/cpu-bench with GOEXPERIMENT=simd (override by setting
#     GOEXPERIMENT yourself, e.g. GOEXPERIMENT= for the portable kernels),
# (b) writes a random 76M-parameter Llama (hidden 768, 12 layers, F16
#     safetensors, 512-entry tokenizer) into WORKDIR/model,
# (c) builds the anchor: Ollama v0.6.5 from its Go module with
#     CGO_CFLAGS/CGO_CXXFLAGS=-O3 -march=native (as an installed Ollama's CPU
#     backend runs), once per CPU model, into
#     ${TALLY_CACHE:-~/.cache/tally}/ollama-v0.6.5-native-<cpu>/bin,
# (d) runs the same prompts through tally's native engine (its own process)
#     and an Ollama server (OLLAMA_NUM_PARALLEL=8) with the model created in it,
# (e) prints prefill/decode tok/s at batch 1 and 8, peak RSS, and decode as a
#     share of the measured memory-bandwidth roofline.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VERSION=v0.6.5
CACHE=${TALLY_CACHE:-$HOME/.cache/tally}
WORK=${1:-$(mktemp -d "${TMPDIR:-/tmp}/tally-cpu-bench.XXXXXX")}
mkdir -p "$WORK"
export GOEXPERIMENT=${GOEXPERIMENT-simd}
log() { echo "cpu-bench: $*" >&2; }

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//; s/[^A-Za-z0-9]\{1,\}/-/g; s/-$//')
BINDIR=$CACHE/ollama-$VERSION-native-${cpu:-unknown}/bin
BIN=$BINDIR/ollama
if [ ! -x "$BIN" ]; then
	log "building ollama $VERSION with -O3 -march=native into $BINDIR (takes minutes)"
	mkdir -p "$BINDIR"
	(cd "${TMPDIR:-/tmp}" && GOEXPERIMENT= CGO_ENABLED=1 CGO_CFLAGS="-O3 -march=native" CGO_CXXFLAGS="-O3 -march=native" \
		GOBIN="$BINDIR" GOFLAGS=-mod=mod go install "github.com/ollama/ollama@$VERSION") >&2
fi

(cd "$ROOT" && go build -o "$WORK/cpu-bench" ./scripts/cpu-bench)
"$WORK/cpu-bench" model -out "$WORK/model"
log "native engine (GOEXPERIMENT=$GOEXPERIMENT)"
"$WORK/cpu-bench" native -model "$WORK/model" >"$WORK/native.json"

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
PORT=
for _ in $(seq 1 50); do
	p=$((20000 + RANDOM % 40000))
	if port_free "$p"; then PORT=$p; break; fi
done
[ -n "$PORT" ] || { log "no free port"; exit 1; }
export OLLAMA_HOST=127.0.0.1:$PORT
mkdir -p "$WORK/ollama-models"
OLLAMA_MODELS="$WORK/ollama-models" OLLAMA_NUM_PARALLEL=8 OLLAMA_KEEP_ALIVE=30m \
	"$BIN" serve </dev/null >"$WORK/serve.log" 2>&1 &
PID=$!
trap 'kill "$PID" 2>/dev/null || true' EXIT
for _ in $(seq 1 300); do
	"$BIN" list >/dev/null 2>&1 && break
	kill -0 "$PID" 2>/dev/null || { log "ollama serve died:"; tail -20 "$WORK/serve.log" >&2; exit 1; }
	sleep 0.2
done
printf 'FROM %s\n' "$WORK/model" >"$WORK/Modelfile"
"$BIN" create cpu-bench -f "$WORK/Modelfile" >"$WORK/create.log" 2>&1 || { log "ollama create failed:"; tail -20 "$WORK/create.log" >&2; exit 1; }
log "Ollama $VERSION ($BIN)"
"$WORK/cpu-bench" ollama -model "$WORK/model" -name cpu-bench -pid "$PID" >"$WORK/ollama.json"
"$WORK/cpu-bench" report -model "$WORK/model" "$WORK/native.json" "$WORK/ollama.json"
