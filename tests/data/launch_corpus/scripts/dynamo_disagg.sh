#!/bin/bash
# Form: ai-dynamo/dynamo examples/backends/sglang/launch/disagg.sh (prefill on GPU 0, decode on GPU 1).
# Written for the topoctl launch corpus.
set -e
trap 'kill 0' EXIT
export CUDA_DEVICE_ORDER=PCI_BUS_ID

python3 -m dynamo.frontend --http-port=8000 &

CUDA_VISIBLE_DEVICES=0 python3 -m dynamo.sglang \
  --model-path Qwen/Qwen3-0.6B \
  --tp 1 \
  --disaggregation-mode prefill \
  --disaggregation-transfer-backend nixl &

CUDA_VISIBLE_DEVICES=1 python3 -m dynamo.sglang \
  --model-path Qwen/Qwen3-0.6B \
  --tp 1 \
  --disaggregation-mode decode \
  --disaggregation-transfer-backend nixl
