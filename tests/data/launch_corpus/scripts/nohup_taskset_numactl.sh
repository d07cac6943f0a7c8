#!/bin/bash
# Form: home-lab "start in the background" scripts (nohup, CPU pinning, log file). Written for the topoctl launch corpus.
LOG=/var/log/sglang.log
nohup taskset -c 0-31 numactl --interleave=all \
  python3 -m sglang.launch_server --model-path google/gemma-2-27b-it --tp 2 --port 30001 \
  > "$LOG" 2>&1 &
echo "started $!"
