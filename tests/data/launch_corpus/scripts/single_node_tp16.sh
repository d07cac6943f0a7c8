#!/bin/bash
# Form: home-lab scripts copying the two-node DeepSeek command onto one machine (GitHub issues "TP16 on one
# node"). Written for the topoctl launch corpus. True finding: 16 ranks on one 8-GPU node (SGLang puts rank i
# on local GPU i, engine.py _calculate_rank_ranges; with --nnodes 1 all 16 are local).
python3 -m sglang.launch_server \
  --model-path deepseek-ai/DeepSeek-V3 \
  --tp 16 \
  --trust-remote-code
