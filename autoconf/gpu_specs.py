"""GPU facts the launch model needs: memory size (the snapshot's `gpus[].memory_total_bytes`, what NVML
reports; else the datasheet's) and memory bandwidth (the datasheet's, from topoctl/data/gpus.yaml through
topoctl.gpus.lookup, with its sources).

Layer: launch model and search (docs/architecture.md, "Layers").
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from topoctl.pep440 import parse
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
    known = gpus.lookup(name) if name else None
    out = {"name": name, "compute_capability": known.compute_capability if known else None,
           "memory_bytes": int(memory) if memory else None, "memory_source": memory_source,
           "bandwidth": bandwidth[0] if bandwidth else None,
           "bandwidth_source": bandwidth[1] if bandwidth else "no bandwidth known for this GPU"}
    measured = decode_step_bandwidth(snapshot)
    if measured is not None:
        out["decode_step_bandwidth"], out["decode_step_source"] = measured
    return out


@dataclass(frozen=True)
class StreamLine:
    """The decode-step rows as a line, time per layer = fixed_us + bytes per layer / bandwidth: its slope is
    the rate the box streams memory at once the per-layer fixed time is paid (what the KV read streams at)."""
    bandwidth: float  # bytes/s, 1 / slope
    fixed_us: float  # the intercept, us a layer
    rows: int
    dtype: str  # the weight format of the rows the line runs through ("all formats" when bf16 was not measured)


STREAM_FORMAT = "bf16"  # the line's rows: fp8 rows stream slower (the activation's conversion, the scaled product)


def stream_line(points: list[tuple[float, float]], dtype: str) -> StreamLine | None:
    """Least squares over (bytes per layer, bytes/s) points of time per layer against bytes per layer; None
    without two layer sizes or with a slope that is not positive (no rate can be read from such rows)."""
    times = [(x, x / y * 1e6) for x, y in points if x > 0 and y > 0]
    if len({x for x, _ in times}) < 2:
        return None
    mean_x = sum(x for x, _ in times) / len(times)
    mean_y = sum(y for _, y in times) / len(times)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in times) / sum((x - mean_x) ** 2 for x, _ in times)
    if slope <= 0:
        return None
    return StreamLine(bandwidth=1e6 / slope, fixed_us=mean_y - slope * mean_x, rows=len(times), dtype=dtype)


class MeasuredBandwidth:
    """Achieved bandwidth by the bytes a layer streams, from `topoctl bench --decode-step` rows (one-token
    passes captured in a CUDA graph): piecewise linear in log(bytes per layer), flat beyond the rows. Rows
    are kept by weight format: an fp8 layer pays the activation's conversion and a scaled product, so it
    streams slower than a bf16 layer of the same bytes (the H200 rows: 1850 against about 2400 GB/s at
    107 MB); `for_dtype` gives the curve of the launch's format, or of all rows when that one was not measured.
    `stream` is the line through the rows (StreamLine), the same for every format: what the KV read streams at."""

    def __init__(self, points: list[tuple[float, float]], by_dtype: dict[str, list[tuple[float, float]]] | None = None,
                 stream: StreamLine | None = None):
        self.points = sorted(points)
        self.by_dtype = {k: sorted(v) for k, v in (by_dtype or {}).items()}
        self.stream = stream

    def for_dtype(self, dtype: str) -> MeasuredBandwidth:
        points = self.by_dtype.get(dtype)
        return MeasuredBandwidth(points, stream=self.stream) if points else self

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
    (snapshot measurements.decode_step, rows of one token in a CUDA graph), or None when none was measured.
    Its `stream` is the line through the bf16 CUDA-graph rows of every token count (all formats when no bf16
    row was measured), as benchmarks/launch_model_checks.py draws the H200 line the datasheet x eta figure
    comes from."""
    graph_rows = [r for r in view_of(snapshot).measurement_rows("decode_step")
                  if isinstance(r, dict) and r.get("status", "ok") == "ok" and r.get("cuda_graph")
                  and r.get("moe_experts") in FUSED_EXPERT_ROWS]
    rows = [r for r in graph_rows if r.get("tokens") == 1]
    points = []
    by_dtype: dict[str, list[tuple[float, float]]] = {}
    for row in rows:
        point = _point(row)
        if point is None:
            continue
        points.append(point)
        by_dtype.setdefault(str(row.get("dtype") or "bf16"), []).append(point)
    if not points:
        return None
    line_points: dict[str, list[tuple[float, float]]] = {}
    for row in graph_rows:
        point = _point(row)
        if point is not None:
            line_points.setdefault(str(row.get("dtype") or "bf16"), []).append(point)
    stream = (stream_line(line_points[STREAM_FORMAT], STREAM_FORMAT) if line_points.get(STREAM_FORMAT) else
              stream_line([p for pts in line_points.values() for p in pts], "all formats"))
    models = sorted({str(r.get("model")) for r in rows})
    return MeasuredBandwidth(points, by_dtype, stream), (
        f"snapshot measurements.decode_step (topoctl bench --decode-step): {len(points)} one-token passes in a CUDA "
        f"graph ({', '.join(models)}), read at this layer size")


