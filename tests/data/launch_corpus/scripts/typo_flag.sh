#!/bin/sh
# Form: sgl-project/sglang README "Quick start" command as users retype it. Written for the topoctl corpus.
# True finding: --tp-szie is not a flag (argparse exits: unrecognized arguments / no such option).
python3 -m sglang.launch_server \
  --model-path meta-llama/Llama-3.1-8B-Instruct \
  --tp-szie 2 \
  --port 30000
