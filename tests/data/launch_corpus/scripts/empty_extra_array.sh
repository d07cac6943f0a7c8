#!/bin/bash
# Form: launch scripts collecting optional flags in an array that is often empty (GitHub gists).
# Written for the topoctl launch corpus.
ARGS=(
  --model-path "/models/Qwen2.5-72B-Instruct"
  --tp-size 8
  --host 0.0.0.0
)
EXTRA=()
if [[ "${METRICS:-0}" == 1 ]]; then
  EXTRA+=(--enable-metrics)
fi
OPTIONAL=()
python3 -m sglang.launch_server "${ARGS[@]}" "${EXTRA[@]}" "${OPTIONAL[@]}"
