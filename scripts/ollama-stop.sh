#!/usr/bin/env bash
# Stop the server scripts/ollama-server.sh started and remove its temp dir.
# Reads TALLY_OLLAMA_PID and TALLY_OLLAMA_DIR; does nothing when unset.
set -u
if [ -n "${TALLY_OLLAMA_PID:-}" ]; then
	kill "$TALLY_OLLAMA_PID" 2>/dev/null || true
	for _ in $(seq 1 50); do kill -0 "$TALLY_OLLAMA_PID" 2>/dev/null || break; sleep 0.1; done
fi
case "${TALLY_OLLAMA_DIR:-}" in
*/tally-ollama.*) rm -rf "$TALLY_OLLAMA_DIR" ;;
esac
