#!/bin/bash
# Form: cluster notes starting one server per node through Open MPI (mpirun -np 1 per host, -x to pass env).
# Written for the topoctl launch corpus.
mpirun -np 1 --allow-run-as-root --bind-to none \
  -x NCCL_DEBUG=INFO -x NCCL_IB_HCA=mlx5 \
  python3 -m sglang.launch_server --model-path /models/Mixtral-8x7B-Instruct-v0.1 --tp 8 --port 30000
