#!/bin/bash
# One device call on a real GPU machine: `topoctl bench --decode-step` at the token counts of speculative
# verify passes (1, 16, 32, 64: the corpus's draft shapes verify 4 to 64 tokens), for the dense models at
# their TP shards and one MoE model, then the independent plain-torch check (benchmarks/decode_step_check.py)
# in the same run. What it measures is the cost of a wider pass per layer, the launch model's per-token term.
# Usage (from the repository root): bash benchmarks/run_h200_verify_tokens.sh OUTDIR
set -u
OUT_DIR=${1:?output folder}
. "$(dirname "$0")/h200_decode_step_common.sh"
{
  header
  bench --model llama-3.1-8b --tp 1,8 --tokens 1,16,32,64
  bench --model llama-3.1-70b --tp 2,4,8 --tokens 1,16,32,64
  bench --model qwen3-30b-a3b --tp 1,2,4 --tokens 1,16,32,64
  independent
  date -u
} > "$LOG" 2>&1
tail -c 11000 "$LOG"
