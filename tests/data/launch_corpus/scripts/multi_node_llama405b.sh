#!/bin/bash
# Form: sgl-project/sglang docs/references/multi_node_deployment/multi_node.md ("Llama 3.1 405B on two nodes").
# Written for the topoctl launch corpus; the two commands of the doc, one per node.
MODEL=meta-llama/Meta-Llama-3.1-405B-Instruct
HEAD=172.16.4.52:20000

# node 0
python3 -m sglang.launch_server --model-path $MODEL --tp 16 --dist-init-addr $HEAD --nnodes 2 --node-rank 0

# node 1
python3 -m sglang.launch_server --model-path $MODEL --tp 16 --dist-init-addr $HEAD --nnodes 2 --node-rank 1
