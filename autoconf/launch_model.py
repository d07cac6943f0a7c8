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


# Where an input of the model comes from, as --explain and json name it (Input.origin).
MEASURED = "measured in the snapshot"
CITED = "cited reference table"
FIELD_REPORT = "field report"
ASSUMED = "assumed"
COMPUTED = "computed"
NO_ALLREDUCE = "none (one GPU: no allreduce)"
ORIGINS = {"measured": MEASURED, "cited": CITED, "field-report": FIELD_REPORT, "assumed": ASSUMED}


@dataclass
class Input:
    name: str
    value: float
    unit: str
    source: str
    origin: str = COMPUTED  # MEASURED, CITED, FIELD_REPORT, ASSUMED or COMPUTED (from the config, a datasheet...)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "value": round(self.value, 4), "unit": self.unit, "source": self.source,
                "origin": self.origin}


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
    allreduce_origin: str = ASSUMED  # where the per-call allreduce latency came from (ORIGINS)

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
    origin: str = ASSUMED  # MEASURED, CITED, FIELD_REPORT or ASSUMED

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


GRAPH, EAGER = "graph", "eager"  # how a bench row was run: captured in a CUDA graph, or launched eagerly
UNRECORDED = "unrecorded"  # a row that does not say (bench always does; hand-written snapshots may not)
KIND_TEXT = {GRAPH: "CUDA-graph", EAGER: "eager", UNRECORDED: "unlabelled (no cuda_graph recorded)"}


def _row_kind(row: dict[str, Any]) -> str:
    graph = row.get("cuda_graph")
    return GRAPH if graph is True else EAGER if graph is False else UNRECORDED


def measured_curves(snapshot: dict[str, Any]) -> dict[str, dict[str, dict[int, Curve]]]:
    """Allreduce rows `topoctl bench` wrote into the snapshot (measurements.allreduce, status ok), as
    {kind: {path: {world: curve}}} with kind GRAPH, EAGER or UNRECORDED: a row captured in a CUDA graph and one launched
    eagerly measure different things (the eager call pays the host's launch cost) and are never merged. Rows
    of one path, kind and world that differ in `variant` (torch symmetric memory one-shot and two-shot) are
    one curve holding, per size, the slower variant: which one SGLang runs is not read here, so no gain is
    assumed."""
    rows = SnapshotView(snapshot).measurement_rows("allreduce")
    grouped: dict[tuple[str, str, int], dict[float, tuple[float, str]]] = {}
    for row in rows:
        if not isinstance(row, dict) or row.get("status", "ok") != "ok":
            continue
        kind = _row_kind(row)
        try:
            key = (kind, str(row["path"]), int(row["world_size"]))
            kib, us = float(row["bytes"]) / KIB, float(row["latency_us"]["median"])
        except (KeyError, TypeError, ValueError):
            continue
        points = grouped.setdefault(key, {})
        variant = str(row.get("variant") or "")
        if kib not in points or points[kib][0] < us:
            points[kib] = (us, variant)
    out: dict[str, dict[str, dict[int, Curve]]] = {GRAPH: {}, EAGER: {}, UNRECORDED: {}}
    for (kind, path, world), points in sorted(grouped.items()):
        variants = sorted({variant for _, variant in points.values() if variant})
        label = f"{path} {KIND_TEXT[kind]} rows" + (f" (the slower of {'/'.join(variants)} per size)"
                                                   if len(variants) > 1 else f" ({variants[0]})" if variants else "")
        out[kind].setdefault(path, {})[world] = Curve(
            sorted((kib, us) for kib, (us, _) in points.items()), world, "steps", "measured",
            f"snapshot measurements (topoctl bench): {label}, {len(points)} sizes at {world} GPUs",
            f"{MEASURED} ({path} {KIND_TEXT[kind]} rows)")
    return out


def _origin_of(row: dict[str, Any]) -> str:
    return ORIGINS.get(str(row.get("origin") or "cited"), CITED)


def table_curves(link: str) -> dict[str, dict[int, Curve]]:
    rows = (load("costs.yaml").get("allreduce") or {}).get(link) or {}
    out: dict[str, dict[int, Curve]] = {}
    for path, row in rows.items():
        base = Curve([tuple(p) for p in row["points"]], int(row["world"]), str(row.get("scaling", "steps")),
                     str(row.get("level", "modelled")), " ".join(str(row.get("source", "")).split()), _origin_of(row))
        out[path] = {base.world: base}
        for world, points in (row.get("per_world") or {}).items():
            out[path][int(world)] = Curve([tuple(p) for p in points], int(world), "flat", base.level, base.source,
                                          base.origin)
    return out


@dataclass
class Latency:
    """One per-call allreduce latency and where it came from."""
    us: float
    level: str
    source: str
    origin: str


