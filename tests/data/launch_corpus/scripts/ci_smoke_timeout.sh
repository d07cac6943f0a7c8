#!/bin/bash
# Form: CI smoke tests (GitHub Actions steps starting a server under timeout with line-buffered output).
# Written for the topoctl launch corpus.
set -euxo pipefail
timeout --signal=INT 900 stdbuf -oL -eL python3 -u -m sglang.launch_server \
  --model-path meta-llama/Llama-3.2-1B-Instruct --tp 1 --port 31000 --disable-cuda-graph &
SERVER=$!
for i in $(seq 1 60); do curl -sf localhost:31000/health && break; sleep 5; done
kill $SERVER
