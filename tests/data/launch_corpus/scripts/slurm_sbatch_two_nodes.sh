#!/bin/bash
# Form: sgl-project/sglang docs/references/multi_node_deployment/multi_node.md (the Slurm sbatch example:
# srun over the allocation, head address from scontrol, node rank from SLURM_NODEID). Written for the topoctl launch corpus.
#SBATCH --job-name=sglang-r1
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:8
#SBATCH --time=04:00:00

set -euo pipefail
nodes=( $(scontrol show hostnames "$SLURM_JOB_NODELIST") )
head_node=${nodes[0]}
head_ip=$(srun --nodes=1 --ntasks=1 -w "$head_node" hostname --ip-address)
port=29500
model=/models/DeepSeek-R1

srun --nodes=2 --ntasks-per-node=1 \
  python3 -m sglang.launch_server \
    --model-path "$model" \
    --tp 16 \
    --dist-init-addr "$head_ip:$port" \
    --nnodes "$SLURM_NNODES" \
    --node-rank "$SLURM_NODEID" \
    --trust-remote-code \
    --host 0.0.0.0 --port 30000
