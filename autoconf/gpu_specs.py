"""GPU facts the launch model needs: memory size (the snapshot's `gpus[].memory_total_bytes`, what NVML
reports; else the datasheet's) and memory bandwidth (the datasheet's, from topoctl/data/gpus.yaml through
topoctl.gpus.lookup, with its sources).

Layer: launch model and search (docs/architecture.md, "Layers").
"""
from __future__ import annotations

from typing import Any

from topoctl.snapshot_view import SnapshotLike, view_of

MIB = 1024 ** 2


def gpu_bandwidth(name: str | None) -> tuple[float, str] | None:
    """(memory bandwidth in bytes/s, source) for an NVML GPU name; None when the GPU table has no number."""
    from topoctl import gpus

    model = gpus.lookup(name) if name else None
    if model is None or not model.memory_bandwidth_gb_s:
        return None
    return float(model.memory_bandwidth_gb_s) * 1e9, f"topoctl/data/gpus.yaml {model.key}: {model.sources[0]}"


def target_gpu(snapshot: SnapshotLike) -> dict[str, Any]:
    """The first GPU's name, memory and bandwidth (a launch runs on GPUs of one model)."""
    from topoctl import gpus
    first = view_of(snapshot).first_gpu
    name = first.get("name")
    memory = first.get("memory_total_bytes")
    memory_source = "snapshot gpus[0].memory_total_bytes"
    if not isinstance(memory, (int, float)) or isinstance(memory, bool) or memory < MIB:
        # Below 1 MiB is no GPU's memory but a broken reading (SGLang works in whole MiB: 0 MiB would divide
        # by zero in the memory model): the datasheet's figure, as for no reading at all.
        model = gpus.lookup(name) if name else None
        memory = model.memory_bytes if model else None
        memory_source = f"topoctl/data/gpus.yaml {model.key}" if model and memory else "unknown"
    bandwidth = gpu_bandwidth(name)
    out = {"name": name, "memory_bytes": int(memory) if memory else None, "memory_source": memory_source,
           "bandwidth": bandwidth[0] if bandwidth else None,
           "bandwidth_source": bandwidth[1] if bandwidth else "no bandwidth known for this GPU"}
    measured = decode_step_bandwidth(snapshot)
    if measured is not None:
        out["decode_step_bandwidth"], out["decode_step_source"] = measured
    return out


class MeasuredBandwidth:
    """Achieved bandwidth by the bytes a layer streams, from `topoctl bench --decode-step` rows (one-token
    passes captured in a CUDA graph): piecewise linear in log(bytes per layer), flat beyond the rows. Rows
    are kept by weight format: an fp8 layer pays the activation's conversion and a scaled product, so it
    streams slower than a bf16 layer of the same bytes (the H200 rows: 1850 against about 2400 GB/s at
    107 MB); `for_dtype` gives the curve of the launch's format, or of all rows when that one was not measured."""

    def __init__(self, points: list[tuple[float, float]], by_dtype: dict[str, list[tuple[float, float]]] | None = None):
        self.points = sorted(points)
        self.by_dtype = {k: sorted(v) for k, v in (by_dtype or {}).items()}

    def for_dtype(self, dtype: str) -> MeasuredBandwidth:
        points = self.by_dtype.get(dtype)
        return MeasuredBandwidth(points) if points else self

    def __call__(self, layer_bytes: float) -> float:
        import math

        pts = self.points
        if layer_bytes <= pts[0][0]:
            return pts[0][1]
        if layer_bytes >= pts[-1][0]:
            return pts[-1][1]
        for (x0, y0), (x1, y1) in zip(pts, pts[1:], strict=False):
            if x0 <= layer_bytes <= x1:
                if x1 == x0:
                    return (y0 + y1) / 2
                share = (math.log(layer_bytes) - math.log(x0)) / (math.log(x1) - math.log(x0))
                return y0 + (y1 - y0) * share
        return pts[-1][1]


# the MoE rows whose experts are read as a fused MoE kernel reads them (the per-expert rows measure dispatch)
FUSED_EXPERT_ROWS = (None, "one batched product per layer", "one product per layer for the routed experts")


def decode_step_bandwidth(snapshot: SnapshotLike) -> tuple[MeasuredBandwidth, str] | None:
    """The achieved bandwidth `topoctl bench` measured for decode-step weight reads on this machine
    (snapshot measurements.decode_step, rows of one token in a CUDA graph), or None when none was measured."""
    rows = [r for r in view_of(snapshot).measurement_rows("decode_step")
            if isinstance(r, dict) and r.get("status", "ok") == "ok" and r.get("tokens") == 1 and r.get("cuda_graph")
            and r.get("moe_experts") in FUSED_EXPERT_ROWS]
    points = []
    by_dtype: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        try:
            point = (float(row["bytes_per_layer"]), float(row["graph_bandwidth_gb_s"]) * 1e9)
        except (KeyError, TypeError, ValueError):
            continue
        points.append(point)
        by_dtype.setdefault(str(row.get("dtype") or "bf16"), []).append(point)
    if not points:
        return None
    models = sorted({str(r.get("model")) for r in rows})
    return MeasuredBandwidth(points, by_dtype), (
        f"snapshot measurements.decode_step (topoctl bench --decode-step): {len(points)} one-token passes in a CUDA "
        f"graph ({', '.join(models)}), read at this layer size")
