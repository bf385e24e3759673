#!/usr/bin/env bash
# Start a throwaway Ollama server with a tiny model, for tally's Ollama
# integration tests (backends/ollama, backends/openai, cmd/tally).
#
#   eval "$(scripts/ollama-server.sh)"      # from anywhere
#   ... go test ./...
#   scripts/ollama-stop.sh                  # or: kill "$TALLY_OLLAMA_PID"
#
# (a) builds the Ollama server from its Go module at a pinned version into
#     ${TALLY_CACHE:-$HOME/.cache/tally}/ollama-$VERSION/bin (skipped when the
#     binary is there; minutes, once), (b) starts `ollama serve` on 127.0.0.1
#     at a free port with OLLAMA_MODELS in a temp dir, (c) creates model
#     "tally-tiny" from tally's embedded demo model
#     (backends/ollama/internal/mktestmodel: nothing outside the repository),
#     (d) prints export lines on stdout. Progress goes to stderr.
#
# Every failure ends with exit status 1 and one line on stderr saying why,
# and prints `false` on stdout, so that `eval "$(scripts/ollama-server.sh)"`
# fails too; a server it started is stopped again.
set -Eeuo pipefail
VERSION=${TALLY_OLLAMA_VERSION:-v0.6.5}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${TALLY_CACHE:-$HOME/.cache/tally}
BINDIR=$CACHE/ollama-$VERSION/bin
BIN=$BINDIR/ollama
NAME=${TALLY_OLLAMA_NAME:-tally-tiny}
PID=
DIR=
log() { echo "ollama-server: $*" >&2; }
# fail prints why on stderr (one line), `false` for an eval'ing shell, stops
# what the script started and exits 1.
fail() {
	trap - ERR INT TERM
	log "error: $*"
	echo false
	if [ -n "$PID" ]; then kill "$PID" 2>/dev/null || true; fi
	if [ -n "$DIR" ]; then rm -rf "$DIR"; fi
	exit 1
}
# lastline is the last non-empty line of a log file, for a one-line reason.
lastline() { { grep -v '^[[:space:]]*$' "$1" 2>/dev/null || true; } | tail -1 | cut -c1-300; }
trap 'fail "line $LINENO: \`$BASH_COMMAND\` exited with status $?"' ERR
trap 'fail "interrupted"' INT TERM

t0=$SECONDS
if [ ! -x "$BIN" ]; then
	command -v go >/dev/null 2>&1 || fail "no \`go\` on PATH to build ollama $VERSION with (Go 1.26, see README.md)"
	mkdir -p "$BINDIR" || fail "cannot create $BINDIR"
	BUILDLOG=$CACHE/ollama-$VERSION/build.log
	log "building ollama $VERSION into $BINDIR (takes minutes; log: $BUILDLOG)"
	if ! (cd "${TMPDIR:-/tmp}" && GOBIN="$BINDIR" GOFLAGS=-mod=mod go install "github.com/ollama/ollama@$VERSION") >"$BUILDLOG" 2>&1; then
		fail "building ollama $VERSION failed: $(lastline "$BUILDLOG") (whole log: $BUILDLOG)"
	fi
	[ -x "$BIN" ] || fail "building ollama $VERSION wrote no $BIN (log: $BUILDLOG)"
fi
log "server binary ready in $((SECONDS - t0))s"

DIR=$(mktemp -d "${TMPDIR:-/tmp}/tally-ollama.XXXXXX") || fail "cannot make a temp dir under ${TMPDIR:-/tmp}"
mkdir -p "$DIR/models"
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
PORT=
for _ in $(seq 1 50); do
	p=$((20000 + RANDOM % 40000))
	if port_free "$p"; then PORT=$p; break; fi
done
[ -n "$PORT" ] || fail "no free port found on 127.0.0.1"
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
[ -n "$up" ] || fail "the server did not answer on $HOST: $(lastline "$DIR/serve.log")"
log "server up on $HOST (pid $PID) in $((SECONDS - t1))s"

t2=$SECONDS
if ! (cd "$ROOT" && go run ./backends/ollama/internal/mktestmodel -out "$DIR/model") >"$DIR/model.log" 2>&1; then
	fail "making the test model of the demo model failed: $(lastline "$DIR/model.log")"
fi
# One thread: the model is tiny, and ggml's spinning worker threads thrash
# on a busy 2-core machine (100 tokens: 17 s with the default, 0.03 s with 1).
printf 'FROM %s\nPARAMETER num_thread 1\n' "$DIR/model" >"$DIR/Modelfile"
if ! OLLAMA_HOST=$HOST "$BIN" create "$NAME" -f "$DIR/Modelfile" >"$DIR/create.log" 2>&1; then
	fail "ollama create $NAME failed: $(lastline "$DIR/create.log")"
fi
log "model $NAME created in $((SECONDS - t2))s"

trap - ERR INT TERM
q() { printf '%q' "$1"; }
echo "export OLLAMA_HOST=$(q "$HOST")"
echo "export TALLY_OLLAMA_MODEL=$(q "$NAME")"
echo "export TALLY_OLLAMA_PID=$(q "$PID")"
echo "export TALLY_OLLAMA_DIR=$(q "$DIR")"
echo "export TALLY_OLLAMA_BIN=$(q "$BIN")"
echo "export TALLY_OLLAMA_MODELS=$(q "$DIR/models")"
echo "export TALLY_OLLAMA_MODEL_DIR=$(q "$DIR/model")"
