#!/bin/bash
# Form: launch scripts exporting a block of NCCL settings with `set -a` (cluster wiki pages).
# Written for the topoctl launch corpus.
set -a
NCCL_IB_DISABLE=0
NCCL_SOCKET_IFNAME=eth0
NCCL_DEBUG=INFO
set +a
LOCAL_ONLY=1

exec python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct --tp 8
