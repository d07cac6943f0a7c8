#!/bin/bash
# Form: sgl-project/sglang docs/references/multi_node_deployment/multi_node.md ("Llama 3.1 405B on two nodes", one
# command per node) with --dp-size 2 added to get one replica a node. Written for the topoctl launch corpus.
# True finding: SGLang refuses --dp-size above 1 over several nodes without DP attention.
MODEL=meta-llama/Meta-Llama-3.1-70B-Instruct
HEAD=172.16.4.52:20000

# node 0
python3 -m sglang.launch_server --model-path $MODEL --tp 8 --dp-size 2 --dist-init-addr $HEAD --nnodes 2 --node-rank 0

# node 1
python3 -m sglang.launch_server --model-path $MODEL --tp 8 --dp-size 2 --dist-init-addr $HEAD --nnodes 2 --node-rank 1
