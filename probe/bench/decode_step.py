"""The model's own decode step on this GPU: its matrices, at its dtype, streamed layer after layer.

    python -m topoctl.probe.bench.decode_step --model llama-3.1-8b --model llama-3.1-70b@8 --tokens 1 4 16 --out rows.json

For each layer of the model (its shapes from the built-in profile or a config.json) one set of weight
matrices is allocated on the GPU: the fused QKV and output projections, the gated MLP (gate+up, down) of a
dense layer, and for an MoE layer every routed expert. A forward over T tokens multiplies a [T, hidden]
activation by every matrix of every layer in turn (for an MoE layer, only the experts T tokens are routed to:
k experts per token drawn uniformly, so the distinct experts of T tokens). The whole pass is captured in one
CUDA graph and replayed; time per replay gives the achieved bandwidth (weight bytes read / time) and the time
per layer. The same pass is then run again without a graph and timed with the host clock (plain torch), and a
device-to-device copy of about the model's size is timed as an independent bandwidth figure: three numbers
measured in the same run that should agree where the step is bandwidth-bound.

The rows are what the launch model reads first (snapshot measurements.decode_step; origin "measured on this
machine"). Attention over a KV cache, norms and sampling are not in the pass: it measures the weight reads.
This module imports torch and needs a CUDA GPU; nothing else in topoctl imports it.

Layer: probe (docs/architecture.md, "Layers").
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from dataclasses import dataclass
from typing import Any

DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


@dataclass(frozen=True)
class Shapes:
    """The matrix shapes of one model's decoder layers."""
    name: str
    layers: int
    hidden: int
    qkv_out: int
    o_in: int
    inter: int  # dense MLP width (0 when every layer is MoE)
    experts: int
    active: int
    moe_inter: int
    dense_layers: int

    @property
    def moe_layers(self) -> int:
        return self.layers - self.dense_layers if self.experts else 0


