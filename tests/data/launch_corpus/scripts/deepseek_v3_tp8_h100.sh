#!/bin/bash
# Form: sgl-project/sglang docs/basic_usage/deepseek.md ("8 x H200" single-node command), run on an 8x H100 node.
# Written for the topoctl launch corpus. True finding: DeepSeek-V3's FP8 weights (about 85 GB per GPU at TP 8)
# exceed what SGLang leaves for weights on an 80 GB H100, so it cannot allocate a KV cache.
python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 8 --trust-remote-code
