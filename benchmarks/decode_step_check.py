"""An independent check of `topoctl bench --decode-step`: the same dense layers, built another way, timed
another way, in the same run.

    python benchmarks/decode_step_check.py SNAPSHOT --out check.json

For every dense-model row of the snapshot's measurements.decode_step (bf16, CUDA graph) this script
builds the model's layers as a Hugging Face checkpoint holds them (separate q, k, v, o, gate, up and
down projections, torch.nn.Linear without bias, one GPU's share under the row's TP size) from the
model's config.json values, counts the bytes from the tensors it allocated, and times one pass over
the row's token count in plain eager torch with torch.utils.benchmark.Timer (which synchronises CUDA
itself), and again captured with torch.cuda.graph and replayed (eager torch on a slow host is bound
by launching its kernels, not by the weight reads, below ~200 us of GPU work per layer). It shares
no code with probe/bench/decode_step.py: not the shapes, not the byte count, not the timing. A
read-only stream (`torch.sum` over a buffer of the same size, at most 8 GiB) gives the bandwidth a
pure read reaches on this GPU.

MoE rows are not rebuilt here (an eager pass over routed experts is one product per expert,
launch-bound; the comparison would be of dispatch, not of the weight reads); they are listed with
the reason.

Needs torch and a CUDA GPU; prints one line per row and writes the comparison as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

STREAM_BYTES = (
    8 << 30
)  # the read-only stream's buffer: the weights' size, at most 8 GiB (both must fit)


def _config(model: str) -> dict[str, Any]:
    from topoctl.autoconf import models

    config = dict(models.builtin_models()[model]["config"])
    return dict(config.get("text_config") or config)


def build_layers(torch: Any, config: dict[str, Any], tp: int, layers: int) -> list[list[Any]]:
    """Per layer, its projections as torch.nn.Linear modules (bf16, on the GPU), widths split by TP."""
    hidden = int(config["hidden_size"])
    heads = int(config["num_attention_heads"])
    kv = int(config.get("num_key_value_heads") or heads)
    head_dim = int(config.get("head_dim") or hidden // heads)
    inter = int(config["intermediate_size"])

    def linear(inp: int, out: int) -> Any:
        module = torch.nn.Linear(inp, out, bias=False, dtype=torch.bfloat16, device="cuda")
        torch.nn.init.normal_(module.weight, std=0.02)
        return module

    built = []
    for _ in range(layers):
        built.append(
            [
                linear(hidden, heads * head_dim // tp),
                linear(hidden, kv * head_dim // tp),
                linear(hidden, kv * head_dim // tp),
                linear(heads * head_dim // tp, hidden),
                linear(hidden, inter // tp),
                linear(hidden, inter // tp),
                linear(inter // tp, hidden),
            ]
        )
    return built


def forward(torch: Any, built: list[list[Any]], x: Any) -> Any:
    """Attention projections then the gated MLP, layer after layer (no attention over a cache)."""
    for q, k, v, o, gate, up, down in built:
        query = q(x)
        k(x), v(x)
        x = o(query)
        x = down(torch.nn.functional.silu(gate(x)) * up(x))
    return x


def _graphed_us(torch: Any, benchmark: Any, built: list[list[Any]], x: Any) -> float:
    """The same pass captured with torch.cuda.graph and replayed (no launch cost from the host): the
    figure to hold the bench's graph rows against where eager torch is bound by launching its
    kernels."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        forward(torch, built, x)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        forward(torch, built, x)
    replay = benchmark.Timer(stmt="graph.replay()", globals={"graph": graph}).blocked_autorange(
        min_run_time=0.5
    )
    del graph
    return float(replay.median * 1e6)


