#!/bin/bash
# Form: home-lab docker scripts giving the container a GPU count (GitHub issues "--gpus 2").
# Written for the topoctl launch corpus. True finding: TP 4 in a container that sees 2 GPUs (rank 2 finds no
# device; docker's --gpus 2 exposes GPUs 0,1).
docker run -d --name sglang --gpus 2 --ipc=host -p 30000:30000 \
  lmsysorg/sglang:v0.5.21-cu129 \
  python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-32B-Instruct --tp 4 --host 0.0.0.0
