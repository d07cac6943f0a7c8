#!/bin/bash
# Form: home-lab 2x RTX 4090 scripts (r/LocalLLaMA "dual 4090 sglang"). Written for the topoctl corpus.
# Judged on the rtx-4090-2x-pcie-no-p2p reference system: P2P is off between the two cards, and SGLang's custom
# allreduce needs it (the rule cites its source).
python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --tp 2 --port 30000