def check_row(torch: Any, row: dict[str, Any]) -> dict[str, Any]:
    from torch.utils import benchmark

    config = _config(str(row["model"]))
    tp, tokens, layers = int(row.get("tp") or 1), int(row["tokens"]), int(row["layers"])
    built = build_layers(torch, config, tp, layers)
    nbytes = sum(
        p.numel() * p.element_size() for layer in built for m in layer for p in m.parameters()
    )
    x = torch.randn(tokens, int(config["hidden_size"]), dtype=torch.bfloat16, device="cuda")
    with torch.no_grad():
        timer = benchmark.Timer(
            stmt="forward(torch, built, x)",
            globals={"forward": forward, "torch": torch, "built": built, "x": x},
        )
        measured = timer.blocked_autorange(min_run_time=1.0)
        us = measured.median * 1e6
        graph_us = _graphed_us(torch, benchmark, built, x)
        stream_bytes = min(nbytes, STREAM_BYTES)
        stream = torch.empty(stream_bytes // 2, dtype=torch.bfloat16, device="cuda")
        read = benchmark.Timer(stmt="stream.sum()", globals={"stream": stream}).blocked_autorange(
            min_run_time=0.5
        )
    del built, stream
    torch.cuda.empty_cache()
    return {
        "model": row["model"],
        "tp": tp,
        "tokens": tokens,
        "layers": layers,
        "bytes_read": nbytes,
        "eager_us": us,
        "eager_us_per_layer": us / layers,
        "eager_bandwidth_gb_s": nbytes / us / 1e3,
        "graphed_us": graph_us,
        "graphed_us_per_layer": graph_us / layers,
        "graphed_bandwidth_gb_s": nbytes / graph_us / 1e3,
        "graph_over_graphed_time": row["graph_us_per_layer"] / (graph_us / layers),
        "read_bandwidth_gb_s": stream_bytes / read.median / 1e9,
        "bench_bytes_read": row["bytes_read"],
        "bench_graph_us_per_layer": row["graph_us_per_layer"],
        "bench_graph_bandwidth_gb_s": row["graph_bandwidth_gb_s"],
        "bench_plain_bandwidth_gb_s": row["plain_bandwidth_gb_s"],
        "graph_over_eager_time": row["graph_us_per_layer"] / (us / layers),
        "bytes_agree": abs(nbytes - row["bytes_read"]) / nbytes,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("snapshot")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("decode_step_check: no CUDA GPU here", file=sys.stderr)
        return 1
    with open(args.snapshot, encoding="utf-8") as handle:
        rows = (json.load(handle).get("measurements") or {}).get("decode_step") or []
    out: dict[str, Any] = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "rows": [],
        "not_checked": [],
    }
    for row in rows:
        if row.get("status") != "ok" or not row.get("cuda_graph"):
            continue
        if row.get("moe_experts") or row.get("dtype") != "bf16":
            out["not_checked"].append(
                {
                    "model": row["model"],
                    "tp": row.get("tp"),
                    "tokens": row["tokens"],
                    "dtype": row.get("dtype"),
                    "why": "MoE layer (an eager pass is one product per expert)"
                    if row.get("moe_experts")
                    else "not bf16 (nn.Linear has no fp8 weights)",
                }
            )
            continue
        checked = check_row(torch, row)
        out["rows"].append(checked)
        print(
            f"{checked['model']} TP {checked['tp']} T={checked['tokens']}: eager "
            f"{checked['eager_us_per_layer']:.1f} us/layer "
            f"({checked['eager_bandwidth_gb_s']:.0f} GB/s), graphed "
            f"{checked['graphed_us_per_layer']:.1f} us/layer "
            f"({checked['graphed_bandwidth_gb_s']:.0f} GB/s), bench graph "
            f"{checked['bench_graph_us_per_layer']:.1f} us/layer "
            f"({checked['bench_graph_bandwidth_gb_s']:.0f} GB/s), read-only stream "
            f"{checked['read_bandwidth_gb_s']:.0f} GB/s, bytes differ by "
            f"{checked['bytes_agree']:.2%}"
        )
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(out, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
