#!/bin/bash
# Form: the same home-lab 2x RTX 4090 script with the fix users post (custom allreduce off).
# Written for the topoctl launch corpus; judged on rtx-4090-2x-pcie-no-p2p.
export NCCL_P2P_DISABLE=1
python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --tp 2 --disable-custom-all-reduce --port 30000
