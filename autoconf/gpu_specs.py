"""GPU facts the launch model needs: memory size (the snapshot's `gpus[].memory_total_bytes`, what
NVML reports; else the datasheet's) and memory bandwidth (the datasheet's, from
topoctl/data/gpus.yaml through topoctl.core.gpus.lookup, with its sources).

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from topoctl.autoconf import measured_ops
from topoctl.autoconf.step_network import node_nics
from topoctl.core.pep440 import parse
from topoctl.rules.sglang.spelling import switch
from topoctl.snapshot.view import SnapshotLike, view_of

MIB = 1024**2


def gpu_bandwidth(name: str | None) -> tuple[float, str] | None:
    """(memory bandwidth in bytes/s, source) for an NVML GPU name; None when the GPU table has no
    number."""
    from topoctl.core import gpus

    model = gpus.lookup(name) if name else None
    if model is None or not model.memory_bandwidth_gb_s:
        return None
    return float(
        model.memory_bandwidth_gb_s
    ) * 1e9, f"topoctl/data/gpus.yaml {model.key}: {model.sources[0]}"


def target_gpu(snapshot: SnapshotLike) -> dict[str, Any]:
    """The first GPU's name, memory and bandwidth (a launch runs on GPUs of one model)."""
    from topoctl.core import gpus

    first = view_of(snapshot).first_gpu
    name = first.get("name")
    memory = first.get("memory_total_bytes")
    memory_source = "snapshot gpus[0].memory_total_bytes"
    if not isinstance(memory, (int, float)) or isinstance(memory, bool) or memory < MIB:
        # Below 1 MiB is no GPU's memory but a broken reading (SGLang works in whole MiB: 0 MiB
        # would divide by zero in the memory model): the datasheet's figure, as for no reading at
        # all.
        model = gpus.lookup(name) if name else None
        memory = model.memory_bytes if model else None
        memory_source = f"topoctl/data/gpus.yaml {model.key}" if model and memory else "unknown"
    bandwidth = gpu_bandwidth(name)
    known = gpus.lookup(name) if name else None
    out = {
        "name": name,
        "compute_capability": known.compute_capability if known else None,
        "memory_bytes": int(memory) if memory else None,
        "memory_source": memory_source,
        "bandwidth": bandwidth[0] if bandwidth else None,
        "bandwidth_source": bandwidth[1] if bandwidth else "no bandwidth known for this GPU",
    }
    measured = decode_step_bandwidth(snapshot)
    if measured is not None:
        out["decode_step_bandwidth"], out["decode_step_source"] = measured
    ops = measured_ops.from_rows(view_of(snapshot).measurement_rows("decode_ops"))
    if ops is not None:  # per-op rows: the composed step reads them before the op tables
        out["decode_ops"] = ops
    nics = node_nics(
        snapshot
    )  # what a TP group across nodes like this one talks over (step_network.py)
    if nics is not None:
        out["node_nic_bytes_per_s"], out["node_nic_source"] = nics
    return out


@dataclass(frozen=True)
class StreamLine:
    """The decode-step rows as a line, time per layer = fixed_us + bytes per layer / bandwidth: its
    slope is the rate the box streams memory at once the per-layer fixed time is paid (what the KV
    read streams at)."""

    bandwidth: float  # bytes/s, 1 / slope
    fixed_us: float  # the intercept, us a layer
    rows: int
    # the weight format of the rows the line runs through ("all formats" when bf16 was not measured)
    dtype: str


# the line's rows: fp8 rows stream slower (the activation's conversion, the scaled product)
STREAM_FORMAT = "bf16"


def stream_line(points: list[tuple[float, float]], dtype: str) -> StreamLine | None:
    """Least squares over (bytes per layer, bytes/s) points of time per layer against bytes per
    layer; None without two layer sizes or with a slope that is not positive (no rate can be read
    from such rows)."""
    times = [(x, x / y * 1e6) for x, y in points if x > 0 and y > 0]
    if len({x for x, _ in times}) < 2:
        return None
    mean_x = sum(x for x, _ in times) / len(times)
    mean_y = sum(y for _, y in times) / len(times)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in times) / sum(
        (x - mean_x) ** 2 for x, _ in times
    )
    if slope <= 0:
        return None
    return StreamLine(
        bandwidth=1e6 / slope, fixed_us=mean_y - slope * mean_x, rows=len(times), dtype=dtype
    )


