#!/bin/bash
# Form: sgl-project/sglang docs/get_started/install.md ("Method 3: Using docker").
# Written for the topoctl launch corpus. The image tag moves: judged as the newest release with data, said so.
docker run --gpus all \
    --shm-size 32g \
    -p 30000:30000 \
    -v ~/.cache/huggingface:/root/.cache/huggingface \
    --env "HF_TOKEN=$HF_TOKEN" \
    --ipc=host \
    lmsysorg/sglang:latest \
    python3 -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B-Instruct --host 0.0.0.0 --port 30000