class Latencies:
    """Per-call allreduce latency of each path on the target: the snapshot's measurements first (the rows of
    the launch's kind: CUDA-graph rows for a launch with CUDA graphs, SGLang's default for decode; eager rows
    for --disable-cuda-graph; the other kind only when its own was not measured, and the source says so), then
    the reference table of its interconnect, then the rules' numbers, else no faster than the slowest path
    that has data."""

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
                origin = FIELD_REPORT if str(ev.source).startswith("field") else CITED
                self.rules.setdefault(ev.path, {})[world] = Curve([(kib, ev.latency_us())], world, "steps", ev.level,
                                                                  f"rule {ev.rule_id}: {ev.describe()}", origin)

    @staticmethod
    def _nearest(curves: dict[int, Curve], world: int) -> Curve:
        return curves.get(world) or curves[min(curves, key=lambda w: (abs(w - world), w))]

    def _curve(self, path: str, world: int, cuda_graph: bool = True) -> tuple[Curve, str] | None:
        """The curve for a path and how it was chosen (a note when it is not the launch's own kind)."""
        wanted, other = (GRAPH, EAGER) if cuda_graph else (EAGER, GRAPH)
        for kind in (wanted, other, UNRECORDED):
            # a 1-GPU allreduce moves no data: it says nothing about an allreduce between GPUs
            curves = {w: c for w, c in (self.measured[kind].get(path) or {}).items() if w > 1}
            if curves:
                note = "" if kind == wanted else (
                    f"; only {KIND_TEXT[kind]} rows were measured for {path}, used for this "
                    f"{KIND_TEXT[wanted]} launch")
                return self._nearest(curves, world), note
        for source in (self.table, self.rules):
            cited = source.get(path)
            if cited:
                return self._nearest(cited, world), ""
        return None

    def _paths(self) -> list[str]:
        return sorted({path for curves in self.measured.values() for path in curves} | set(self.table) | set(self.rules))

    def lookup(self, path: str, message_bytes: float, world: int, cuda_graph: bool = True) -> Latency:
        """The per-call latency of `path` for a message of `message_bytes` at TP `world`, with its source."""
        if world <= 1:
            return Latency(0.0, "exact", "one GPU: no allreduce", NO_ALLREDUCE)
        found = self._curve(path, world, cuda_graph)
        kib = message_bytes / KIB
        if found is not None:
            curve, note = found
            source = f"{path} on {self.link}: {curve.source}{note}"
            origin = curve.origin
            if note and origin.startswith(MEASURED):
                origin = origin[:-1] + f"; none of the launch's {KIND_TEXT[GRAPH if cuda_graph else EAGER]} kind)"
            if curve.world != world:
                scaled = f"scaled from {curve.world} to {world} GPUs" if curve.scaling == "steps" \
                    else f"the {curve.world}-GPU figure used at {world} GPUs"
                source += f"; {scaled}"
                origin += f", {scaled}"
            return Latency(curve.at(kib, world), curve.level, source, origin)
        known = [(c.at(kib, world), other) for other in self._paths() if other != path
                 for found_other in [self._curve(other, world, cuda_graph)] if found_other is not None
                 for c in [found_other[0]]]
        if known:
            value, other = max(known)
            return Latency(value, "modelled", f"no data for {path} on {self.link}: assumed no faster than {other}",
                           ASSUMED)
        return Latency(100.0, "modelled", f"no allreduce data for {self.link}: 100 us per call assumed", ASSUMED)

    def latency(self, path: str, message_bytes: float, world: int, cuda_graph: bool = True) -> tuple[float, str, str]:
        """(us per call, level, source)."""
        found = self.lookup(path, message_bytes, world, cuda_graph)
        return found.us, found.level, found.source


# ------------------------------------------------------------------------------------------ the model

def accept_length(model: dict[str, Any], given: float | None) -> tuple[float, str]:
    if given:
        return float(given), "--accept-length"
    table = load("costs.yaml").get("accept_length") or {}
    for row in table.get("measured") or ():
        if same_model(str(row["model"]), model):
            return float(row["value"]), " ".join(str(row["source"]).split())
    return float(table.get("default", 2.0)), " ".join(str(table.get("default_source", "default")).split())


def uses_cuda_graph(launch: dict[str, Any]) -> bool:
    """Whether the launch decodes inside CUDA graphs (SGLang's default; `--disable-cuda-graph` turns it off)."""
    from topoctl.rules.settings import normalize

    value = launch.get("cuda_graph")
    return value is None or normalize("cuda_graph", value) is not False


