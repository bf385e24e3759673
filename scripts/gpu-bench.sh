#!/usr/bin/env bash
# gpu-bench.sh: one call on a CUDA GPU machine with no network (for example
# inside the Dockerfile.cuda image) that compares tally's native backend
# (gomlx/XLA, float32 compute) with transformers generate on the same greedy
# prompts, and writes a Markdown table to $OUT/gpu-bench.md.
#
#   scripts/gpu-bench.sh [OUT]        (default OUT: ./gpu-bench-out)
#
# Environment: PYTHON (default python3), HBM_GBPS (default 3350, H100 SXM),
# GPU_BENCH (a prebuilt gpu-bench binary; default: go build it), BATCHES,
# LENGTHS, NEW. gpu.md's three variables must be set (the image sets them).
# NOT YET RUN: written from gpu.md; check its first run by hand.
set -euo pipefail

OUT=${1:-./gpu-bench-out}
PYTHON=${PYTHON:-python3}
HBM_GBPS=${HBM_GBPS:-3350}
BATCHES=${BATCHES:-"1 8 32 64"}
LENGTHS=${LENGTHS:-"512 4096 32768"}
NEW=${NEW:-128}
HERE=$(cd "$(dirname "$(readlink -f "$0")")" && pwd)
HF="$HERE/gpu-bench/hf.py"
mkdir -p "$OUT/runs"
OUT=$(cd "$OUT" && pwd)

: "${GOMLX_BACKEND:?set GOMLX_BACKEND=xla:/abs/path/xla_cuda_plugin.so (see gpu.md)}"
: "${XLA_FLAGS:?set XLA_FLAGS=--xla_gpu_cuda_data_dir=/usr/local/cuda (see gpu.md)}"
export GOMLX_NO_AUTO_INSTALL=1

BENCH=${GPU_BENCH:-}
if [[ -z "$BENCH" ]]; then
  BENCH="$OUT/gpu-bench"
  (cd "$HERE/.." && CGO_ENABLED=1 go build -o "$BENCH" ./scripts/gpu-bench)
fi

# peak_mib CMD...: runs CMD while sampling GPU memory; prints CMD's stdout
# and leaves the peak used MiB in $OUT/.peak.
peak_mib() {
  local log="$OUT/.smi" pid rc=0
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 200 >"$log" 2>/dev/null &
  pid=$!
  "$@" || rc=$?
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  sort -n "$log" | tail -1 >"$OUT/.peak"
  return "$rc"
}

