#!/bin/bash
# Form: uv-based quick starts ("uv run --with sglang sglang serve ..." in project READMEs).
# Written for the topoctl launch corpus.
uv run --with "sglang[all]" sglang serve --model-path Qwen/Qwen3-8B --tp 2 --port 30000
