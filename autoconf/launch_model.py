"""The launch model: the predicted decode speed of a candidate launch, every input with its source.

One forward pass over T tokens on one GPU of a TP group:
    step = active weight bytes per GPU / memory bandwidth            (weight reads; the GPU table)
         + allreduces per pass x latency(path, T x hidden x 2 bytes, TP)   (2 per layer; costs.yaml or
                                                                            the snapshot's measurements)
         + layers x fitted per-layer overhead                        (costs.yaml `overhead`)
EAGLE-3 runs cycles of `num_steps` draft forwards (one layer, its own lm_head, 2 allreduces) and one verify
pass over `num_draft_tokens` tokens; a cycle yields `accept_length` tokens (`--accept-length`, else a
measured value for the same model, else the documented default).

latency objective: one stream's tokens/s.  throughput objective: dp replicas x B streams / step(B), with B =
min(CUDA graph max batch, KV tokens / context), and the KV cache read once per step for each stream.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from topoctl.autoconf.data_files import load
from topoctl.autoconf.memory import Fit, per_gpu
from topoctl.autoconf.models import same_model
from topoctl.autoconf.target import interconnect
from topoctl.snapshot_view import SnapshotView

KIB = 1024.0


@dataclass
class Input:
    name: str
    value: float
    unit: str
    source: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": round(self.value, 4), "unit": self.unit, "source": self.source}


@dataclass
class Estimate:
    tokens_per_s: float
    step_us: float
    allreduce_us: float
    weights_us: float
    overhead_us: float
    objective: str
    inputs: list[Input] = field(default_factory=list)
    cycle_us: float | None = None
    batch: int = 1
    allreduce_source: str = ""
    allreduce_level: str = "modelled"

    def to_dict(self) -> dict[str, Any]:
        return {"tokens_per_s": round(self.tokens_per_s, 2), "objective": self.objective, "batch": self.batch,
                "step_ms": round(self.step_us / 1000, 4), "allreduce_ms": round(self.allreduce_us / 1000, 4),
                "weights_ms": round(self.weights_us / 1000, 4), "overhead_ms": round(self.overhead_us / 1000, 4),
                "cycle_ms": round(self.cycle_us / 1000, 4) if self.cycle_us is not None else None,
                "inputs": [item.to_dict() for item in self.inputs]}


# ---------------------------------------------------------------------------------- allreduce latency

@dataclass
class Curve:
    points: list[tuple[float, float]]  # (KiB, us) at `world`
    world: int
    scaling: str
    level: str
    source: str

    def at(self, kib: float, world: int) -> float:
        pts = sorted(self.points)
        if kib <= pts[0][0]:
            value = pts[0][1]
        elif kib >= pts[-1][0]:
            value = pts[-1][1]
        else:
            value = pts[-1][1]
            for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
                if x0 <= kib <= x1:
                    value = y0 + (y1 - y0) * (kib - x0) / (x1 - x0)
                    break
        if self.scaling == "steps" and world != self.world and self.world > 1:
            value *= max(world - 1, 1) / (self.world - 1)
        return value


def measured_curves(snapshot: dict[str, Any]) -> dict[str, dict[int, Curve]]:
    """Allreduce rows `topoctl bench` wrote into the snapshot (measurements.allreduce, status ok)."""
    out: dict[str, dict[int, Curve]] = {}
    rows = SnapshotView(snapshot).measurement_rows("allreduce")
    grouped: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for row in rows:
        if not isinstance(row, dict) or row.get("status", "ok") != "ok":
            continue
        try:
            key = (str(row["path"]), int(row["world_size"]))
            grouped.setdefault(key, []).append((float(row["bytes"]) / KIB, float(row["latency_us"]["median"])))
        except (KeyError, TypeError, ValueError):
            continue
    for (path, world), points in grouped.items():
        out.setdefault(path, {})[world] = Curve(points, world, "steps", "measured",
                                                f"snapshot measurements (topoctl bench), {len(points)} sizes at {world} GPUs")
    return out


def table_curves(link: str) -> dict[str, dict[int, Curve]]:
    rows = (load("costs.yaml").get("allreduce") or {}).get(link) or {}
    out: dict[str, dict[int, Curve]] = {}
    for path, row in rows.items():
        base = Curve([tuple(p) for p in row["points"]], int(row["world"]), str(row.get("scaling", "steps")),
                     str(row.get("level", "modelled")), " ".join(str(row.get("source", "")).split()))
        out[path] = {base.world: base}
        for world, points in (row.get("per_world") or {}).items():
            out[path][int(world)] = Curve([tuple(p) for p in points], int(world), "flat", base.level, base.source)
    return out


class Latencies:
    """Per-call allreduce latency of each path on the target: the snapshot's measurements first, then the
    reference table of its interconnect, else no faster than the slowest path that has data."""

    def __init__(self, snapshot: dict[str, Any], evidence: list[Any] | None = None):
        from topoctl.autoconf.evidence import _here

        self.link = interconnect(snapshot)
        self.measured = measured_curves(snapshot)
        self.table = table_curves(self.link)
        # the rules' per-call latencies (field report, upstream reports) for paths neither of those covers
        self.rules: dict[str, dict[int, Curve]] = {}
        for ev in evidence or ():
            if ev.kind != "latency" or ev.path is None or not _here(ev, self.link):
                continue
            world = int(ev.config.get("tp_size") or 8)
            kib = float(ev.config.get("message_kib") or 14)
            current = self.rules.get(ev.path, {}).get(world)
            if current is None or current.points[0][1] < ev.latency_us():
                self.rules.setdefault(ev.path, {})[world] = Curve([(kib, ev.latency_us())], world, "steps", ev.level,
                                                                  f"rule {ev.rule_id}: {ev.describe()}")

    def _curve(self, path: str, world: int) -> Curve | None:
        for source in (self.measured, self.table, self.rules):
            curves = source.get(path)
            if curves:
                return curves.get(world) or curves[min(curves, key=lambda w: abs(w - world))]
        return None

    def latency(self, path: str, message_bytes: float, world: int) -> tuple[float, str, str]:
        """(us per call, level, source)."""
        if world <= 1:
            return 0.0, "exact", "one GPU: no allreduce"
        curve = self._curve(path, world)
        kib = message_bytes / KIB
        if curve is not None:
            return curve.at(kib, world), curve.level, f"{path} on {self.link}: {curve.source}"
        known = [(c.at(kib, world), other) for other in sorted(set(self.measured) | set(self.table) | set(self.rules))
                 if other != path
                 for c in [self._curve(other, world)] if c is not None]
        if known:
            value, other = max(known)
            return value, "modelled", f"no data for {path} on {self.link}: assumed no faster than {other}"
        return 100.0, "modelled", f"no allreduce data for {self.link}: 100 us per call assumed"


# ------------------------------------------------------------------------------------------ the model

def accept_length(model: dict[str, Any], given: float | None) -> tuple[float, str]:
    if given:
        return float(given), "--accept-length"
    table = load("costs.yaml").get("accept_length") or {}
    for row in table.get("measured") or ():
        if same_model(str(row["model"]), model):
            return float(row["value"]), " ".join(str(row["source"]).split())
    return float(table.get("default", 2.0)), " ".join(str(table.get("default_source", "default")).split())


def forward_us(model: dict[str, Any], tp: int, path: str, tokens: int, bandwidth: float, lat: Latencies,
               kv_read_bytes: float = 0.0) -> tuple[float, float, float, float, str]:
    """(step, weights, allreduce, overhead us, allreduce source) of one forward pass over `tokens` tokens."""
    active = sum(per_gpu(model["active_parts_bytes"], model, tp).values())
    weights = (active + kv_read_bytes) / bandwidth * 1e6
    per_call, _level, source = lat.latency(path, tokens * model["allreduce_bytes_per_token"], tp)
    allreduce = model["allreduces_per_forward"] * per_call
    overhead = float(load("costs.yaml")["overhead"]["per_layer_us"]) * model["layers"]
    return weights + allreduce + overhead, weights, allreduce, overhead, source


def estimate(model: dict[str, Any], launch: dict[str, Any], path: str, gpu: dict[str, Any], lat: Latencies,
             memory: Fit, objective: str = "latency", accept: float | None = None,
             context_tokens: int | None = None) -> Estimate | None:
    """The predicted tokens/s of one candidate; None when the GPU's bandwidth is unknown."""
    bandwidth = gpu.get("bandwidth")
    if not bandwidth:
        return None
    tp = int(launch.get("tp_size") or 1)
    dp = int(launch.get("dp_size") or 1)
    costs = load("costs.yaml")
    inputs = [Input("memory bandwidth", bandwidth / 1e9, "GB/s", gpu["bandwidth_source"]),
              Input("active weight bytes per GPU", sum(per_gpu(model["active_parts_bytes"], model, tp).values()) / 1e9,
                    "GB", model["weight_bytes_source"]),
              Input("allreduces per forward pass", model["allreduces_per_forward"], "calls",
                    "2 per layer under tensor parallelism"),
              Input("overhead per layer", float(costs["overhead"]["per_layer_us"]), "us",
                    " ".join(str(costs["overhead"]["source"]).split()))]
    batch = 1
    kv_read = 0.0
    if objective == "throughput":
        context = context_tokens or int(costs.get("throughput_context_tokens", 4096))
        batch = max(1, min(memory.cuda_graph_max_bs, memory.kv_tokens // max(context, 1)))
        kv_read = batch * (context / 2) * memory.kv_bytes_per_token
        inputs.append(Input("streams per replica", batch, "requests",
                            f"min(CUDA graph max batch {memory.cuda_graph_max_bs}, KV tokens {memory.kv_tokens} / "
                            f"context {context})"))
    step, weights, allreduce, overhead, ar_source = forward_us(model, tp, path, batch, bandwidth, lat, kv_read)
    ar_level = lat.latency(path, batch * model["allreduce_bytes_per_token"], tp)[1]
    per_call = allreduce / model["allreduces_per_forward"] if model["allreduces_per_forward"] else 0.0
    inputs.append(Input("allreduce latency per call (decode)", per_call, "us", ar_source))
    replicas = dp if objective == "throughput" else 1  # latency: one stream, whatever the replicas
    if not launch.get("speculative_algorithm"):
        rate = replicas * batch / step * 1e6
        return Estimate(rate, step, allreduce, weights, overhead, objective, inputs, batch=batch, allreduce_source=ar_source,
                    allreduce_level=ar_level)
    steps = int(launch.get("speculative_num_steps") or 3)
    topk = int(launch.get("speculative_eagle_topk") or 1)
    draft_tokens = int(launch.get("speculative_num_draft_tokens") or steps + 1)
    verify, _, verify_ar, _, verify_source = forward_us(model, tp, path, batch * draft_tokens, bandwidth, lat, kv_read)
    draft_weights = memory.draft_bytes
    draft_call, _, _ = lat.latency(path, batch * topk * model["allreduce_bytes_per_token"], tp)
    draft_step = draft_weights / bandwidth * 1e6 + 2 * draft_call + float(costs["overhead"]["per_layer_us"])
    cycle = verify + steps * draft_step
    length, length_source = accept_length(model, accept)
    inputs += [Input("allreduce latency per call (verify)", verify_ar / max(model["allreduces_per_forward"], 1), "us",
                     verify_source),
               Input("draft weight bytes per GPU", draft_weights / 1e9, "GB", "; ".join(memory.notes) or "draft model"),
               Input("accept length", length, "tokens per cycle", length_source)]
    rate = replicas * batch * length / cycle * 1e6
    return Estimate(rate, verify, verify_ar + steps * 2 * draft_call, weights, overhead, objective, inputs,
                    cycle_us=cycle, batch=batch, allreduce_source=verify_source, allreduce_level=ar_level)
