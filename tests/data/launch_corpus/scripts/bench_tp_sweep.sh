#!/usr/bin/env bash
# Form: sgl-project/sglang benchmark/ sweep scripts (one server per TP size, bench_serving against it, kill).
# Written for the topoctl launch corpus.
set -e
MODEL=${MODEL:-Qwen/Qwen2.5-7B-Instruct}
TP_SIZES=(1 2 4 8)
COMMON=(--model-path "$MODEL" --host 127.0.0.1 --port 30000 --mem-fraction-static 0.85)

for tp in 1 2 4 8; do
  python3 -m sglang.launch_server "${COMMON[@]}" --tp-size "$tp" &
  pid=$!
  sleep 120
  python3 -m sglang.bench_serving --backend sglang --num-prompts 200 --port 30000
  kill $pid
  wait $pid || true
done
echo "swept ${#TP_SIZES[@]} sizes"
