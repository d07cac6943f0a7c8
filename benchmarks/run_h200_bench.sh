#!/bin/bash
# One device call on a real GPU machine: probe (recorded), bench, the independent check, show, nvidia-smi BAR1.
# Usage (from the repository root): bash benchmarks/run_h200_bench.sh OUTDIR
set -u
OUT_DIR=${1:?output folder}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
LOG=$OUT_DIR/log.txt
{
  date -u; uname -r; id -u; nvidia-smi -L
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.nccl.version(), torch.cuda.device_count())'
  python3 -m pip install -q --no-deps --no-build-isolation -e . || echo "pip install failed"
  nvidia-smi -q > $OUT_DIR/nvidia-smi-q.txt
  echo "== probe"; time topoctl probe --with-torch --record $OUT_DIR/capture.json \
      --description "real 1x H200 (VM, Firecracker), probed as root" --format json -o $OUT_DIR/probe.json
  echo "== bench"; time topoctl bench --topology $OUT_DIR/probe.json --model kimi-k2.5 --tokens 1,3,4,16,64,256 \
      --format json -o $OUT_DIR/snapshot.json; echo "bench exit $?"
  echo "== independent"; python3 benchmarks/bench_interconnect.py $OUT_DIR/snapshot.json --out $OUT_DIR/independent.json
  echo "== show"; topoctl show --topology $OUT_DIR/snapshot.json --no-color
  grep -A4 "BAR1 Memory Usage" $OUT_DIR/nvidia-smi-q.txt
} > $LOG 2>&1
tail -c 11000 $LOG
