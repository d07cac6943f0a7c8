#!/usr/bin/env bash
# Run on a real GPU machine. Captures what topoctl and nvidia-smi say about this machine into DIR,
# compares them pair by pair, and times `topoctl probe` against `nvidia-smi topo -m`.
#   scripts/real_hardware_check.sh DIR "description of the machine"
# DIR then holds a fixture folder's files: capture.json, snapshot.json and the nvidia-smi outputs.
# Read-only on the GPUs: no clocks, power, MIG, persistence or resets are touched.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
dir=${1:?usage: real_hardware_check.sh DIR DESCRIPTION}
description=${2:-"real machine"}
py="${PYTHON:-python3} -X faulthandler"
mkdir -p "$dir"
status=0
nvidia-smi topo -m > "$dir/nvidia-smi-topo-m.txt" 2>&1 || status=1
for flag in r w n a p; do
  nvidia-smi topo -p2p "$flag" > "$dir/nvidia-smi-topo-p2p-$flag.txt" 2>&1 || status=1
done
nvidia-smi --query-gpu=index,name,pci.bus_id,compute_cap,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,memory.total,driver_version --format=csv > "$dir/nvidia-smi-query.csv" 2>&1 || status=1
nvidia-smi nvlink --status > "$dir/nvidia-smi-nvlink-status.txt" 2>&1 || true
$py -m topoctl probe --record "$dir/capture.json" --description "$description" --format json -o "$dir/snapshot-live.json" || status=1
$py -m topoctl probe --with-torch --record "$dir/capture-torch.json" --description "$description (with torch cross-check)" --format json -o "$dir/snapshot-torch.json" || status=1
$py -m topoctl show --topology "$dir/snapshot-live.json" > "$dir/topoctl-show.txt" 2>&1 || true
# The user's flow on this machine: probe, show, recommend, check what was recommended, check a drift.
$py -m topoctl probe -o "$dir/machine.yaml" || status=1
$py -m topoctl show > "$dir/topoctl-show-live.txt" 2>&1 || status=1
$py -m topoctl recommend --model llama-3.1-70b --speculative eagle3 --draft-model /models/eagle3-draft \
    --explain -o "$dir/launch.env" 2> "$dir/recommend-explain.txt" || status=1
$py -m topoctl check "$dir/launch.env" --expect "$dir/machine.yaml" > "$dir/check-launch-env.txt" 2>&1 || status=1
$py -m topoctl check --format json -- python -m sglang.launch_server --model-path M --tp "$(nvidia-smi -L | wc -l)" --enable-torch-symm-mem \
    > "$dir/check-torch-symm-mem.json" 2>&1; echo "exit $?" >> "$dir/check-torch-symm-mem.json"
$py scripts/compare_with_nvidia_smi.py "$dir" "$dir/snapshot-live.json" | tee "$dir/compare-live.txt" || status=1
$py scripts/real_visible_devices_check.py "$dir" "$description" | tee "$dir/visible-devices.txt" || status=1
$py scripts/compare_with_nvidia_smi.py "$dir" | tee "$dir/compare-replay.txt" || status=1
$py benchmarks/probe_bench.py --repeat "${REPEAT:-7}" --json "$dir/probe-bench.json" | tee "$dir/probe-bench.txt" || status=1
exit $status
