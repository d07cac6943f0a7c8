#!/bin/bash
# Form: launch scripts whose TP size is required on the command line (`./run.sh 8`). Written for the topoctl launch corpus.
# The value is not in the file: named, never guessed.
if [ $# -lt 1 ]; then echo "usage: $0 TP" >&2; exit 1; fi
python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-32B-Instruct --tp-size $1 --host 0.0.0.0
