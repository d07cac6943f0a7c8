#!/bin/bash
# Form: sgl-project/sglang docs/references/multi_node_deployment/multi_node.md ("Llama 3.1 405B on two nodes", one
# command per node) stretched to three nodes at TP 8. Written for the topoctl launch corpus. True finding: SGLang
# asserts (tp_size x pp_size) % nnodes == 0 before it starts; 8 over 3 nodes fails on every node.
MODEL=meta-llama/Meta-Llama-3.1-70B-Instruct
HEAD=172.16.4.52:20000

# node 0
python3 -m sglang.launch_server --model-path $MODEL --tp 8 --dist-init-addr $HEAD --nnodes 3 --node-rank 0

# node 1
python3 -m sglang.launch_server --model-path $MODEL --tp 8 --dist-init-addr $HEAD --nnodes 3 --node-rank 1

# node 2
python3 -m sglang.launch_server --model-path $MODEL --tp 8 --dist-init-addr $HEAD --nnodes 3 --node-rank 2
