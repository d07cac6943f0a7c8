#!/bin/bash
# Form: launch scripts taking the TP size as an optional argument (GitHub gists "serve.sh 4").
# Written for the topoctl launch corpus.
TP=${1:-2}
PORT=${PORT:-30000}
python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-14B-Instruct --tp-size "$TP" --port "$PORT"
