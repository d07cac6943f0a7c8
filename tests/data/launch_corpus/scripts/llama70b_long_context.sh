#!/bin/bash
# Form: home-lab scripts asking for the model's full 128k context on two GPUs (r/LocalLLaMA "70B 128k context").
# Written for the topoctl launch corpus. The launch starts, but its KV cache holds less than one 128k request.
python3 -m sglang.launch_server \
  --model-path meta-llama/Llama-3.1-70B-Instruct \
  --tp 2 \
  --context-length 131072 \
  --mem-fraction-static 0.9