def shapes_from_config(name: str, text: dict[str, Any]) -> Shapes:
    """Shapes from a config.json's values (the keys models.py reads)."""
    hidden = int(text["hidden_size"])
    heads = int(text["num_attention_heads"])
    kv = int(text.get("num_key_value_heads") or heads)
    head_dim = int(text.get("head_dim") or hidden // heads)
    experts = int(text.get("num_experts") or text.get("num_local_experts") or text.get("n_routed_experts") or 0)
    layers = int(text["num_hidden_layers"])
    dense = int(text.get("first_k_dense_replace") or 0) if experts else layers
    return Shapes(name, layers, hidden, (heads + 2 * kv) * head_dim, heads * head_dim,
                  int(text.get("intermediate_size") or 0), experts, int(text.get("num_experts_per_tok") or 0),
                  int(text.get("moe_intermediate_size") or text.get("intermediate_size") or 0), dense)


def builtin_shapes(name: str) -> Shapes:
    from topoctl.autoconf import models

    config = dict(models.builtin_models()[name]["config"])
    return shapes_from_config(name, config.get("text_config") or config)


def sharded(shapes: Shapes, tp: int) -> Shapes:
    """One GPU's share of the layers under tensor parallelism TP (heads, MLP and expert widths split)."""
    if tp <= 1:
        return shapes
    return Shapes(f"{shapes.name} (TP {tp} shard)", shapes.layers, shapes.hidden, shapes.qkv_out // tp,
                  shapes.o_in // tp, shapes.inter // tp, shapes.experts, shapes.active, shapes.moe_inter // tp,
                  shapes.dense_layers)


def load_shapes(spec: str) -> Shapes:
    """NAME (a built-in profile) or NAME=PATH (a config.json), optionally followed by @TP."""
    spec, _, tp = spec.partition("@")
    name, _, path = spec.partition("=")
    if path:
        with open(path, encoding="utf-8") as handle:
            config = json.load(handle)
        shapes = shapes_from_config(name, config.get("text_config") or config)
    else:
        shapes = builtin_shapes(name)
    return sharded(shapes, int(tp or 1))


class Layers:
    """The weight matrices of every layer, one allocation each (nothing is shared, so no read hits L2)."""

    def __init__(self, torch: Any, shapes: Shapes, dtype: Any, device: str):
        def mat(rows: int, cols: int, count: int = 0) -> Any:
            size = (count, rows, cols) if count else (rows, cols)
            return torch.empty(size, dtype=dtype, device=device).normal_(0, 0.02)

        self.shapes = shapes
        self.attn = [(mat(shapes.hidden, shapes.qkv_out), mat(shapes.o_in, shapes.hidden)) for _ in range(shapes.layers)]
        self.dense = [(mat(shapes.hidden, 2 * shapes.inter), mat(shapes.inter, shapes.hidden))
                      for _ in range(shapes.dense_layers if shapes.experts else shapes.layers)]
        self.moe = [(mat(shapes.hidden, 2 * shapes.moe_inter, shapes.experts),
                     mat(shapes.moe_inter, shapes.hidden, shapes.experts)) for _ in range(shapes.moe_layers)]
        self.element = torch.empty((), dtype=dtype).element_size()
        self.fused = True  # MoE experts read in one batched product per layer (False: one product per expert)

    def routed(self, tokens: int, seed: int = 0) -> list[list[int]]:
        """Per MoE layer, the distinct experts `tokens` tokens are routed to (k each, uniformly drawn)."""
        rng = random.Random(seed)
        out = []
        for _ in self.moe:
            chosen: set[int] = set()
            for _ in range(tokens):
                chosen.update(rng.sample(range(self.shapes.experts), self.shapes.active))
            out.append(sorted(chosen))
        return out

    def bytes_read(self, routed: list[list[int]]) -> int:
        s = self.shapes
        per_attn = s.hidden * s.qkv_out + s.o_in * s.hidden
        dense = len(self.dense) * 3 * s.hidden * s.inter
        experts = sum(len(r) for r in routed) * 3 * s.hidden * s.moe_inter
        return (s.layers * per_attn + dense + experts) * self.element

    def moe_fused(self, x: Any, up: Any, down: Any, experts: list[int]) -> Any:
        """The distinct experts of an MoE layer read in one batched product each (as a fused MoE kernel reads
        them: every routed expert's weights once). The routed experts are relabelled as the first n of the
        layer (the bytes read are the same) so that the batch is a view, not a gathered copy."""
        n = len(experts)
        tokens = x.expand(n, x.shape[0], x.shape[1])
        inner = (tokens @ up[:n])[:, :, : self.shapes.moe_inter]
        return (inner @ down[:n]).sum(0)

    def forward(self, x: Any, routed: list[list[int]]) -> Any:
        """One pass: x [T, hidden] through every layer's matrices (outputs discarded but kept alive)."""
        out = x
        moe_index = 0
        dense_index = 0
        for layer in range(self.shapes.layers):
            qkv, o = self.attn[layer]
            attn_out = (out @ qkv)[:, : self.shapes.o_in] @ o
            if self.shapes.experts and layer >= self.shapes.dense_layers:
                up, down = self.moe[moe_index]
                if self.fused:
                    mlp_out = self.moe_fused(attn_out, up, down, routed[moe_index])
                else:
                    mlp_out = sum((attn_out @ up[e])[:, : self.shapes.moe_inter] @ down[e] for e in routed[moe_index])
                moe_index += 1
            else:
                up, down = self.dense[dense_index]
                mlp_out = (attn_out @ up)[:, : self.shapes.inter] @ down
                dense_index += 1
            out = mlp_out
        return out


def _graph_time_us(torch: Any, layers: Layers, x: Any, routed: list[list[int]], replays: int) -> list[float]:
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            layers.forward(x, routed)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        layers.forward(x, routed)
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1000.0)
    return times[2:] if len(times) > 4 else times


def _plain_time_us(torch: Any, layers: Layers, x: Any, routed: list[list[int]], repeats: int) -> list[float]:
    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        begin = time.perf_counter()
        layers.forward(x, routed)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - begin) * 1e6)
    return times[1:] if len(times) > 2 else times


def copy_bandwidth(torch: Any, nbytes: int, repeats: int = 10) -> float:
    """Bytes/s of a device-to-device copy (read + write counted) of `nbytes`: an independent bandwidth figure."""
    src = torch.empty(nbytes // 2, dtype=torch.int16, device="cuda")
    dst = torch.empty_like(src)
    dst.copy_(src)
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        dst.copy_(src)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1000.0)
    del src, dst
    return 2 * nbytes / statistics.median(times)