class MeasuredBandwidth:
    """Achieved bandwidth by the bytes a layer streams, from `topoctl bench --decode-step` rows
    (one-token passes captured in a CUDA graph): piecewise linear in log(bytes per layer), flat
    beyond the rows. Rows are kept by weight format: an fp8 layer pays the activation's conversion
    and a scaled product, so it streams slower than a bf16 layer of the same bytes (the H200 rows:
    1850 against about 2400 GB/s at 107 MB); `for_dtype` gives the curve of the launch's format, or
    of all rows when that one was not measured. `stream` is the line through the rows (StreamLine),
    the same for every format: what the KV read streams at."""

    def __init__(
        self,
        points: list[tuple[float, float]],
        by_dtype: dict[str, list[tuple[float, float]]] | None = None,
        stream: StreamLine | None = None,
    ):
        self.points = sorted(points)
        self.by_dtype = {k: sorted(v) for k, v in (by_dtype or {}).items()}
        self.stream = stream

    def for_dtype(self, dtype: str) -> MeasuredBandwidth:
        points = self.by_dtype.get(dtype)
        return MeasuredBandwidth(points, stream=self.stream) if points else self

    def __call__(self, layer_bytes: float) -> float:

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


# the MoE rows whose experts are read as a fused MoE kernel reads them (the per-expert rows measure
# dispatch)
FUSED_EXPERT_ROWS = (
    None,
    "one batched product per layer",
    "one product per layer for the routed experts",
)


def decode_step_bandwidth(snapshot: SnapshotLike) -> tuple[MeasuredBandwidth, str] | None:
    """The achieved bandwidth `topoctl bench` measured for decode-step weight reads on this machine
    (snapshot measurements.decode_step, rows of one token in a CUDA graph), or None when none was
    measured. Its `stream` is the line through the bf16 CUDA-graph rows of every token count (all
    formats when no bf16 row was measured), as benchmarks/launch_model_checks.py draws the H200 line
    the datasheet x eta figure comes from."""
    graph_rows = [
        r
        for r in view_of(snapshot).measurement_rows("decode_step")
        if isinstance(r, dict)
        and r.get("status", "ok") == "ok"
        and r.get("cuda_graph")
        and r.get("moe_experts") in FUSED_EXPERT_ROWS
    ]
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
    stream = (
        stream_line(line_points[STREAM_FORMAT], STREAM_FORMAT)
        if line_points.get(STREAM_FORMAT)
        else stream_line([p for pts in line_points.values() for p in pts], "all formats")
    )
    models = sorted({str(r.get("model")) for r in rows})
    return MeasuredBandwidth(points, by_dtype, stream), (
        f"snapshot measurements.decode_step (topoctl bench --decode-step): {len(points)} "
        f"one-token passes in a CUDA graph ({', '.join(models)}), read at this layer size"
    )


def _point(row: dict[str, Any]) -> tuple[float, float] | None:
    """(bytes per layer, bytes/s) of a decode-step row; None when it lacks either."""
    try:
        return float(row["bytes_per_layer"]), float(row["graph_bandwidth_gb_s"]) * 1e9
    except (KeyError, TypeError, ValueError):
        return None


# ------------------------------------------------------------------------------ the decode kernel
# path

KERNELS_FILE = "autoconf/data/sglang-kernels.yaml"
# launch settings that replace the path SGLang would pick: an explicit backend or DP attention (the
# fusion is set only without DP attention; the runner and attention only when left at auto / unset)
PATH_OVERRIDES = ("moe_runner_backend", "attention_backend", "decode_attention_backend")
PATH_OVERRIDE_SWITCHES = ("dp_attention",)  # bool settings, read through spelling.switch
# a MoE all-to-all backend other than "none" changes the path too: the fusion gate (0.5.7
# server_args.py:1491, 0.5.23 arg_groups/overrides.py:995) and the flashinfer_trtllm picks (0.5.7
# :1133-1137 for DeepSeek, 0.5.23 arg_groups/model_overrides/qwen3_moe.py:83) hold only with
# moe_a2a_backend "none"
A2A_NONE = ("", "none")


def sm_family(compute_capability: str | None) -> str | None:
    """sm100 for compute capability 10.x, sm90 for 9.x, ... (the family SGLang's is_sm100_supported
    tests)."""
    if not compute_capability:
        return None
    major = str(compute_capability).split(".")[0]
    return f"sm{major}0" if major.isdigit() else None


def _in_range(release: str, entry: dict[str, Any]) -> bool:
    version, first, through = (
        parse(release),
        parse(str(entry["first"])),
        parse(str(entry["through"])),
    )
    return bool(version and first and through and first <= version <= through)


