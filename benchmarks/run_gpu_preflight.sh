#!/bin/bash
# One device call on a real GPU machine: `topoctl preflight` of one-GPU launches end to end (NCCL,
# CUDA graph, the kernels torch offers), the results recorded in the snapshot, and check reading
# them back. Usage (from the repository root): bash benchmarks/run_gpu_preflight.sh OUTDIR
set -u
OUT_DIR=${1:?output folder}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
SNAP=$OUT_DIR/snapshot.json
{
  date -u; nvidia-smi -L
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.device_count())'
  python3 -m pip install -q --no-deps --no-build-isolation -e . || echo "pip install failed"
  topoctl probe --format json -o "$SNAP"; echo "probe exit $?"
  printf 'SGLANG_ARGS="--model-path meta-llama/Llama-3.1-8B-Instruct --tp-size 1"\nTOPOCTL_MODEL=llama-3.1-8b\n' > "$OUT_DIR/default.env"
  printf 'SGLANG_ARGS="--model-path meta-llama/Llama-3.1-8B-Instruct --tp-size 1 --disable-custom-all-reduce --cuda-graph-max-bs 64"\nTOPOCTL_MODEL=llama-3.1-8b\nCUDA_VISIBLE_DEVICES=0\n' > "$OUT_DIR/nccl.env"
  for launch in default nccl; do
    echo "== preflight $launch"
    /usr/bin/time -f "%e s" topoctl preflight "$OUT_DIR/$launch.env" --topology "$SNAP" -o "$SNAP"
    echo "exit $?"
    topoctl preflight "$OUT_DIR/$launch.env" --topology "$SNAP" --format json > "$OUT_DIR/preflight-$launch.json"
  done
  echo "== check reads the record"; topoctl check "$OUT_DIR/nccl.env" --topology "$SNAP"; echo "check exit $?"
  echo "== independent: one NCCL allreduce and the kernels in plain torch"
  python3 - <<'PY'
import os, torch, torch.distributed as dist
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29533")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda:0"))
x = torch.full((8192 * 64,), 1.0, dtype=torch.bfloat16, device="cuda"); dist.all_reduce(x)
print("nccl world 1 sum ok:", bool((x == 1).all()))
a = torch.randn(16, 4096, dtype=torch.bfloat16, device="cuda"); print("gemm finite:", bool(torch.isfinite(a @ a.t()).all()))
q = torch.randn(1, 32, 16, 128, dtype=torch.bfloat16, device="cuda")
print("sdpa finite:", bool(torch.isfinite(torch.nn.functional.scaled_dot_product_attention(q, q, q)).all()))
dist.destroy_process_group()
PY
  date -u
} > "$OUT_DIR/log.txt" 2>&1
tail -c 9000 "$OUT_DIR/log.txt"
