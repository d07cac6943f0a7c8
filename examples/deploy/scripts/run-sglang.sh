#!/usr/bin/env bash
# Start SGLang on this node: the settings, then the launch (the shape configurator-generated run scripts have).
set -euo pipefail

export NCCL_DEBUG=WARN
export SGLANG_SKIP_P2P_CHECK=0
MODEL_PATH=Qwen/Qwen3-32B
TP_SIZE=4
PORT=30000

python3 -m sglang.launch_server \
  --model-path "${MODEL_PATH}" \
  --config sglang-config.yaml \
  --tp-size "${TP_SIZE}" \
  --host 0.0.0.0 --port "${PORT}"