def _matches(entry: dict[str, Any], architecture: str, sm: str, quant: str | None) -> bool:
    wanted = entry.get("quantization")
    return (
        entry.get("architecture") == architecture
        and entry.get("sm") == sm
        and (wanted == "any" or wanted == quant)
    )


def kernel_path(
    release: str | None,
    compute_capability: str | None,
    model: dict[str, Any],
    launch: dict[str, Any] | None = None,
) -> Any:
    """The decode kernel path SGLang `release` picks for `model` on a GPU of `compute_capability`
    (decode_terms.KernelPath, from autoconf/data/sglang-kernels.yaml); the generic path when no
    entry holds that release, GPU family, architecture and quantization, when the release is
    unknown, or when the launch sets a backend or DP attention itself. Then the launch's own fusion
    setting: asked for where no entry has the fusion on, the fused allreduces SGLang runs for it
    (`explicit`), or why none; and the fusion off, with why, where the launch turns it off or SGLang
    does itself (`explicit.turned_off`)."""
    from topoctl.autoconf.data_files import load

    doc = load("sglang-kernels.yaml") or {}
    sm = sm_family(compute_capability)
    path = _default_path(doc, release, sm, model, launch or {})
    asked = switch(
        launch or {}, FUSION_SETTING
    )  # True: the flag; False: --enforce-disable-...; None: not set
    if asked is True and not path.allreduce_fusion:
        path = _asked_fusion(
            doc, path, FusionAsk(release, sm, str(model.get("architecture")), launch or {})
        )
    if path.allreduce_fusion:
        off = _turned_off(doc, release, launch or {}, asked)
        if off:
            path = replace(path, allreduce_fusion=False, fusion_note=off)
    return path


def _default_path(
    doc: dict[str, Any],
    release: str | None,
    sm: str | None,
    model: dict[str, Any],
    launch: dict[str, Any],
) -> Any:
    """The path of the entry that holds the launch, else the generic one (see kernel_path)."""
    from topoctl.autoconf.decode_terms import KernelPath

    if (
        not release
        or not sm
        or any(launch.get(key) for key in PATH_OVERRIDES)
        or any(switch(launch, key) for key in PATH_OVERRIDE_SWITCHES)
    ):
        return KernelPath()
    if str(launch.get("moe_a2a_backend") or "").lower() not in A2A_NONE:
        return KernelPath()
    quant = (model.get("quantization") or {}).get("method")
    architecture = str(model.get("architecture"))
    for entry in doc.get("paths") or ():
        if _matches(entry, architecture, sm, quant) and _in_range(release, entry):
            runner = str(entry["moe_runner"])
            fusion = doc.get("fusion") or {}
            lines = (entry.get("source") or {}).get(
                release
            ) or f"read in {', '.join(entry.get('source') or {})}"
            return KernelPath(
                moe_runner=runner,
                moe_family=str(
                    ((doc.get("runners") or {}).get(runner) or {}).get("family", "generic")
                ),
                decode_attention=str(entry["decode_attention"]),
                allreduce_fusion=bool(entry["allreduce_fusion"]),
                fusion_max_tokens=int(fusion.get("max_tokens") or 0),
                source=f"SGLang {release} on {sm}, {architecture}: sglang {lines} ({KERNELS_FILE})",
            )
    return KernelPath()


# The launch setting of the fusion flag (rules/sglang/data/settings.yaml:
# --enable-flashinfer-allreduce-fusion, --flashinfer-allreduce-fusion-backend from 0.5.14; false:
# --enforce-disable-flashinfer-allreduce-fusion).
FUSION_SETTING = "flashinfer_allreduce_fusion"
NO_SAVING = "no norm kernel saved"


@dataclass(frozen=True)
class FusionAsk:
    """A launch that sets the fusion flag: the release, the GPU's SM family, the model's
    architecture, the launch."""

    release: str | None
    sm: str | None
    architecture: str
    launch: dict[str, Any]


def _release_lines(rows: dict[str, Any] | None, release: str) -> str:
    rows = rows or {}
    return str(rows.get(release) or f"read in {', '.join(rows)}")


