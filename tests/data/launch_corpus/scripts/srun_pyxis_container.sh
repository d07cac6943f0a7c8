#!/bin/bash
# Form: Slurm + pyxis/enroot job scripts (NVIDIA's pyxis README: srun --container-image ...).
# Written for the topoctl launch corpus.
#SBATCH -N 1
#SBATCH --gpus-per-node=8
srun --container-image=lmsysorg/sglang:v0.5.21-cu129 \
     --container-mounts=/lustre/models:/models \
     python3 -m sglang.launch_server --model-path /models/Llama-3.1-70B-Instruct --tp 8 --port 30000