def measure(shapes: Shapes, tokens: list[int], dtype_name: str = "bf16", replays: int = 20,
            moe_modes: tuple[bool, ...] = (True,)) -> list[dict[str, Any]]:
    import torch

    layers = Layers(torch, shapes, getattr(torch, DTYPES[dtype_name]), "cuda")
    rows = []
    for count, fused in [(t, f) for f in (moe_modes if shapes.experts else (True,)) for t in tokens]:
        layers.fused = fused
        routed = layers.routed(count)
        x = torch.randn(count, shapes.hidden, dtype=layers.attn[0][0].dtype, device="cuda")
        nbytes = layers.bytes_read(routed)
        graph = _graph_time_us(torch, layers, x, routed, replays)
        plain = _plain_time_us(torch, layers, x, routed, max(5, replays // 4))
        g = statistics.median(graph)
        rows.append({"model": shapes.name, "dtype": dtype_name, "tokens": count, "layers": shapes.layers,
                     "bytes_read": nbytes, "bytes_per_layer": nbytes / shapes.layers,
                     "distinct_experts_per_moe_layer": (statistics.mean(len(r) for r in routed) if routed else None),
                     "graph_us": {"median": g, "min": float(min(graph)), "max": float(max(graph)), "n": len(graph)},
                     "graph_bandwidth_gb_s": nbytes / g / 1e3, "graph_us_per_layer": g / shapes.layers,
                     "plain_us": {"median": statistics.median(plain), "min": min(plain), "n": len(plain)},
                     "plain_bandwidth_gb_s": nbytes / statistics.median(plain) / 1e3,
                     "moe_experts": ("one batched product per layer" if fused else "one product per expert")
                     if shapes.experts else None,
                     "cuda_graph": True, "status": "ok"})
    total = int(layers.bytes_read(layers.routed(1)))
    del layers
    torch.cuda.empty_cache()
    copy = copy_bandwidth(torch, min(max(total, 1 << 30), 8 << 30))
    for row in rows:
        row["copy_bandwidth_gb_s"] = copy / 1e9
    return rows


def merge_into_snapshot(path: str, rows: list[dict[str, Any]]) -> None:
    """Replace the snapshot's decode-step rows of the models measured now; written whole or not at all."""
    import os
    import tempfile

    with open(path, encoding="utf-8") as handle:
        snapshot = json.load(handle)
    measurements = snapshot.setdefault("measurements", {}) or {}
    snapshot["measurements"] = measurements
    measured = {(r["model"], r["dtype"]) for r in rows}
    kept = [r for r in measurements.get("decode_step") or [] if (r.get("model"), r.get("dtype")) not in measured]
    measurements["decode_step"] = kept + rows
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(snapshot, handle, indent=1)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Time the model's decode-step weight reads on this GPU.")
    parser.add_argument("--model", action="append", required=True,
                        help="NAME (built-in profile) or NAME=CONFIG.json, optionally @TP for one GPU's shard (repeatable)")
    parser.add_argument("--tokens", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--moe-per-expert", action="store_true",
                        help="also time MoE layers with one product per expert (launch-bound; for comparison)")
    parser.add_argument("--out", required=True, help="write the rows here (JSON)")
    parser.add_argument("--snapshot", help="also add the rows to this snapshot's measurements.decode_step (the launch "
                                           "model then uses them first)")
    args = parser.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("decode_step: no CUDA GPU here", file=sys.stderr)
        return 1
    rows = []
    for name in args.model:
        rows += measure(load_shapes(name), args.tokens, args.dtype,
                        moe_modes=(True, False) if args.moe_per_expert else (True,))
        torch.cuda.empty_cache()
    doc = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__, "cuda": torch.version.cuda,
           "rows": rows}
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump(doc, handle, indent=1)
    if args.snapshot:
        merge_into_snapshot(args.snapshot, rows)
    for row in rows:
        mode = f" [{row['moe_experts']}]" if row.get("moe_experts") else ""
        print(f"{row['model']}{mode} T={row['tokens']}: graph {row['graph_us']['median']:.0f} us "
              f"({row['graph_bandwidth_gb_s']:.0f} GB/s, {row['graph_us_per_layer']:.1f} us/layer), plain "
              f"{row['plain_us']['median']:.0f} us ({row['plain_bandwidth_gb_s']:.0f} GB/s), copy "
              f"{row['copy_bandwidth_gb_s']:.0f} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