def forward_us(model: dict[str, Any], tp: int, path: str, tokens: int, bandwidth: float, lat: Latencies,
               kv_read_bytes: float = 0.0, cuda_graph: bool = True) -> tuple[float, float, float, float, Latency]:
    """(step, weights, allreduce, overhead us, the per-call latency used) of one forward pass over `tokens`
    tokens."""
    active = sum(per_gpu(model["active_parts_bytes"], model, tp).values())
    weights = (active + kv_read_bytes) / bandwidth * 1e6
    call = lat.lookup(path, tokens * model["allreduce_bytes_per_token"], tp, cuda_graph)
    allreduce = model["allreduces_per_forward"] * call.us
    overhead = float(load("costs.yaml")["overhead"]["per_layer_us"]) * model["layers"]
    return weights + allreduce + overhead, weights, allreduce, overhead, call


def estimate(model: dict[str, Any], launch: dict[str, Any], path: str, gpu: dict[str, Any], lat: Latencies,
             memory: Fit, objective: str = "latency", accept: float | None = None,
             context_tokens: int | None = None) -> Estimate | None:
    """The predicted tokens/s of one candidate; None when the GPU's bandwidth is unknown."""
    bandwidth = gpu.get("bandwidth")
    if not bandwidth:
        return None
    tp = int(launch.get("tp_size") or 1)
    dp = int(launch.get("dp_size") or 1)
    graph = uses_cuda_graph(launch)
    costs = load("costs.yaml")
    overhead_source = " ".join(str(costs["overhead"]["source"]).split())
    inputs = [Input("memory bandwidth", bandwidth / 1e9, "GB/s", gpu["bandwidth_source"], "datasheet"),
              Input("active weight bytes per GPU", sum(per_gpu(model["active_parts_bytes"], model, tp).values()) / 1e9,
                    "GB", model["weight_bytes_source"]),
              Input("allreduces per forward pass", model["allreduces_per_forward"], "calls",
                    "2 per layer under tensor parallelism"),
              Input("overhead per layer", float(costs["overhead"]["per_layer_us"]), "us", overhead_source,
                    FIELD_REPORT + " (fitted)")]
    batch = 1
    kv_read = 0.0
    if objective == "throughput":
        context = context_tokens or int(costs.get("throughput_context_tokens", 4096))
        batch = max(1, min(memory.cuda_graph_max_bs, memory.kv_tokens // max(context, 1)))
        kv_read = batch * (context / 2) * memory.kv_bytes_per_token
        inputs.append(Input("streams per replica", batch, "requests",
                            f"min(CUDA graph max batch {memory.cuda_graph_max_bs}, KV tokens {memory.kv_tokens} / "
                            f"context {context})"))
    step, weights, allreduce, overhead, call = forward_us(model, tp, path, batch, bandwidth, lat, kv_read, graph)
    mode = "" if graph else "; the launch decodes eagerly (--disable-cuda-graph)"
    inputs.append(Input("allreduce latency per call (decode)", call.us, "us", call.source + mode, call.origin))
    replicas = dp if objective == "throughput" else 1  # latency: one stream, whatever the replicas
    if not launch.get("speculative_algorithm"):
        rate = replicas * batch / step * 1e6
        return Estimate(rate, step, allreduce, weights, overhead, objective, inputs, batch=batch,
                        allreduce_source=call.source, allreduce_level=call.level, allreduce_origin=call.origin)
    steps = int(launch.get("speculative_num_steps") or 3)
    topk = int(launch.get("speculative_eagle_topk") or 1)
    draft_tokens = int(launch.get("speculative_num_draft_tokens") or steps + 1)
    verify, _, verify_ar, _, verify_call = forward_us(model, tp, path, batch * draft_tokens, bandwidth, lat, kv_read,
                                                      graph)
    draft_weights = memory.draft_bytes
    draft_call = lat.lookup(path, batch * topk * model["allreduce_bytes_per_token"], tp, graph)
    draft_step = draft_weights / bandwidth * 1e6 + 2 * draft_call.us + float(costs["overhead"]["per_layer_us"])
    cycle = verify + steps * draft_step
    length, length_source = accept_length(model, accept)
    fitted = length_source.startswith("fitted on the field")
    length_origin = "--accept-length" if accept else FIELD_REPORT + " (fitted)" if fitted else "published"
    inputs += [Input("allreduce latency per call (verify)", verify_ar / max(model["allreduces_per_forward"], 1), "us",
                     verify_call.source, verify_call.origin),
               Input("draft weight bytes per GPU", draft_weights / 1e9, "GB", "; ".join(memory.notes) or "draft model"),
               Input("accept length", length, "tokens per cycle", length_source, length_origin)]
    rate = replicas * batch * length / cycle * 1e6
    return Estimate(rate, verify, verify_ar + steps * 2 * draft_call.us, weights, overhead, objective, inputs,
                    cycle_us=cycle, batch=batch, allreduce_source=verify_call.source, allreduce_level=call.level,
                    allreduce_origin=verify_call.origin)
