# Sourced by run_h200_decode_step.sh and run_h200_verify_tokens.sh (OUT_DIR set first): the device
# environment, the run's header and one `bench` call, so that every decode-step measurement records the
# machine, the software and the probe the same way, and calls topoctl the same way.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
LOG=$OUT_DIR/log.txt
SNAP=$OUT_DIR/snapshot.json
bench() {
  echo "== topoctl bench --decode-step $*"
  /usr/bin/time -f "%e s" topoctl bench --topology "$SNAP" --decode-step --timeout 120 --quiet --format json -o "$SNAP" "$@"
  echo "exit $?"
}
header() {
  date -u; uname -r; nvidia-smi -L
  nvidia-smi --query-gpu=name,memory.total,memory.used,clocks.max.memory,clocks.mem --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda, torch.cuda.device_count())'
  python3 -m pip install -q --no-deps --no-build-isolation -e . || echo "pip install failed"
  topoctl --version
  echo "== probe"; topoctl probe --format json -o "$SNAP"; echo "probe exit $?"
}
independent() {
  echo "== independent"; python3 benchmarks/decode_step_check.py "$SNAP" --out "$OUT_DIR/independent.json"
  echo "check exit $?"
}