def _point(row: dict[str, Any]) -> tuple[float, float] | None:
    """(bytes per layer, bytes/s) of a decode-step row; None when it lacks either."""
    try:
        return float(row["bytes_per_layer"]), float(row["graph_bandwidth_gb_s"]) * 1e9
    except (KeyError, TypeError, ValueError):
        return None


# ------------------------------------------------------------------------------ the decode kernel path

KERNELS_FILE = "autoconf/data/sglang-kernels.yaml"
# launch settings that replace the path SGLang would pick: an explicit backend or DP attention (the fusion is
# set only without DP attention; the runner and attention only when left at auto / unset)
PATH_OVERRIDES = ("moe_runner_backend", "attention_backend", "decode_attention_backend", "enable_dp_attention")
# a MoE all-to-all backend other than "none" changes the path too: the fusion gate (0.5.7 server_args.py:1491,
# 0.5.23 arg_groups/overrides.py:995) and the flashinfer_trtllm picks (0.5.7 :1133-1137 for DeepSeek, 0.5.23
# arg_groups/model_overrides/qwen3_moe.py:83) hold only with moe_a2a_backend "none"
A2A_NONE = ("", "none")


def sm_family(compute_capability: str | None) -> str | None:
    """sm100 for compute capability 10.x, sm90 for 9.x, ... (the family SGLang's is_sm100_supported tests)."""
    if not compute_capability:
        return None
    major = str(compute_capability).split(".")[0]
    return f"sm{major}0" if major.isdigit() else None


def _in_range(release: str, entry: dict[str, Any]) -> bool:
    version, first, through = parse(release), parse(str(entry["first"])), parse(str(entry["through"]))
    return bool(version and first and through and first <= version <= through)


def _matches(entry: dict[str, Any], architecture: str, sm: str, quant: str | None) -> bool:
    wanted = entry.get("quantization")
    return (entry.get("architecture") == architecture and entry.get("sm") == sm
            and (wanted == "any" or wanted == quant))


def kernel_path(release: str | None, compute_capability: str | None, model: dict[str, Any],
                launch: dict[str, Any] | None = None) -> Any:
    """The decode kernel path SGLang `release` picks for `model` on a GPU of `compute_capability`
    (decode_terms.KernelPath, from autoconf/data/sglang-kernels.yaml); the generic path when no entry holds
    that release, GPU family, architecture and quantization, when the release is unknown, or when the launch
    sets a backend or DP attention itself."""
    from topoctl.autoconf.data_files import load
    from topoctl.autoconf.decode_terms import KernelPath

    sm = sm_family(compute_capability)
    if not release or not sm or any((launch or {}).get(key) for key in PATH_OVERRIDES):
        return KernelPath()
    if str((launch or {}).get("moe_a2a_backend") or "").lower() not in A2A_NONE:
        return KernelPath()
    doc = load("sglang-kernels.yaml") or {}
    quant = (model.get("quantization") or {}).get("method")
    architecture = str(model.get("architecture"))
    for entry in doc.get("paths") or ():
        if _matches(entry, architecture, sm, quant) and _in_range(release, entry):
            runner = str(entry["moe_runner"])
            fusion = doc.get("fusion") or {}
            lines = (entry.get("source") or {}).get(release) or f"read in {', '.join(entry.get('source') or {})}"
            return KernelPath(moe_runner=runner, moe_family=str(((doc.get("runners") or {}).get(runner) or {})
                                                                .get("family", "generic")),
                              decode_attention=str(entry["decode_attention"]),
                              allreduce_fusion=bool(entry["allreduce_fusion"]),
                              fusion_max_tokens=int(fusion.get("max_tokens") or 0),
                              source=f"SGLang {release} on {sm}, {architecture}: sglang {lines} ({KERNELS_FILE})")
    return KernelPath()
