#!/usr/bin/env bash
# Start a throwaway Ollama server with a tiny model, for tally's Ollama
# integration tests (backends/ollama).
#
#   eval "$(scripts/ollama-server.sh)"      # from anywhere; ../shared beside the repo
#   ... go test ./...
#   scripts/ollama-stop.sh                  # or: kill "$TALLY_OLLAMA_PID"
#
# (a) builds the Ollama server from its Go module at a pinned version into
#     ${TALLY_CACHE:-$HOME/.cache/tally}/ollama-$VERSION/bin (skipped when the
#     binary is there), (b) starts `ollama serve` on 127.0.0.1 at a free port
#     with OLLAMA_MODELS in a temp dir, (c) creates model "tally-tiny" from the
#     llama-tiny fixture plus a trained 512-entry tokenizer, (d) prints export
#     lines on stdout. Progress and timings go to stderr.
set -euo pipefail
VERSION=${TALLY_OLLAMA_VERSION:-v0.6.5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${TALLY_CACHE:-$HOME/.cache/tally}
BINDIR=$CACHE/ollama-$VERSION/bin
BIN=$BINDIR/ollama
NAME=${TALLY_OLLAMA_NAME:-tally-tiny}
log() { echo "ollama-server: $*" >&2; }
FIXTURE=$ROOT/../shared/fixtures/models/llama-tiny
if [ ! -d "$FIXTURE" ]; then
	log "needs the reference set's llama-tiny fixture at $FIXTURE (../shared beside the checkout; see README.md, \"Tests and reference data\"); the Ollama tests skip without a server"
	exit 1
fi

t0=$SECONDS
if [ ! -x "$BIN" ]; then
	log "building ollama $VERSION into $BINDIR (takes minutes)"
	mkdir -p "$BINDIR"
	(cd "${TMPDIR:-/tmp}" && GOBIN="$BINDIR" GOFLAGS=-mod=mod go install "github.com/ollama/ollama@$VERSION") >&2
fi
log "server binary ready in $((SECONDS - t0))s"

DIR=$(mktemp -d "${TMPDIR:-/tmp}/tally-ollama.XXXXXX")
mkdir -p "$DIR/models"
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
PORT=
for _ in $(seq 1 50); do
	p=$((20000 + RANDOM % 40000))
	if port_free "$p"; then PORT=$p; break; fi
done
[ -n "$PORT" ] || { log "no free port found"; exit 1; }
HOST=127.0.0.1:$PORT

t1=$SECONDS
OLLAMA_HOST=$HOST OLLAMA_MODELS="$DIR/models" OLLAMA_NUM_PARALLEL=${OLLAMA_NUM_PARALLEL:-4} \
	OLLAMA_KEEP_ALIVE=${OLLAMA_KEEP_ALIVE:-30m} \
	nohup "$BIN" serve </dev/null >"$DIR/serve.log" 2>&1 &
PID=$!
echo "$PID" >"$DIR/serve.pid"
up=
for _ in $(seq 1 300); do
	if OLLAMA_HOST=$HOST "$BIN" list >/dev/null 2>&1; then up=1; break; fi
	kill -0 "$PID" 2>/dev/null || break
	sleep 0.2
done
if [ -z "$up" ]; then
	log "server did not answer on $HOST; log:"; tail -20 "$DIR/serve.log" >&2
	kill "$PID" 2>/dev/null || true
	exit 1
fi
log "server up on $HOST (pid $PID) in $((SECONDS - t1))s"

t2=$SECONDS
(cd "$ROOT" && go run ./backends/ollama/internal/mktestmodel -src "$FIXTURE" -out "$DIR/model") >&2
# One thread: the model is tiny, and ggml's spinning worker threads thrash
# on a busy 2-core machine (100 tokens: 17 s with the default, 0.03 s with 1).
printf 'FROM %s\nPARAMETER num_thread 1\n' "$DIR/model" >"$DIR/Modelfile"
if ! OLLAMA_HOST=$HOST "$BIN" create "$NAME" -f "$DIR/Modelfile" >"$DIR/create.log" 2>&1; then
	log "ollama create failed:"; tail -20 "$DIR/create.log" >&2
	kill "$PID" 2>/dev/null || true
	exit 1
fi
log "model $NAME created in $((SECONDS - t2))s"

q() { printf '%q' "$1"; }
echo "export OLLAMA_HOST=$(q "$HOST")"
echo "export TALLY_OLLAMA_MODEL=$(q "$NAME")"
echo "export TALLY_OLLAMA_PID=$(q "$PID")"
echo "export TALLY_OLLAMA_DIR=$(q "$DIR")"
echo "export TALLY_OLLAMA_BIN=$(q "$BIN")"
echo "export TALLY_OLLAMA_MODELS=$(q "$DIR/models")"
echo "export TALLY_OLLAMA_MODEL_DIR=$(q "$DIR/model")"
