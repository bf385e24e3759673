#!/usr/bin/env bash
# gpu-check.sh: the prepared GPU run of issue 25 (docs/gpu.md). On a CUDA
# machine with no Go and no network it takes prebuilt binaries (made by
# scripts/gpu-pack.sh into dist/), finds JAX's PJRT plugin, and runs, in
# this order, each step under its own time limit inside one total budget:
#
#   device     nvidia-smi, and hf.py's measured copy bandwidth and bf16 peak
#   parity     every fixture model under --dtype float32 (TF32 off) and
#              bfloat16 against transformers' float32 logits and greedy ids
#   weights-1b a random bf16 Llama-3.2-1B-shaped checkpoint (llama3 tokenizer)
#   drop       tally run of DROP on it with two stop settings, tally report,
#              and the same run again (answers from storage: 0 generated)
#   bench-1b-tally, bench-1b-hf   throughput, tally vs transformers generate
#   weights-8b a random bf16 Llama-3.1-8B-shaped checkpoint
#   bench-8b-tally, bench-8b-hf   the same on the 8B shape
#   long       one 32,768-token prompt on the 8B shape: the plan tally prints
#              first, and the peak GPU memory the run took
#
# A failing step is recorded with its log's tail and the next one runs. It
# writes OUTDIR/gpu-check.md (the targets table first), OUTDIR/gpu-check.json
# and OUTDIR/gpu-check-logs.tar.gz (every step's log and result file).
#
#   scripts/gpu-check.sh OUTDIR
#
# Environment (all optional):
#   DRYRUN=1        the same steps on the CPU (--device cpu), tiny shapes and
#                   few tokens: checks everything but the GPU itself
#   BUDGET_S=420    total seconds for the steps (each step also has a limit)
#   STEPS=...       comma-separated steps to run (default: all, in order;
#                   weights-1b/weights-8b run when a step needs them)
#   TALLY_BIN, GPU_CHECK_BIN   the binaries (default: dist/tally[.xz],
#                   dist/gpu-check[.xz], unpacked into the work folder)
#   SHARED          the reference set's folder (default: $TALLY_REFERENCE,
#                   dist/shared, shared, ../shared: fixtures/models, the
#                   llama3 tokenizer, DROP)
#   XLA_PLUGIN      the PJRT CUDA plugin (default: JAX's xla_cuda_plugin.so,
#                   found through python3)
#   CUDA_DATA_DIR   the folder with bin/ptxas and nvvm/libdevice (default:
#                   /usr/local/cuda, or where ptxas is)
#   XLA_DUMP=REGEX  also dump the HLO of the XLA modules matching REGEX into
#                   the logs archive (the profile behind a missed target)
#   HF_CACHES=dynamic   transformers cache implementations to time (add
#                   static for its compiled static cache: slow to compile)
#   PYTHON=python3, WORK (default: /dev/shm when it has room for the 8B
#                   checkpoint, else $TMPDIR), KEEP_WORK=1 keeps it
#   NEW=128         new tokens per prompt in the throughput runs
#
# Exit status: 0 when every step that ran passed, 1 otherwise (the report is
# written either way).
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:?usage: scripts/gpu-check.sh OUTDIR}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)
T0=$(date +%s)
export DRYRUN=${DRYRUN:-0}
export BUDGET_S=${BUDGET_S:-420}
export PYTHON=${PYTHON:-python3}
export NEW=${NEW:-128}
export HF_CACHES=${HF_CACHES:-dynamic}
ALL_STEPS=device,parity,weights-1b,drop,bench-1b-tally,bench-1b-hf,weights-8b,bench-8b-tally,bench-8b-hf,long
STEPS=${STEPS:-$ALL_STEPS}
MIN_STEP_S=10
HF="$ROOT/scripts/gpu-check/hf.py"
export HF

log() { echo "gpu-check: $*" >&2; }

# --- the configuration: GPU shapes, or tiny ones for the dry run ---------
if [[ $DRYRUN == 1 ]]; then
	export DEVICE=cpu SHAPE_1B=tiny SHAPE_8B=tiny
	export CONFIGS_1B=1x16,2x64 CONFIGS_8B=1x32,2x32 LONG_TOKENS=1000
	export PARITY_PROMPTS=5 DROP_LIMIT=8 NEW=8
