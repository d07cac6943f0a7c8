"""The composed decode step (step_model.py) as the launch model's estimate: where the GPU has op
tables, its tok/s, band, parts and per-op inputs replace the fitted terms'; elsewhere the fitted
model stays and says why.

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from topoctl.autoconf import step_model
from topoctl.autoconf.step_network import fabric

STEP_INPUT = "decode step basis"
CALL_INPUT = "allreduce latency per call (decode)"  # the name launch_model's fitted inputs give it
Compose = Callable[..., step_model.Step]  # (tokens, streams=0): streams 0 is one a token
# (name, value, unit, source, origin) of one input, as launch_model.Input takes them (this module
# may not import launch_model, which imports it)
InputRow = tuple[str, float, str, str, str]


def composed_step(
    case: Any, feat: Any, batch: int, context: float, cuda_graph: bool
) -> tuple[step_model.Step, str, Compose] | None:
    """(the step of `batch` tokens, its system, a function composing it at other token counts), or
    None where the GPU has no op tables or the launch decodes eagerly (the tables time CUDA-graph
    kernels)."""
    from topoctl.autoconf.decode_terms import fused_allreduces

    system = step_model.table_system(step_model.gpu_key(case.gpu))
    if system is None or not cuda_graph or not case.gpu.get("bandwidth") or measured_rows(case.gpu):
        return None
    nodes = int(
        case.model.get("nnodes") or 1
    )  # multinode.split_over_nodes: the launch's TP is one node's
    tp = int(case.launch.get("tp_size") or 1) * nodes
    model = (
        dict(case.model, parts_bytes=case.model["whole_parts_bytes"]) if nodes > 1 else case.model
    )
    nics = (
        (case.gpu["node_nic_bytes_per_s"], case.gpu["node_nic_source"])
        if "node_nic_bytes_per_s" in case.gpu
        else None
    )

    def at(tokens: int, streams: int = 0) -> step_model.Step:
        return step_model.compose(
            step_model.StepCase(
                model,
                tp,
                tokens,
                context,
                case.path,
                float(case.gpu["bandwidth"]),
                case.lat.link,
                case.lat,
                True,
                fused_allreduces(feat, tokens),
                nodes,
                fabric(nodes, nics),
                streams=streams,
                measured=case.gpu.get("decode_ops"),
            ),
            system,
        )

    try:
        return at(batch), system, at
    except (
        step_model.op_tables.OpTableError
    ):  # a shape no table covers: the fitted model, as for no tables
        return None


def measured_rows(gpu: dict[str, Any]) -> bool:
    """Whether only an older `topoctl bench --decode-step` (whole passes, no per-op rows) measured
    this box: its rows calibrate the fitted model, which a measurement on the box keeps ahead of
    reference rows from another. With per-op rows the composed step reads them (measured_ops.py)."""
    return gpu.get("decode_step_bandwidth") is not None and gpu.get("decode_ops") is None


def _part(step: step_model.Step, *starts: str) -> float:
    return sum(op.total_us for op in step.ops if op.name.startswith(starts))


def with_composed(
    est: Any, step: step_model.Step, replicas: int, batch: int, system: str
) -> tuple[dict[str, Any], list[InputRow]]:
    """The fields of launch_model.Estimate the composed step replaces (tok/s, parts, band, allreduce
    source) and its inputs after the kept ones (decode context, streams), one a op with its origin.
    """
    total = step.total_us
    allreduce = _part(step, "allreduce")
    kv = _part(step, "decode attention", "MLA decode core")
    small = _part(step, "small kernels", "SGLang per-step")
    basis = f"composed from the {system} op tables (autoconf/step_model.py; docs/op-tables.md)"
    if step.share(step_model.MEASURED):
        basis = (
            f"composed from this machine's measured GEMM rows ({step.share(step_model.MEASURED):.0%}"
            f" of the step; topoctl bench --decode-step) and the {system} op tables "
            "(autoconf/step_model.py; docs/op-tables.md)"
        )
    calls = [op for op in step.ops if op.name.startswith("allreduce")]
    source = f"{calls[0].source} [{calls[0].origin}]" if calls else est.allreduce_source
    origin = (
        est.allreduce_origin
    )  # the snapshot's or costs.yaml's, unless the op came from the op table
    if calls and f"{system}/" in calls[0].source:
        origin = f"op table, {calls[0].origin} ({system})"
    rows: list[InputRow] = [(STEP_INPUT, total, "us", basis, step_model.REFERENCE)]
    if calls:
        rows.append((CALL_INPUT, calls[0].each_us, "us", calls[0].source, origin))
    rows += [
        (
            f"op: {op.name}",
            op.total_us,
            "us",
            f"{op.count} x {op.each_us:.2f} us; {op.source}",
            op.origin,
        )
        for op in step.ops
    ]
    fields = {
        "tokens_per_s": replicas * batch / total * 1e6,
        "step_us": total,
        "allreduce_us": allreduce,
        "allreduce_source": source,
        "allreduce_origin": origin,
        "weights_us": total - allreduce - kv - small,
        "kv_us": kv,
        "overhead_us": small,
        "band": step.band,
        "band_source": step.band_source(),
        "step_ops": step.ops,
        "step_basis": basis,
    }
    return fields, rows


def fallback_basis(gpu: dict[str, Any], cuda_graph: bool = True) -> str:
    """Why the fitted model priced the step: no op tables for the GPU, a shape they do not cover, or
    eager decode."""
    key = step_model.gpu_key(gpu)
    if measured_rows(gpu):
        return (
            "fitted launch model, calibrated by this machine's decode-step rows (measured as whole "
            "passes; rerun topoctl bench --decode-step for the per-op rows the composed step reads)"
        )
    if not cuda_graph:
        return (
            "fitted launch model: the launch decodes eagerly (--disable-cuda-graph); the op "
            "tables time CUDA-graph kernels"
        )
    if step_model.table_system(key) is not None:
        return (
            f"fitted launch model: a shape of this model is outside every {key} op table "
            "(step_model.compose)"
        )
    return (
        f"fitted launch model: no op tables for {key or gpu.get('name') or 'this GPU'} "
        f"(tables: {', '.join(sorted(set(step_model.TABLE_SYSTEMS)))})"
    )
