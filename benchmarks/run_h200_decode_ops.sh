#!/bin/bash
# One device call on a real GPU machine: `topoctl bench --decode-step` with its per-GEMM rows over
# dense, MoE and MLA models, the independent plain-torch check of those rows
# (benchmarks/decode_ops_check.py) in the same run, and recommend reading them.
# Usage (from the repository root): bash benchmarks/run_h200_decode_ops.sh OUTDIR
set -u
OUT_DIR=${1:?output folder}
. "$(dirname "$0")/h200_decode_step_common.sh"
T=1,2,4,8,16,32,64,128,256
{
  header
  bench --model llama-3.1-8b --tp 1 --tokens $T
  bench --model llama-3.1-70b --tp 4,8 --tokens $T
  bench --model qwen3-30b-a3b --tp 1,4 --tokens $T
  bench --model kimi-k2.5 --dtype bf16 --tp 8 --tokens $T
  bench --model deepseek-r1 --tp 8 --tokens $T
  bench --model llama-3.1-70b --dtype fp8 --tp 8 --tokens $T
  echo "== independent ops"; python3 benchmarks/decode_ops_check.py "$SNAP" --out "$OUT_DIR/independent-ops.json"
  echo "check exit $?"
  echo "== recommend"
  topoctl recommend --topology "$SNAP" --model llama-3.1-8b --explain --format json -o "$OUT_DIR/recommend-llama-8b.json"
  echo "recommend exit $?"
  date -u
} > "$LOG" 2>&1
tail -c 11000 "$LOG"