else
	export DEVICE=cuda SHAPE_1B=llama-1b SHAPE_8B=llama-8b
	export CONFIGS_1B=1x512,8x512,32x512,1x4096,8x4096,32x4096
	export CONFIGS_8B=$CONFIGS_1B LONG_TOKENS=32768
	export PARITY_PROMPTS=0 DROP_LIMIT=0
fi

# --- the work folder -----------------------------------------------------
if [[ -z ${WORK:-} ]]; then
	shm=$(df -B1 --output=avail /dev/shm 2>/dev/null | tail -1 | tr -d ' ')
	if [[ $DRYRUN != 1 && ${shm:-0} -gt $((40 << 30)) ]]; then
		WORK=/dev/shm/gpu-check.$$
	else
		WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
	fi
	MADE_WORK=1
fi
export WORK RES=$WORK/results MODELS=$WORK/models
mkdir -p "$WORK/steps" "$RES" "$WORK/logs" "$WORK/bin" "$MODELS" "$WORK/cache"
export XDG_CACHE_HOME=$WORK/cache # tally's fingerprint cache
cleanup() {
	rm -rf "$MODELS"
	if [[ ${MADE_WORK:-0} == 1 && ${KEEP_WORK:-0} != 1 ]]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

# --- binaries: given, or from dist/ (xz-compressed by gpu-pack.sh) --------
unpack() { # unpack NAME: prints the path of an executable NAME
	local name=$1 d="$ROOT/dist"
	if [[ -x $d/$name ]]; then
		echo "$d/$name"
	elif [[ -f $d/$name.xz ]]; then
		if command -v xz >/dev/null; then
			xz -dc "$d/$name.xz" >"$WORK/bin/$name" || return 1
		else # python's lzma reads .xz too
			"$PYTHON" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$d/$name.xz" "$WORK/bin/$name" || return 1
		fi
		chmod +x "$WORK/bin/$name" && echo "$WORK/bin/$name"
	else
		return 1
	fi
}
TALLY=${TALLY_BIN:-$(unpack tally)} || { log "no tally binary: set TALLY_BIN or run scripts/gpu-pack.sh"; exit 2; }
GC=${GPU_CHECK_BIN:-$(unpack gpu-check)} || { log "no gpu-check binary: set GPU_CHECK_BIN or run scripts/gpu-pack.sh"; exit 2; }
export TALLY GC

# --- the reference set: fixtures, the llama3 tokenizer, DROP --------------
for d in ${SHARED:-} ${TALLY_REFERENCE:-} "$ROOT/dist/shared" "$ROOT/shared" "$ROOT/../shared"; do
	if [[ -d $d/fixtures/models ]]; then SHARED=$(cd "$d" && pwd); break; fi
done
export SHARED=${SHARED:-}
export FIXTURES=$SHARED/fixtures/models
export TOKENIZER=$SHARED/fixtures/tokenizers/llama3/tokenizer.json.gz
export DROP=$SHARED/data/drop/drop_dataset_dev.subset.json

# --- the GPU: the plugin, XLA's CUDA folder, the free memory --------------
find_plugin() {
	if [[ -n ${XLA_PLUGIN:-} ]]; then echo "$XLA_PLUGIN"; return; fi
	"$PYTHON" - <<-'EOF' 2>/dev/null && return
	import importlib.util, os, sys
	for name in ("jax_plugins.xla_cuda13", "jax_plugins.xla_cuda12"):
	    try:
	        spec = importlib.util.find_spec(name)
	    except Exception:
	        continue
	    for d in (spec.submodule_search_locations or []) if spec else []:
	        f = os.path.join(d, "xla_cuda_plugin.so")
	        if os.path.isfile(f):
	            print(os.path.realpath(f))
	            sys.exit(0)
	sys.exit(1)
	EOF
	local f
	for f in /opt/*/.venv/lib/python3*/site-packages/jax_plugins/xla_cuda1*/xla_cuda_plugin.so \
		/usr/local/lib/python3*/dist-packages/jax_plugins/xla_cuda1*/xla_cuda_plugin.so \
		"$HOME"/.local/lib/go-xla/nvidia/pjrt_c_api_cuda_plugin.so; do
		if [[ -f $f ]]; then readlink -f "$f"; return; fi
	done
	return 1
}
find_cuda_dir() {
	local d ptxas
	ptxas=$(command -v ptxas 2>/dev/null) && ptxas=$(dirname "$(dirname "$(readlink -f "$ptxas")")")
	for d in ${CUDA_DATA_DIR:-} /usr/local/cuda $ptxas /usr/local/cuda-13*; do
		if [[ -x $d/bin/ptxas && -f $d/nvvm/libdevice/libdevice.10.bc ]]; then echo "$d"; return; fi
	done
	return 1
}
SETUP_NOTE=
[[ -n $SHARED ]] || SETUP_NOTE+="no reference set (fixtures/models) in SHARED, TALLY_REFERENCE, dist/shared, shared or ../shared: parity, weights and drop fail; "
"$TALLY" version >/dev/null 2>&1 || SETUP_NOTE+="$TALLY does not run here ($(ldd "$TALLY" 2>&1 | grep -m1 'not found\|GLIBC' || echo 'see its log')); "
if [[ $DEVICE == cuda ]]; then
	PLUGIN=$(find_plugin) || { PLUGIN=; SETUP_NOTE+="no PJRT CUDA plugin found (set XLA_PLUGIN); "; }
	CUDA_DIR=$(find_cuda_dir) || { CUDA_DIR=/usr/local/cuda; SETUP_NOTE+="no folder with bin/ptxas and nvvm/libdevice found (set CUDA_DATA_DIR); "; }
	export GOMLX_NO_AUTO_INSTALL=1
	export GOMLX_BACKEND=xla:$PLUGIN
	XLA_FLAGS="--xla_gpu_cuda_data_dir=$CUDA_DIR"
	if [[ -n ${XLA_DUMP:-} ]]; then
		XLA_FLAGS+=" --xla_dump_to=$WORK/logs/xla-dump --xla_dump_hlo_as_text --xla_dump_hlo_module_re=$XLA_DUMP"
	fi
	export XLA_FLAGS
	free_mib=$(nvidia-smi --query-gpu=memory.total,memory.used --format=csv,noheader,nounits -i 0 2>/dev/null | awk -F', *' '{print $1 - $2}')
	export DEVICE_MEMORY=$(((${free_mib:-0} > 0 ? free_mib : 79 * 1024) << 20))
else
	export DEVICE_MEMORY=$((4 << 30))
fi

{
	echo "dryrun=$DRYRUN"
	echo "device=$DEVICE"
	echo "budget_s=$BUDGET_S"
	echo "steps=$STEPS"
	echo "tally_version=$("$TALLY" version 2>/dev/null | head -1)"
	echo "gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader -i 0 2>/dev/null || echo none)"
	echo "device_memory_bytes=$DEVICE_MEMORY"
	echo "new_tokens=$NEW"
	echo "long_tokens=$LONG_TOKENS"
	echo "shapes=$SHAPE_1B (DROP, 1B throughput), $SHAPE_8B (8B throughput, long context)"
	[[ $DEVICE == cuda ]] && echo "gomlx_backend=$GOMLX_BACKEND" && echo "xla_flags=$XLA_FLAGS"
	[[ -n $SETUP_NOTE ]] && echo "setup_problem=$SETUP_NOTE"
	echo "shared=$SHARED"
	echo "work=$WORK"
} >"$RES/env.txt"
[[ -n $SETUP_NOTE ]] && log "setup: $SETUP_NOTE"
# The setup is the first row of the steps table.
setup_status=ok
[[ -n $SETUP_NOTE ]] && setup_status=failed
if ! "$GC" step -name setup -status "$setup_status" -note "${SETUP_NOTE:-binaries, reference set and GPU settings found}" \
	-out "$WORK/steps/00-setup.json"; then
	log "the gpu-check binary does not run here:"
	ldd "$GC" >&2
	exit 2
fi

# --- the steps -----------------------------------------------------------
do_device() {
	nvidia-smi || echo "no nvidia-smi"
	"$PYTHON" "$HF" device "$RES/device.json"
}
do_parity() {
	"$GC" parity -fixtures "$FIXTURES" -device "$DEVICE" -dtypes float32,bfloat16 -prompts "$PARITY_PROMPTS" -out "$RES/parity.jsonl"
}
do_weights() { # do_weights SHAPE
	rm -rf "${MODELS:?}/$1"
	"$GC" weights -shape "$1" -out "$MODELS/$1" -tokenizer "$TOKENIZER" && du -sh "$MODELS/$1"
}
do_drop() {
	local limit=() rc=0
	[[ $DROP_LIMIT -gt 0 ]] && limit=(--limit "$DROP_LIMIT")
	local args=(--model "$MODELS/$SHAPE_1B" --device "$DEVICE" --tasks drop --data "$DROP"
		--store "$WORK/drop.db" --stop dot=. --stop 'nl=\n' "${limit[@]}")
	# --device-memory plans the model work of run only (report does none).
	"$TALLY" run "${args[@]}" --device-memory "$DEVICE_MEMORY" --json >"$RES/drop-run1.json" 2>"$RES/drop-run1.err" || rc=1
	cat "$RES/drop-run1.err"
	"$TALLY" report "${args[@]}" --format markdown >"$RES/drop-report.md" || rc=1
	cat "$RES/drop-report.md"
	"$TALLY" run "${args[@]}" --device-memory "$DEVICE_MEMORY" --json >"$RES/drop-run2.json" 2>"$RES/drop-run2.err" || rc=1
	cat "$RES/drop-run2.err"
	return $rc
}
do_bench_tally() { # do_bench_tally ROLE SHAPE CONFIGS
	"$GC" prompts -vocab 128256 -configs "$3" -out "$WORK/prompts" &&
		"$GC" bench -model "$MODELS/$2" -name "$2" -device "$DEVICE" -dtype bfloat16 -prompts "$WORK/prompts" -configs "$3" \
			-new "$NEW" -device-memory "$DEVICE_MEMORY" -deadline "$STEP_DEADLINE" -out "$RES/bench-tally-$1.jsonl"
}
do_bench_hf() { # do_bench_hf ROLE SHAPE CONFIGS
	"$GC" prompts -vocab 128256 -configs "$3" -out "$WORK/prompts" &&
		"$PYTHON" "$HF" bench "$MODELS/$2" "$2" "$WORK/prompts" "$3" "$NEW" "$RES/bench-hf-$1.jsonl" \
			--caches "$HF_CACHES" --deadline "$STEP_DEADLINE"
}
do_long() {
	"$GC" longprompt -tokenizer "$MODELS/$SHAPE_8B" -tokens "$LONG_TOKENS" -out "$WORK/long.jsonl" || return 1
	"$GC" watch -out "$RES/long-watch.json" -- "$TALLY" run --model "$MODELS/$SHAPE_8B" --device "$DEVICE" \
		--device-memory "$DEVICE_MEMORY" --tasks jsonl --data "$WORK/long.jsonl" --store "$WORK/long.db" \
		--stop 'none=' --max-tokens "$NEW" --concurrency 1 --json >"$RES/long-run.json" 2>"$RES/long-run.err"
	local rc=$?
	cat "$RES/long-run.err"
	return $rc
}
export -f do_device do_parity do_weights do_drop do_bench_tally do_bench_hf do_long

STEP_N=0
FAILED=0
declare -A DONE=()
# step NAME LIMIT CMD...: runs CMD (a do_ function and its arguments) with
# its output in logs/NAME.log, for at most LIMIT seconds and what is left
# of the budget, and records steps/NN-NAME.json. Exit 3 means skipped.
step() {
	local name=$1 limit=$2
	shift 2
	STEP_N=$((STEP_N + 1))
	local rec logf left start rc=0 status note=
	rec=$(printf '%s/steps/%02d-%s.json' "$WORK" "$STEP_N" "$name")
	logf=$WORK/logs/$name.log
	left=$((BUDGET_S - ($(date +%s) - T0)))
	if ((left < MIN_STEP_S)); then
		"$GC" step -name "$name" -status skipped -note "no time left in the budget (${left}s of ${BUDGET_S}s)" -out "$rec"
		log "step $name: skipped, no time left"
		return 1
	fi
	((limit > left)) && limit=$left
	log "step $name (at most ${limit}s)"
	start=$(date +%s)
	export STEP_DEADLINE=$((start + limit - 5))
	timeout --kill-after=10 "$limit" bash -c '"$@"' bash "$@" >"$logf" 2>&1 || rc=$?
	case $rc in
	0) status=ok ;;
	124 | 137) status=timeout note="stopped at its limit of ${limit}s" ;;
	3) status=skipped note=$(grep -m1 -o 'skipped: .*' "$logf" || true) ;;
	*) status=failed ;;
	esac
	"$GC" step -name "$name" -status "$status" -rc "$rc" -seconds "$(($(date +%s) - start))" -note "$note" -log "$logf" -out "$rec"
	tail -n 3 "$logf" | sed "s/^/  $name: /" >&2
	[[ $status == ok ]] && DONE[$name]=1
	[[ $status == failed || $status == timeout ]] && FAILED=1
	[[ $status == ok ]]
}
want() { [[ ",$STEPS," == *",$1,"* ]]; }
# weights ROLE SHAPE: the checkpoint, written once per run.
weights() {
	[[ -n ${DONE[weights-$1]:-} ]] && return 0
	step "weights-$1" 90 do_weights "$2"
}

