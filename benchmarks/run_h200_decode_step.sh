#!/bin/bash
# One device call on a real GPU machine: `topoctl bench --decode-step` over dense, MoE and MLA models at bf16
# and fp8, then the independent plain-torch check (benchmarks/decode_step_check.py) in the same run.
# Usage (from the repository root): bash benchmarks/run_h200_decode_step.sh OUTDIR
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
  topoctl --version
  echo "== probe"; topoctl probe --format json -o "$SNAP"; echo "probe exit $?"
  bench --model llama-3.1-8b --tp 1,8 --tokens 1,4,16
  bench --model llama-3.1-70b --tp 2,4,8 --tokens 1,4,16
  bench --model qwen3-30b-a3b --tp 1,2,4 --tokens 1,4,16
  bench --model gpt-oss-120b --dtype bf16 --tp 4,8 --tokens 1,4,16
  bench --model deepseek-r1 --tp 8 --tokens 1,4,16
  bench --model kimi-k2.5 --dtype fp8 --tp 8 --tokens 1,4,16
  bench --model llama-3.1-70b --dtype fp8 --tp 8 --tokens 1,4,16
  bench --model llama-3.1-8b --dtype fp8 --tp 1 --tokens 1,4,16
  echo "== independent"; python3 benchmarks/decode_step_check.py "$SNAP" --out "$OUT_DIR/independent.json"; echo "check exit $?"
  echo "== recommend"; topoctl recommend --topology "$SNAP" --model llama-3.1-8b --explain 2>&1 | grep -i -B1 -A2 "bandwidth" | head -20
  date -u
} > "$LOG" 2>&1
tail -c 11000 "$LOG"
