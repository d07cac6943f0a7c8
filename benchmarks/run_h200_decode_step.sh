#!/bin/bash
# One device call on a real GPU machine: `topoctl bench --decode-step` over dense, MoE and MLA models at bf16
# and fp8, then the independent plain-torch check (benchmarks/decode_step_check.py) in the same run.
# Usage (from the repository root): bash benchmarks/run_h200_decode_step.sh OUTDIR
set -u
OUT_DIR=${1:?output folder}
. "$(dirname "$0")/h200_decode_step_common.sh"
{
  header
  bench --model llama-3.1-8b --tp 1,8 --tokens 1,4,16
  bench --model llama-3.1-70b --tp 2,4,8 --tokens 1,4,16
  bench --model qwen3-30b-a3b --tp 1,2,4 --tokens 1,4,16
  bench --model gpt-oss-120b --dtype bf16 --tp 4,8 --tokens 1,4,16
  bench --model deepseek-r1 --tp 8 --tokens 1,4,16
  bench --model kimi-k2.5 --dtype fp8 --tp 8 --tokens 1,4,16
  bench --model llama-3.1-70b --dtype fp8 --tp 8 --tokens 1,4,16
  bench --model llama-3.1-8b --dtype fp8 --tp 1 --tokens 1,4,16
  independent
  echo "== recommend"; topoctl recommend --topology "$SNAP" --model llama-3.1-8b --explain 2>&1 | grep -i -B1 -A2 "bandwidth" | head -20
  date -u
} > "$LOG" 2>&1
tail -c 11000 "$LOG"
