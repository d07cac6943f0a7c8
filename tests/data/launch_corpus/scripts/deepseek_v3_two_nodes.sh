#!/bin/bash
# Form: sgl-project/sglang docs/basic_usage/deepseek.md ("DeepSeek V3 on two H20/H200 nodes", node 0 command).
# Written for the topoctl launch corpus.
NODE_RANK=0
MASTER=10.0.0.1:5000

python3 -m sglang.launch_server \
  --model-path deepseek-ai/DeepSeek-V3 \
  --tp 16 \
  --dist-init-addr $MASTER \
  --nnodes 2 \
  --node-rank $NODE_RANK \
  --trust-remote-code
