#!/bin/bash
# Form: ai-dynamo/dynamo examples/backends/sglang/launch/agg.sh (frontend in the background, one worker).
# Written for the topoctl launch corpus.
set -e
trap 'echo Cleaning up...; kill 0' EXIT

python3 -m dynamo.frontend --http-port=8000 &

python3 -m dynamo.sglang \
  --model-path Qwen/Qwen3-0.6B \
  --served-model-name Qwen/Qwen3-0.6B \
  --page-size 16 \
  --tp 1 \
  --trust-remote-code
