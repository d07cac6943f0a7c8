#!/bin/bash
# One device call on a real GPU machine: `topoctl bench --decode-step` at the token counts of speculative
# verify passes (1, 16, 32, 64: the corpus's draft shapes verify 4 to 64 tokens), for the dense models at
# their TP shards and one MoE model, then the independent plain-torch check (benchmarks/decode_step_check.py)
# in the same run. What it measures is the cost of a wider pass per layer, the launch model's per-token term.
# Usage (from the repository root): bash benchmarks/run_h200_verify_tokens.sh OUTDIR
set -u
OUT_DIR=${1:?output folder}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
LOG=$OUT_DIR/log.txt
SNAP=$OUT_DIR/snapshot.json
bench() {
  echo "== topoctl bench --decode-step $*"
  /usr/bin/time -f "%e s" topoctl bench --topology "$SNAP" --decode-step --timeout 120 --quiet --format json -o "$SNAP" "$@"
  echo "exit $?"
}
{
  date -u; uname -r; nvidia-smi -L
  nvidia-smi --query-gpu=name,memory.total,memory.used,clocks.max.memory,clocks.mem --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.device_count())'
  python3 -m pip install -q --no-deps --no-build-isolation -e . || echo "pip install failed"
  git log --oneline -1; topoctl --version
  echo "== probe"; topoctl probe --format json -o "$SNAP"; echo "probe exit $?"
  bench --model llama-3.1-8b --tp 1,8 --tokens 1,16,32,64
  bench --model llama-3.1-70b --tp 2,4,8 --tokens 1,16,32,64
  bench --model qwen3-30b-a3b --tp 1,2,4 --tokens 1,16,32,64
  echo "== independent"; python3 benchmarks/decode_step_check.py "$SNAP" --out "$OUT_DIR/independent.json"; echo "check exit $?"
  date -u
} > "$LOG" 2>&1
tail -c 11000 "$LOG"
