#!/usr/bin/env bash
# gpu-pack.sh: puts into dist/ (ignored by git) what scripts/gpu-check.sh
# needs on a GPU machine that has no Go and cannot reach the reference set:
#
#   dist/tally.xz, dist/gpu-check.xz   CGO_ENABLED=1 go build -trimpath
#       -ldflags '-s -w' (the XLA backend; an ordinary dynamic link against
#       this machine's glibc, which must not be newer than the GPU
#       machine's), compressed with xz
#   dist/shared/   the parts of the reference set the check reads:
#       fixtures/models, the llama3 tokenizer, DROP's data
#
# and checks that the files a device call carries (the working tree git
# does not ignore, plus dist/) stay under its 64 MiB. Then, from the
# checkout the session was started in (the one a device call sends):
#
#   run: command "scripts/gpu-check.sh $OUT", carry ["dist"], timeout_s 540
#
#   scripts/gpu-pack.sh            (SHARED: default $TALLY_REFERENCE, else ../shared)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SHARED=${SHARED:-${TALLY_REFERENCE:-$ROOT/../shared}}
case $SHARED in /*) ;; *) SHARED=$ROOT/$SHARED ;; esac
LIMIT=$((64 << 20))
export GOEXPERIMENT=${GOEXPERIMENT-simd}
log() { echo "gpu-pack: $*" >&2; }

[[ -d $SHARED/fixtures/models ]] || { log "no reference set at $SHARED (set TALLY_REFERENCE or SHARED)"; exit 1; }
mkdir -p dist
for target in tally:./cmd/tally gpu-check:./scripts/gpu-check; do
	name=${target%%:*} pkg=${target#*:}
	log "building $name (CGO, XLA backend)"
	CGO_ENABLED=1 go build -trimpath -ldflags '-s -w' -o "dist/$name" "$pkg"
	if ldd "dist/$name" 2>&1 | grep -q 'not found'; then
		log "dist/$name links a library this machine lacks:"; ldd "dist/$name" >&2; exit 1
	fi
	xz -T0 -6 -f "dist/$name" # leaves dist/$name.xz
done
glibc=$(ldd --version 2>/dev/null | head -1 | grep -o '[0-9.]*$' || true)
log "built against glibc ${glibc:-unknown} (the GPU machine needs this or newer)"

[[ -d dist/shared ]] && chmod -R u+w dist/shared && rm -rf dist/shared
mkdir -p dist/shared/fixtures/tokenizers/llama3 dist/shared/data/drop
cp -r --no-preserve=mode "$SHARED/fixtures/models" dist/shared/fixtures/
cp --no-preserve=mode "$SHARED"/fixtures/tokenizers/llama3/tokenizer.json.gz "$SHARED"/fixtures/tokenizers/llama3/tokenizer_config.json \
	dist/shared/fixtures/tokenizers/llama3/
cp --no-preserve=mode "$SHARED"/data/drop/drop_dataset_dev.subset.json dist/shared/data/drop/

tree=$(git ls-files -z -co --exclude-standard | xargs -0 -r stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
dist=$(du -sb dist | cut -f1)
total=$((tree + dist))
ls -l dist >&2
log "carried: working tree $((tree >> 20)) MiB + dist/ $((dist >> 20)) MiB = $((total >> 20)) MiB of 64 MiB"
if ((total > LIMIT)); then
	log "over the 64 MiB a device call carries: leave something out"
	exit 1
fi
