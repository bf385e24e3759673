#!/usr/bin/env bash
# Start a throwaway PostgreSQL cluster for tally's PostgreSQL tests (store,
# generate, cmd/tally) and print export lines for them.
#
#   eval "$(scripts/postgres-server.sh)"
#   ... go test ./...
#   scripts/postgres-stop.sh               # or: $TALLY_PG_CTL stop
#
# Uses Debian's postgresql package (initdb and pg_ctl under
# /usr/lib/postgresql/VERSION/bin; .ci/run installs it). The cluster lives in
# a temp dir, listens on 127.0.0.1 at a free port and on a Unix socket in
# that dir, trusts local connections, and is owned by the "postgres" user
# when run as root (PostgreSQL refuses to run as root). Progress goes to
# stderr. Prints TALLY_TEST_POSTGRES, the DSN of a superuser connection that
# the tests use to create one database per test.
set -euo pipefail
log() { echo "postgres-server: $*" >&2; }
BIN=${TALLY_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)}
[ -x "$BIN/initdb" ] || { log "initdb not found (install Debian's postgresql package)"; exit 1; }

DIR=$(mktemp -d "${TMPDIR:-/tmp}/tally-pg.XXXXXX")
RUN=()
if [ "$(id -u)" = 0 ]; then
	id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
	chown postgres "$DIR"
	RUN=(runuser -u postgres --)
fi
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
PORT=
for _ in $(seq 1 50); do
	p=$((20000 + RANDOM % 40000))
	if port_free "$p"; then PORT=$p; break; fi
done
[ -n "$PORT" ] || { log "no free port found"; exit 1; }

t0=$SECONDS
"${RUN[@]}" "$BIN/initdb" -D "$DIR/data" -U tally --auth=trust --encoding=UTF8 --locale=C >"$DIR/initdb.log" 2>&1 ||
	{ log "initdb failed:"; tail -20 "$DIR/initdb.log" >&2; exit 1; }
cat >>"$DIR/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $PORT
unix_socket_directories = '$DIR'
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
CONF
"${RUN[@]}" "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/server.log" -w -t 60 start >&2 ||
	{ log "server did not start:"; tail -20 "$DIR/server.log" >&2; exit 1; }
log "server up on 127.0.0.1:$PORT in $((SECONDS - t0))s"

q() { printf '%q' "$1"; }
echo "export TALLY_TEST_POSTGRES=$(q "postgres://tally@127.0.0.1:$PORT/postgres?sslmode=disable")"
echo "export TALLY_PG_DIR=$(q "$DIR")"
echo "export TALLY_PG_CTL=$(q "${RUN[*]} $BIN/pg_ctl -D $DIR/data -w -t 60")"
