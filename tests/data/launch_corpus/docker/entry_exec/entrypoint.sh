#!/bin/bash
# Form: sgl-project/sglang docker/entrypoint.sh. Written for the topoctl launch corpus: no launch of its own.
set -e
exec "$@"
