#!/usr/bin/env bash
# Stop the cluster scripts/postgres-server.sh started and remove its temp
# dir. Reads TALLY_PG_CTL and TALLY_PG_DIR; does nothing when unset.
set -u
if [ -n "${TALLY_PG_CTL:-}" ]; then
	$TALLY_PG_CTL -m immediate stop >/dev/null 2>&1 || true
fi
case "${TALLY_PG_DIR:-}" in
*/tally-pg.*) rm -rf "$TALLY_PG_DIR" ;;
esac
