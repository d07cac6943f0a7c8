#!/bin/bash
# Form: sgl-project/sglang docker/entrypoint.sh (prepares the container, then runs whatever it is given).
# Written for the topoctl launch corpus: this file holds no launch of its own.
set -e
if [ -n "$HF_TOKEN" ]; then
  huggingface-cli login --token "$HF_TOKEN" >/dev/null
fi
ulimit -n 65535
exec "$@"
