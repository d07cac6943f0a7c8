#!/bin/bash
# Form: multi-model launch scripts with a case over the model name (GitHub gists "serve.sh llama|qwen").
# Written for the topoctl launch corpus: every branch is a launch.
MODEL_NAME=${MODEL_NAME:-llama}
case "$MODEL_NAME" in
  llama)
    python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-70B-Instruct --tp 8 ;;
  qwen)
    python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-72B-Instruct --tp 4 --port 30001 ;;
  *)
    echo "unknown model $MODEL_NAME" >&2; exit 1 ;;
esac