want device && step device 30 do_device
want parity && step parity 150 do_parity
if want drop || want bench-1b-tally || want bench-1b-hf || want weights-1b; then
	if weights 1b "$SHAPE_1B"; then
		want drop && step drop 120 do_drop
		want bench-1b-tally && step bench-1b-tally 90 do_bench_tally 1b "$SHAPE_1B" "$CONFIGS_1B"
		want bench-1b-hf && step bench-1b-hf 75 do_bench_hf 1b "$SHAPE_1B" "$CONFIGS_1B"
	fi
fi
if want bench-8b-tally || want bench-8b-hf || want long || want weights-8b; then
	rm -rf "${MODELS:?}/$SHAPE_1B" # room for the 8B checkpoint
	DONE[weights-1b]=
	if weights 8b "$SHAPE_8B"; then
		want bench-8b-tally && step bench-8b-tally 180 do_bench_tally 8b "$SHAPE_8B" "$CONFIGS_8B"
		want bench-8b-hf && step bench-8b-hf 150 do_bench_hf 8b "$SHAPE_8B" "$CONFIGS_8B"
		want long && step long 240 do_long
	fi
fi

# --- the report ----------------------------------------------------------
"$GC" summarize -work "$WORK" -out "$OUT" || { log "summarize failed"; FAILED=1; }
for f in "$WORK"/logs/*.log; do # keep each log's last 2 MB
	[[ -f $f ]] && (($(stat -c %s "$f") > 2 << 20)) && tail -c $((2 << 20)) "$f" >"$f.tail" && mv "$f.tail" "$f"
done
tar -czf "$OUT/gpu-check-logs.tar.gz" -C "$WORK" steps results logs 2>/dev/null || log "could not archive the logs"
if [[ -f $OUT/gpu-check-logs.tar.gz ]] && (($(stat -c %s "$OUT/gpu-check-logs.tar.gz") > 15 << 20)); then
	# A device call brings back files of at most 16 MiB: leave the HLO dump out.
	log "the logs archive is over 15 MiB: archiving without logs/xla-dump"
	tar -czf "$OUT/gpu-check-logs.tar.gz" -C "$WORK" --exclude=logs/xla-dump steps results logs 2>/dev/null || true
fi
if [[ -f $OUT/gpu-check.md ]]; then
	cat "$OUT/gpu-check.md"
	echo
	sed -n '1,/^## Setup/p' "$OUT/gpu-check.md" | sed '$d' # the targets and steps again, last
fi
log "wrote $OUT/gpu-check.md, $OUT/gpu-check.json, $OUT/gpu-check-logs.tar.gz in $(($(date +%s) - T0))s"
[[ $setup_status == ok ]] || FAILED=1
exit $FAILED