# field JSON KEY: prints one field of a JSON object.
field() { "$PYTHON" -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

# agree A B: percentage of rows whose greedy ids are identical.
agree() {
  "$PYTHON" -c '
import json, sys
a, b = json.loads(sys.argv[1])["ids"], json.loads(sys.argv[2])["ids"]
same = sum(x == y for x, y in zip(a, b))
print(f"{same}/{len(a)}")' "$1" "$2"
}

# roofline_ms PARAMS_BYTES KV_BYTES_PER_TOKEN BATCH CONTEXT: one decode step's
# HBM lower bound (read every weight once, and each row's cache).
roofline_ms() {
  "$PYTHON" -c '
import sys
w, kv, b, t, bw = map(float, sys.argv[1:6])
print(f"{(w + kv * b * t) / (bw * 1e9) * 1e3:.2f}")' "$1" "$2" "$3" "$4" "$HBM_GBPS"
}

TABLE="$OUT/gpu-bench.md"
{
  echo "# tally native backend vs transformers generate"
  echo
  echo "GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -1)"
  echo "HBM roofline at ${HBM_GBPS} GB/s; tally computes in float32 (weights widened from bf16),"
  echo "transformers in the dtype named. Decode ms is per step (all rows)."
  echo
  echo "| model | dtype (hf) | batch | prompt | new | tally tok/s | hf tok/s | ratio | tally decode ms | hf decode ms | roofline ms (f32 / bf16) | tally peak MiB | hf peak MiB | compiles | first-run s | greedy agree |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
} >"$TABLE"

# bench NAME DIR DTYPE PARAMS KVF32 BATCH LEN VOCAB
bench() {
  local name=$1 dir=$2 dtype=$3 params=$4 kv=$5 b=$6 len=$7 vocab=$8
  local p="$OUT/runs/$name-b$b-l$len.json" tj hj tpk hpk roof
  "$PYTHON" "$HF" prompts "$p" "$b" "$len" "$vocab" $((b * 100003 + len))
  if ! tj=$(peak_mib "$BENCH" -model "$dir" -device xla -prompts "$p" -new "$NEW"); then
    echo "| $name | $dtype | $b | $len | $NEW | failed (see log) | | | | | | | | | | |" >>"$TABLE"
    return 0
  fi
  tpk=$(cat "$OUT/.peak")
  echo "$tj" >"${p%.json}.tally.json"
  if ! hj=$(peak_mib "$PYTHON" "$HF" generate "$dir" "$p" "$NEW" "$dtype"); then
    hj='{"tokens_per_s": 0, "decode_ms_per_step": 0, "ids": []}'
  fi
  hpk=$(cat "$OUT/.peak")
  echo "$hj" >"${p%.json}.hf.json"
  roof="$(roofline_ms $((params * 4)) "$kv" "$b" $((len + NEW))) / $(roofline_ms $((params * 2)) $((kv / 2)) "$b" $((len + NEW)))"
  printf '| %s | %s | %s | %s | %s | %.1f | %.1f | %s | %.2f | %.2f | %s | %s | %s | %s | %.1f | %s |\n' \
    "$name" "$dtype" "$b" "$len" "$NEW" \
    "$(field "$tj" tokens_per_s)" "$(field "$hj" tokens_per_s)" \
    "$("$PYTHON" -c 'import sys; a,b=map(float,sys.argv[1:]); print(f"{a/b:.2f}" if b else "-")' "$(field "$tj" tokens_per_s)" "$(field "$hj" tokens_per_s)")" \
    "$(field "$tj" decode_ms_per_step)" "$(field "$hj" decode_ms_per_step)" "$roof" \
    "$tpk" "$hpk" "$(field "$tj" compilations)" "$(field "$tj" first_run_s)" "$(agree "$tj" "$hj")" >>"$TABLE"
}

# 1. Greedy agreement on the tiny fixtures, float32 (they live in ../shared
# beside the checkout, or FIXTURES).
FIXTURES=${FIXTURES:-"$HERE/../../shared/fixtures/models"}
for fx in llama-tiny qwen2-tiny mistral-tiny; do
  if [[ -d "$FIXTURES/$fx" ]]; then
    # params and KV bytes per token are tiny: the roofline column is moot.
    bench "$fx" "$FIXTURES/$fx" float32 0 0 8 512 512
  fi
done

# 2. Llama-3-8B shape, random bf16 weights (8.03e9 parameters; f32 KV
# bytes per token: 2 × 32 layers × 8 kv heads × 128 × 4).
M8="$OUT/llama3-8b-random"
GPU_BYTES=$(($(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1) * 1024 * 1024 * 9 / 10))
if [[ ! -f "$M8/config.json" ]]; then
  "$PYTHON" "$HF" make-8b "$M8"
fi
for len in $LENGTHS; do
  for b in $BATCHES; do
    # f32 weights (32 GB) plus f32 caches for b rows must fit the card.
    need=$((8030261248 * 4 + b * (len + NEW) * 2 * 32 * 8 * 128 * 4))
    if ((need > GPU_BYTES)); then
      echo "| llama3-8b | bfloat16 | $b | $len | $NEW | skipped: needs $((need >> 30)) GiB | | | | | | | | | | |" >>"$TABLE"
      continue
    fi
    bench llama3-8b "$M8" bfloat16 8030261248 $((2 * 32 * 8 * 128 * 4)) "$b" "$len" 128256
  done
done

rm -f "$OUT/.smi" "$OUT/.peak"
echo "wrote $TABLE"