def _asked_fusion(doc: dict[str, Any], path: Any, ask: FusionAsk) -> Any:
    """The path of a launch that sets the fusion flag where no entry has the fusion on: the fused
    allreduces SGLang runs for it (sglang-kernels.yaml `explicit`), or the path unchanged with why
    it saves nothing."""
    explicit, fusion = doc.get("explicit") or {}, doc.get("fusion") or {}
    why = _not_fused(explicit, fusion, ask)
    row = _architecture_row(explicit, ask)
    if why or row is None or ask.release is None:
        return replace(path, fusion_note=f"{NO_SAVING}: the launch sets the fusion flag, but {why}")
    lines = _release_lines(row.get("source"), ask.release)
    if row["fused"] == "none":
        return replace(
            path,
            fusion_note=f"{NO_SAVING}: the launch sets the fusion flag, but it changes no kernel "
            "of "
            f"{ask.architecture} in SGLang {ask.release}: sglang {lines} ({KERNELS_FILE} "
            "`explicit`)",
        )
    return replace(
        path,
        allreduce_fusion=True,
        fused=str(row["fused"]),
        fusion_max_tokens=int(fusion.get("max_tokens") or 0),
        source=f"SGLang {ask.release} on {ask.sm}, {ask.architecture}, the fusion flag set by "
        f"the launch: sglang {lines}; the fused call: "
        f"{_release_lines(fusion.get('source'), ask.release)} ({KERNELS_FILE} `explicit`)",
    )


def _architecture_row(explicit: dict[str, Any], ask: FusionAsk) -> dict[str, Any] | None:
    for row in explicit.get("architectures") or ():
        if ask.architecture in row["architectures"] and ask.release and _in_range(ask.release, row):
            return dict(row)
    return None


def _not_fused(explicit: dict[str, Any], fusion: dict[str, Any], ask: FusionAsk) -> str:
    """Why SGLang runs no fused call for a launch that sets the flag (empty when it does, or may:
    the row)."""
    if not ask.release or not ask.sm:
        return "no SGLang release or GPU family is known, so what the flag does was not read"
    if switch(ask.launch, "dp_attention"):
        return (
            "SGLang's communicator skips the fusion under DP attention "
            "(apply_flashinfer_allreduce_fusion: not is_dp_attention_enabled(); sglang "
            f"{_release_lines(fusion.get('source'), ask.release)})"
        )
    if str(ask.launch.get("moe_a2a_backend") or "").lower() not in A2A_NONE:
        return (
            "with a MoE all-to-all backend the layers' scatter modes change, and the fused "
            "call there was not read"
        )
    if ask.sm not in (explicit.get("sm") or ()):
        return _off_the_gate(explicit, fusion, ask)
    if _architecture_row(explicit, ask) is None:
        return (
            f"what it does for {ask.architecture} in SGLang {ask.release} was not read "
            f"({KERNELS_FILE} "
            "`explicit`), so none is counted"
        )
    return ""


def _off_the_gate(explicit: dict[str, Any], fusion: dict[str, Any], ask: FusionAsk) -> str:
    """Why a launch on a GPU outside the fusion's SM families saves nothing (sglang-kernels.yaml
    `sm_gate`)."""
    gate = explicit.get("sm_gate") or {}
    ignored, refused = gate.get("ignored") or {}, gate.get("refused") or {}
    release, sm = str(ask.release), str(ask.sm).upper()
    families = "/".join(str(family).upper() for family in explicit.get("sm") or ())
    if refused and _in_range(release, refused):
        return (
            f'SGLang {release} raises at start-up above TP 1 on {sm} ("FlashInfer allreduce '
            'fusion requires SM90 or SM10X NVIDIA GPUs.", sglang '
            f"{_release_lines(refused.get('source'), release)})"
        )
    if ignored and _in_range(release, ignored):
        return (
            f"SGLang {release} runs the fused call on {families} only, not {sm} (sglang "
            f"{_release_lines(fusion.get('source'), release)})"
        )
    return (
        f"what SGLang {release} does with it on {sm} was not read ({KERNELS_FILE} "
        "`explicit`), so none is counted"
    )


def _turned_off(
    doc: dict[str, Any], release: str | None, launch: dict[str, Any], asked: bool | None
) -> str:
    """Why a fused path is off after all: the launch turns the fusion off, or SGLang does with a
    setting of the launch (sglang-kernels.yaml `explicit.turned_off`); empty when it stays on."""
    rows = (doc.get("explicit") or {}).get("turned_off") or {}
    enforce, off = rows.get("enforce_disable"), rows.get("deterministic_inference")
    if not release:
        return ""
    if asked is False and enforce and _in_range(release, enforce):
        return (
            f"{NO_SAVING}: the launch turns the fusion off "
            "(--enforce-disable-flashinfer-allreduce-fusion; sglang "
            f"{_release_lines(enforce.get('source'), release)})"
        )
    if off and switch(launch, "deterministic_inference") is True and _in_range(release, off):
        return (
            f"{NO_SAVING}: SGLang turns the fusion off itself with "
            "--enable-deterministic-inference (sglang "
            f"{_release_lines(off.get('source'), release)})"
        )
    return ""
