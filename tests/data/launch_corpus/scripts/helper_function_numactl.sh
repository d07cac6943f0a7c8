#!/bin/bash
# Form: home-lab launch scripts (r/LocalLLaMA posts, GitHub gists) that wrap the server in a helper pinning
# memory to a NUMA node. Written for the topoctl launch corpus.
export NCCL_DEBUG=WARN
export CUDA_DEVICE_ORDER=PCI_BUS_ID

pinned() {
  numactl --cpunodebind=0 --membind=0 "$@"
}

pinned python3 -u -m sglang.launch_server \
  --model-path /srv/models/Llama-3.3-70B-Instruct \
  --tp-size 4 \
  --port 8000
