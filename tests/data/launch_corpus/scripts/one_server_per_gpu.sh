#!/bin/bash
# Form: data-parallel by hand: one server per GPU behind a router (sgl-project/sglang router docs, "launch
# workers separately"). Written for the topoctl launch corpus.
export CUDA_DEVICE_ORDER=PCI_BUS_ID
BASE_PORT=30000
for i in 0 1 2 3; do
  CUDA_VISIBLE_DEVICES=$i python3 -m sglang.launch_server \
    --model-path meta-llama/Llama-3.1-8B-Instruct --port $((BASE_PORT + i)) &
done
wait
