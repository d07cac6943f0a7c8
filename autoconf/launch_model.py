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
min(CUDA graph max batch, KV tokens / context), and the KV cache read once per step for each stream (its
--decode-context when given, else half the context), at the KV read rate of one stream's cache.

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from topoctl.autoconf.data_files import load
from topoctl.autoconf.gpu_specs import kernel_path
from topoctl.autoconf.memory import Fit, kv_bytes_per_token, per_gpu
from topoctl.autoconf.models import same_model
from topoctl.autoconf.target import interconnect
from topoctl.core.vocab import EVIDENCE_LEVEL_RANK
from topoctl.snapshot.view import SnapshotLike, view_of

KIB = 1024.0


# Where an input of the model comes from, as --explain and json name it (Input.origin).
MEASURED = "measured in the snapshot"
CITED = "cited reference table"
FIELD_REPORT = "field report"
ASSUMED = "assumed"
COMPUTED = "computed"
MEASURED_HERE = "measured on this machine"
NO_ALLREDUCE = "none (one GPU: no allreduce)"
H200_LINE = "measured (the committed H200 decode-step run)"
# the kernel path a release picks (autoconf/data/sglang-kernels.yaml)
SGLANG_SOURCE = "read from SGLang's source"
ORIGINS = {"measured": MEASURED, "cited": CITED, "field-report": FIELD_REPORT, "assumed": ASSUMED}


@dataclass(frozen=True)
class Input:
    """One number the prediction used, with where it came from (what --explain and the json list)."""

    name: str
    value: float
    unit: str
    source: str
    # MEASURED, CITED, FIELD_REPORT, ASSUMED or COMPUTED (from the config, a datasheet...)
    origin: str = COMPUTED

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": round(self.value, 4),
            "unit": self.unit,
            "source": self.source,
            "origin": self.origin,
        }


@dataclass(frozen=True)
class Estimate:
    """One candidate's prediction, built once by estimate() (a speculative one is the plain
    forward's, replaced by its cycle): every renderer and the ranking read it, none may change it.
    """

    tokens_per_s: float
    step_us: float
    allreduce_us: float
    weights_us: float
    overhead_us: float
    objective: str
    inputs: tuple[
        Input, ...
    ] = ()  # a tuple of frozen Inputs: no reader can change what another prints
    cycle_us: float | None = None
    batch: int = 1
    allreduce_source: str = ""
    allreduce_level: str = "modelled"
    allreduce_origin: str = ASSUMED  # where the per-call allreduce latency came from (ORIGINS)
    # the prediction is within tokens_per_s / band .. x band for 80% of similar held-out cases
    band: float = 1.0
    band_source: str = ""
    moe: bool = False  # the model has routed experts (its speculative gains take the MoE band)
    kv_us: float = (
        0.0  # reading the KV cache of the decode context, per forward pass (the latency objective)
    )
    step_ops: tuple[
        Any, ...
    ] = ()  # step_model.StepOp of the composed step; empty on the fitted fallback
    step_basis: str = (
        ""  # which model priced the step: the op tables of a system, or the fitted fallback and why
    )

    def band_text(self) -> str:
        return f"{self.tokens_per_s / self.band:.1f}-{self.tokens_per_s * self.band:.1f} tok/s"

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens_per_s": round(self.tokens_per_s, 2),
            "objective": self.objective,
            "batch": self.batch,
            "band": {
                "factor": round(self.band, 3),
                "low_tok_s": round(self.tokens_per_s / self.band, 2),
                "high_tok_s": round(self.tokens_per_s * self.band, 2),
                "source": self.band_source,
            },
            "step_ms": round(self.step_us / 1000, 4),
            "allreduce_ms": round(self.allreduce_us / 1000, 4),
            "weights_ms": round(self.weights_us / 1000, 4),
            "kv_read_ms": round(self.kv_us / 1000, 4),
            "overhead_ms": round(self.overhead_us / 1000, 4),
            "cycle_ms": round(self.cycle_us / 1000, 4) if self.cycle_us is not None else None,
            "step_basis": self.step_basis,
            "step_ops": [op.to_dict() for op in self.step_ops],
            "inputs": [item.to_dict() for item in self.inputs],
        }


# ---------------------------------------------------------------------------------- allreduce
# latency


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
            for (x0, y0), (x1, y1) in zip(pts, pts[1:], strict=False):
                if x0 <= kib <= x1:
                    value = y0 + (y1 - y0) * (kib - x0) / (x1 - x0)
                    break
        if self.scaling == "steps" and world != self.world and self.world > 1:
            value *= max(world - 1, 1) / (self.world - 1)
        return value


GRAPH, EAGER = (
    "graph",
    "eager",
)  # how a bench row was run: captured in a CUDA graph, or launched eagerly
UNRECORDED = (
    "unrecorded"  # a row that does not say (bench always does; hand-written snapshots may not)
)
KIND_TEXT = {GRAPH: "CUDA-graph", EAGER: "eager", UNRECORDED: "unlabelled (no cuda_graph recorded)"}


def _row_kind(row: dict[str, Any]) -> str:
    graph = row.get("cuda_graph")
    return GRAPH if graph is True else EAGER if graph is False else UNRECORDED


def measured_curves(snapshot: SnapshotLike) -> dict[str, dict[str, dict[int, Curve]]]:
    """Allreduce rows `topoctl bench` wrote into the snapshot (measurements.allreduce, status ok),
    as {kind: {path: {world: curve}}} with kind GRAPH, EAGER or UNRECORDED: a row captured in a CUDA
    graph and one launched eagerly measure different things (the eager call pays the host's launch
    cost) and are never merged. Rows of one path, kind and world that differ in `variant` (torch
    symmetric memory one-shot and two-shot) are one curve holding, per size, the slower variant:
    which one SGLang runs is not read here, so no gain is assumed."""
    rows = view_of(snapshot).measurement_rows("allreduce")
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
        label = f"{path} {KIND_TEXT[kind]} rows" + (
            f" (the slower of {'/'.join(variants)} per size)"
            if len(variants) > 1
            else f" ({variants[0]})"
            if variants
            else ""
        )
        out[kind].setdefault(path, {})[world] = Curve(
            sorted((kib, us) for kib, (us, _) in points.items()),
            world,
            "steps",
            "measured",
            f"snapshot measurements (topoctl bench): {label}, {len(points)} sizes at {world} GPUs",
            f"{MEASURED} ({path} {KIND_TEXT[kind]} rows)",
        )
    return out


def _origin_of(row: dict[str, Any]) -> str:
    return ORIGINS.get(str(row.get("origin") or "cited"), CITED)


@dataclass(frozen=True)
class Relation:
    """A path with no curve of its own in costs.yaml, priced as another path is (`priced_as`), for a
    cited relation between the two (flashinfer_fusion: the custom allreduce it replaces)."""

    priced_as: str
    level: str
    source: str

    def price(self, level: str, source: str) -> tuple[str, str]:
        """(level, source) of a path this relation prices, from those of the path it is priced as:
        the lower of the relation's level and that path's, the relation's citation before that
        path's own source. The latency is that path's, unchanged. The launch model (Latencies) and
        the per-call ranking without a model (cost.path_latencies) both price a related path through
        this, each from its own price of the path it is priced as."""
        lower = min((self.level, level), key=lambda name: EVIDENCE_LEVEL_RANK.get(name, 0))
        return lower, f"priced as {self.priced_as}: {self.source}; {self.priced_as}: {source}"


def _table_rows(link: str) -> dict[str, Any]:
    return (load("costs.yaml").get("allreduce") or {}).get(link) or {}


def table_relations(link: str) -> dict[str, Relation]:
    """The `priced_as` rows of costs.yaml for an interconnect, by path."""
    return {
        path: Relation(
            str(row["priced_as"]),
            str(row.get("level", "modelled")),
            " ".join(str(row.get("source", "")).split()),
        )
        for path, row in _table_rows(link).items()
        if row.get("priced_as")
    }


def table_unmeasured(link: str) -> dict[str, str]:
    """Why a path keeps the no-faster-than fallback on an interconnect (costs.yaml `unmeasured:`
    rows)."""
    return {
        path: " ".join(str(row["unmeasured"]).split())
        for path, row in _table_rows(link).items()
        if row.get("unmeasured")
    }


def table_curves(link: str) -> dict[str, dict[int, Curve]]:
    out: dict[str, dict[int, Curve]] = {}
    for path, row in _table_rows(link).items():
        if "points" not in row:  # a priced_as or unmeasured row (table_relations, table_unmeasured)
            continue
        base = Curve(
            [tuple(p) for p in row["points"]],
            int(row["world"]),
            str(row.get("scaling", "steps")),
            str(row.get("level", "modelled")),
            " ".join(str(row.get("source", "")).split()),
            _origin_of(row),
        )
        out[path] = {base.world: base}
        for world, points in (row.get("per_world") or {}).items():
            out[path][int(world)] = Curve(
                [tuple(p) for p in points], int(world), "flat", base.level, base.source, base.origin
            )
    return out


@dataclass
class Latency:
    """One per-call allreduce latency and where it came from."""

    us: float
    level: str
    source: str
    origin: str


class Latencies:
    """Per-call allreduce latency of each path on the target: the snapshot's measurements first (the
    rows of the launch's kind: CUDA-graph rows for a launch with CUDA graphs, SGLang's default for
    decode; eager rows for --disable-cuda-graph; the other kind only when its own was not measured,
    and the source says so), then the reference table of its interconnect, then the rules' numbers,
    else no faster than the slowest path that has data."""

    def __init__(self, snapshot: SnapshotLike, evidence: list[Any] | None = None):
        from topoctl.autoconf.evidence import _here

        self.link = interconnect(snapshot)
        self.measured = measured_curves(snapshot)
        self.table = table_curves(self.link)
        self.relations = table_relations(self.link)
        self.unmeasured = table_unmeasured(self.link)
        # the rules' per-call latencies (field report, upstream reports) for paths neither of those
        # covers
        self.rules: dict[str, dict[int, Curve]] = {}
        for ev in evidence or ():
            if ev.kind != "latency" or ev.path is None or not _here(ev, self.link):
                continue
            world = int(ev.config.get("tp_size") or 8)
            kib = float(ev.config.get("message_kib") or 14)
            current = self.rules.get(ev.path, {}).get(world)
            if current is None or current.points[0][1] < ev.latency_us():
                origin = FIELD_REPORT if str(ev.source).startswith("field") else CITED
                self.rules.setdefault(ev.path, {})[world] = Curve(
                    [(kib, ev.latency_us())],
                    world,
                    "steps",
                    ev.level,
                    f"rule {ev.rule_id}: {ev.describe()}",
                    origin,
                )

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
                note = (
                    ""
                    if kind == wanted
                    else (
                        f"; only {KIND_TEXT[kind]} rows were measured for {path}, used for this "
                        f"{KIND_TEXT[wanted]} launch"
                    )
                )
                return self._nearest(curves, world), note
        related = self._related(path, world, cuda_graph)
        if related is not None:
            return related
        for source in (self.table, self.rules):
            cited = source.get(path)
            if cited:
                return self._nearest(cited, world), ""
        return None

    def _related(self, path: str, world: int, cuda_graph: bool) -> tuple[Curve, str] | None:
        """The curve of the path a costs.yaml relation prices `path` as (its snapshot rows first, as
        that path's own lookup takes them), the relation's citation put before that path's source.
        """
        relation = self.relations.get(path)
        if relation is None or relation.priced_as == path:
            return None
        found = self._curve(relation.priced_as, world, cuda_graph)
        if found is None:
            return None
        curve, note = found
        level, source = relation.price(curve.level, curve.source)
        return replace(curve, level=level, source=source), note

    def measured_curve(
        self, path: str, world: int, cuda_graph: bool = True
    ) -> tuple[Curve, str] | None:
        """The snapshot's own measured curve for a path (its kind first, as _curve picks it), or
        None when `topoctl bench` measured that path at no world size above one."""
        found = self._curve(path, world, cuda_graph)
        if found is None or not found[0].origin.startswith(MEASURED):
            return None
        return found

    def _paths(self) -> list[str]:
        return sorted(
            {path for curves in self.measured.values() for path in curves}
            | set(self.table)
            | set(self.rules)
        )

    def lookup(
        self, path: str, message_bytes: float, world: int, cuda_graph: bool = True
    ) -> Latency:
        """The per-call latency of `path` for a message of `message_bytes` at TP `world`, with its
        source."""
        if world <= 1:
            return Latency(0.0, "exact", "one GPU: no allreduce", NO_ALLREDUCE)
        found = self._curve(path, world, cuda_graph)
        kib = message_bytes / KIB
        if found is not None:
            curve, note = found
            source = f"{path} on {self.link}: {curve.source}{note}"
            origin = curve.origin
            if note and origin.startswith(MEASURED):
                origin = (
                    origin[:-1]
                    + f"; none of the launch's {KIND_TEXT[GRAPH if cuda_graph else EAGER]} kind)"
                )
            if curve.world != world:
                scaled = (
                    f"scaled from {curve.world} to {world} GPUs"
                    if curve.scaling == "steps"
                    else f"the {curve.world}-GPU figure used at {world} GPUs"
                )
                source += f"; {scaled}"
                origin += f", {scaled}"
            return Latency(curve.at(kib, world), curve.level, source, origin)
        known = [
            (c.at(kib, world), other)
            for other in self._paths()
            if other != path
            for found_other in [self._curve(other, world, cuda_graph)]
            if found_other is not None
            for c in [found_other[0]]
        ]
        if known:
            value, other = max(known)
            why = f" ({self.unmeasured[path]})" if path in self.unmeasured else ""
            return Latency(
                value,
                "modelled",
                f"no data for {path} on {self.link}: assumed no faster than {other}{why}",
                ASSUMED,
            )
        return Latency(
            100.0,
            "modelled",
            f"no allreduce data for {self.link}: 100 us per call assumed",
            ASSUMED,
        )

    def latency(
        self, path: str, message_bytes: float, world: int, cuda_graph: bool = True
    ) -> tuple[float, str, str]:
        """(us per call, level, source)."""
        found = self.lookup(path, message_bytes, world, cuda_graph)
        return found.us, found.level, found.source


# ------------------------------------------------------------------------------------------ the
# model

FIT_ORIGIN = "fitted on the public corpus (benchmarks/data/public-decode.yaml)"


def fitted_terms() -> tuple[Any, dict[str, Any]]:
    """The fitted decode terms and the fit's record (autoconf/data/decode-fit.yaml, written by
    benchmarks/launch_model_checks.py --write); the defaults of decode_terms when no fit is stored.
    """
    from topoctl.autoconf.decode_terms import Terms

    try:
        doc = load("decode-fit.yaml") or {}
    except FileNotFoundError:
        doc = {}
    return Terms.from_dict(doc.get("terms") or {}), doc


def band_group(model: dict[str, Any], speculative: bool) -> str:
    """Which held-out cases a prediction's band comes from: speculative, plain MLA, plain MoE or
    plain dense."""
    if speculative:
        return "speculative"
    if model.get("attention") == "mla":
        return "plain-mla"
    return "plain-moe" if model.get("moe") else "plain-dense"


def band_of(group: str) -> tuple[float, str]:
    """(factor, source) of the uncertainty band of a group; 1.0 when the fit records none."""
    _, doc = fitted_terms()
    factor = float((doc.get("bands") or {}).get(group) or 1.0)
    rule = doc.get("band_rule") or "no fit recorded"
    return factor, f"{rule}, {group} cases of {doc.get('corpus', 'the corpus')}"


def accept_length(
    model: dict[str, Any], given: float | None, draft: Any = None
) -> tuple[float, str, str]:
    """(accept length, source, origin): --accept-length, else a value measured for the same model,
    else the fitted function of the draft shape (decode_terms.accept_length)."""
    from topoctl.autoconf.decode_terms import accept_length as from_shape

    if given:
        return float(given), "--accept-length", "--accept-length"
    table = load("costs.yaml").get("accept_length") or {}
    for row in table.get("measured") or ():
        if same_model(str(row["model"]), model):
            return (
                float(row["value"]),
                " ".join(str(row["source"]).split()),
                FIELD_REPORT + " (fitted)",
            )
    terms, _ = fitted_terms()
    if draft is None:
        return (
            float(table.get("default", 2.0)),
            " ".join(str(table.get("default_source", "default")).split()),
            "published",
        )
    shape = f"{draft.steps} steps, topk {draft.topk}, {draft.draft_tokens} draft tokens"
    return (
        from_shape(terms, draft),
        f"from the draft shape ({shape}), decode_terms.accept_length",
        FIT_ORIGIN,
    )


def uses_cuda_graph(launch: dict[str, Any]) -> bool:
    """Whether the launch decodes inside CUDA graphs (SGLang's default; `--disable-cuda-graph` turns
    it off)."""
    from topoctl.rules.sglang.settings import normalize

    value = launch.get("cuda_graph")
    return value is None or normalize("cuda_graph", value) is not False


def _draft_shape(model: dict[str, Any], launch: dict[str, Any], tp: int) -> Any:
    steps = int(launch.get("speculative_num_steps") or 3)
    topk = int(launch.get("speculative_eagle_topk") or 1)
    tokens = int(launch.get("speculative_num_draft_tokens") or steps + 1)
    return draft_shape(
        model, tp, steps, topk, tokens, str(launch.get("speculative_algorithm") or "EAGLE3")
    )


def draft_shape(
    model: dict[str, Any], tp: int, steps: int, topk: int, tokens: int, algorithm: str
) -> Any:
    """The draft of a speculative launch (decode_terms.Draft): its shape and the bytes its forwards
    read. An EAGLE-3 draft runs its fc (3 x hidden -> hidden, a replicated torch.nn.Linear in
    SGLang's models/llama_eagle3.py:135-139) only on the target's hidden states, i.e. in the draft
    extend; an EAGLE draft's fc (2 x hidden -> hidden, models/llama_eagle.py:82-97) runs in every
    forward."""
    from topoctl.autoconf.decode_terms import Draft

    fc = draft_fc_bytes(model, algorithm)
    per_forward = draft_read_bytes(model, tp)
    eagle3 = algorithm.upper() == "EAGLE3"
    return Draft(
        steps=steps,
        topk=topk,
        draft_tokens=tokens,
        bytes_per_gpu=per_forward + (0.0 if eagle3 else fc),
        fc_bytes=fc if eagle3 else 0.0,
    )


def _term_inputs(feat: Any, terms: Any, gpu: dict[str, Any], model: dict[str, Any]) -> list[Input]:
    """The inputs of one forward pass, each with its origin."""
    from topoctl.autoconf.decode_terms import achieved_bandwidth, moe_overhead_us

    layer_bytes = feat.per_layer_bytes()
    measured = feat.measured_bandwidth is not None
    inputs = [
        Input(
            "memory bandwidth (datasheet)",
            feat.bandwidth / 1e9,
            "GB/s",
            gpu["bandwidth_source"],
            "datasheet",
        ),
        Input(
            "achieved bandwidth at this layer size",
            achieved_bandwidth(feat, terms, layer_bytes) / 1e9,
            "GB/s",
            (gpu.get("decode_step_source") or "")
            if measured
            else f"s / (s / (datasheet x {terms.eta(feat.family):.3f} ({feat.family})) + "
            f"{terms.stream_fixed_us:.1f} us), s = {layer_bytes / 1e6:.1f} MB a layer "
            "streams per GPU (the H200 decode-step line)",
            MEASURED_HERE if measured else FIT_ORIGIN,
        ),
        Input(
            "weight bytes read per forward per GPU",
            feat.read_bytes(1, terms.rho) / 1e9,
            "GB",
            model["weight_bytes_source"] + "; one embedding row, the experts a token is routed to",
        ),
    ]
    per_layer = terms.mla_us if feat.mla else terms.attention_us
    inputs.append(
        Input(
            "overhead per MLA layer" if feat.mla else "overhead per attention layer",
            per_layer,
            "us",
            "decode_terms.PARAMETERS",
            FIT_ORIGIN,
        )
    )
    if feat.moe_layers:
        runner = f", {feat.kernel.moe_runner} (trtllm-gen)" if feat.kernel.trtllm_moe else ""
        inputs.append(
            Input(
                "overhead per MoE layer",
                moe_overhead_us(feat, terms),
                "us",
                f"{feat.moe_layers} MoE layers{runner}",
                FIT_ORIGIN,
            )
        )
    inputs.append(
        Input(
            "scheduler overhead per step",
            terms.step_us,
            "us",
            "sampling, scheduling, launch",
            FIT_ORIGIN,
        )
    )
    if feat.allreduces:
        inputs.append(
            Input(
                "allreduces per forward pass",
                feat.allreduces,
                "calls",
                "2 per layer under tensor parallelism",
            )
        )
    return inputs


SAVED_INPUT = "norm kernels saved by the fused allreduce"


def _kernel_inputs(feat: Any, terms: Any, tokens: int) -> list[Input]:
    """The decode kernel path SGLang picks (autoconf/data/sglang-kernels.yaml) when an entry or the
    launch's own fusion flag sets it, and with the fused allreduce on, the norm kernels it saves;
    where the launch asks for the fusion and SGLang saves none (KernelPath.fusion_note), a saving of
    0 and why; nothing else on the generic path."""
    from topoctl.autoconf.decode_terms import (
        BENCH_KERNELS_PER_LAYER,
        FUSED_TEXT,
        GENERIC_PATH,
        fused_allreduces,
        fusion_saved_us,
        norm_kernel_us,
    )

    path = feat.kernel
    inputs = []
    if path.source != GENERIC_PATH:
        inputs.append(
            Input(
                f"decode kernel path: MoE runner {path.moe_runner}, attention "
                f"{path.decode_attention}, allreduce fusion "
                f"{'on' if path.allreduce_fusion else 'off'}",
                fused_allreduces(feat, tokens),
                "fused allreduce calls per pass",
                path.source,
                SGLANG_SOURCE,
            )
        )
    fused = fused_allreduces(feat, tokens)
    if fused:
        inputs.append(
            Input(
                SAVED_INPUT,
                fusion_saved_us(feat, terms, tokens),
                "us",
                f"{fused} flashinfer allreduce + residual + RMSNorm calls "
                "(trtllm_allreduce_fusion through SGLang 0.5.9, allreduce_fusion from 0.5.10: "
                "sglang-kernels.yaml `fusion`; each at the allreduce latency below) in place of "
                f"an allreduce and its RMSNorm kernel, {FUSED_TEXT.get(path.fused, path.fused)}; "
                f"{norm_kernel_us(terms):.1f} us a kernel, the H200 decode-step line's fixed "
                f"time a layer over its {BENCH_KERNELS_PER_LAYER} products",
                H200_LINE,
            )
        )
    elif path.fusion_note and feat.allreduces:  # at TP 1 there is no allreduce to fuse
        inputs.append(Input(SAVED_INPUT, 0.0, "us", path.fusion_note, SGLANG_SOURCE))
    return inputs


def _spec_inputs(
    feat: Any, terms: Any, draft: Any, length: float, source: str, origin: str
) -> list[Input]:
    """The inputs of a speculative cycle, in the order the cycle runs them: draft, verify,
    bookkeeping."""
    from topoctl.autoconf.decode_terms import DRAFT_ALLREDUCES

    inputs = [
        Input(
            "draft weight bytes per GPU (one forward)",
            draft.bytes_per_gpu / 1e9,
            "GB",
            "one decoder layer + lm_head over a 32000-token draft vocabulary, bf16, split over "
            "the TP group",
            ASSUMED,
        ),
        Input(
            "draft fc bytes per GPU (the extend)",
            draft.fc_bytes / 1e9,
            "GB",
            "the EAGLE-3 fc over the target's 3 hidden states, replicated (SGLang llama_eagle3.py)",
            ASSUMED,
        ),
        Input(
            "draft forwards per cycle",
            draft.decode_forwards + 1,
            "forwards",
            f"{draft.decode_forwards} decode steps over {draft.topk} tokens + 1 extend over "
            f"{draft.extend_tokens} tokens (SGLang eagle_worker.py)",
        ),
        Input("draft overhead per forward", terms.draft_us, "us", "draft_us", FIT_ORIGIN),
    ]
    if feat.allreduces:
        inputs.append(
            Input(
                "draft collectives per forward (TP > 1)",
                DRAFT_ALLREDUCES + 1,
                "calls",
                f"{DRAFT_ALLREDUCES} allreduces + 1 NCCL all-gather of the logits; all-gather "
                f"{feat.gather_us.get(draft.topk, 0.0):.1f} us a call (the nccl path's allreduce "
                "latency at the logits' bytes, taken as its bound)",
                ASSUMED,
            )
        )
    inputs.append(
        Input(
            "per-token cost of the verify pass",
            terms.token_us,
            "us per token per layer",
            f"{draft.draft_tokens} tokens verified",
            FIT_ORIGIN,
        )
    )
    if feat.moe_layers:
        inputs.append(
            Input(
                "distinct experts read by the verify pass",
                feat.distinct_experts(draft.draft_tokens, terms.rho),
                "experts per MoE layer",
                f"E x (1 - (1 - k/E)^(1 + {terms.rho:.3f} x (T - 1))), "
                f"T = {draft.draft_tokens}, E = {feat.experts}, k = {feat.active_experts}",
                FIT_ORIGIN,
            )
        )
    inputs += [
        Input(
            "speculative cycle overhead",
            terms.cycle_us,
            "us",
            "tree build, verify bookkeeping, host syncs (no overlap scheduler with EAGLE)",
            FIT_ORIGIN,
        ),
        Input("accept length", length, "tokens per cycle", source, origin),
    ]
    return inputs


@dataclass(frozen=True)
class EstimateCase:
    """One candidate to predict: the model, its launch settings, the allreduce path it runs on, the
    GPU (gpu_specs), the snapshot's latencies, its memory fit; what is optimised (latency or
    throughput), the user's --accept-length, --context-length and --decode-context."""

    model: dict[str, Any]
    launch: dict[str, Any]
    path: str
    gpu: dict[str, Any]
    lat: Latencies
    memory: Fit
    objective: str = "latency"
    accept: float | None = None
    context_tokens: int | None = None
    decode_context: int | None = None


DECODE_CONTEXT_INPUT = "decode context (mean tokens in the KV cache while a request decodes)"
KV_READ_INPUT = "KV tokens a step reads (every stream's context)"


def decode_context(asked: int | None, memory: Fit) -> Input:
    """The decode context the latency objective reads the KV cache of (and, when given, the
    throughput objective's streams hold and read): --decode-context, else the assumed default
    (decode_terms.DEFAULT_DECODE_CONTEXT), capped by the context one request may hold (the memory
    fit's context length: --context-length, else the model's own), since no request's cache holds
    more."""
    from topoctl.autoconf.decode_terms import DEFAULT_DECODE_CONTEXT

    value = int(asked or DEFAULT_DECODE_CONTEXT)
    source = (
        "--decode-context"
        if asked
        else (
            f"assumed: {DEFAULT_DECODE_CONTEXT} tokens, a chat turn "
            "(--decode-context sets it; docs/launch-model.md, section 3)"
        )
    )
    origin = "--decode-context" if asked else ASSUMED
    cap = memory.context_length
    if cap and value > cap:
        value = int(cap)
        source += (
            f"; capped by the context length {cap} ({memory.context_source or 'the memory fit'})"
        )
    return Input(DECODE_CONTEXT_INPUT, value, "tokens", source, origin)


def _kv_rate_input(feat: Any, terms: Any, stream: Any) -> Input:
    """The rate the KV cache streams at: the slope of this machine's decode-step rows when `topoctl
    bench` measured them (gpu_specs.StreamLine), else datasheet x eta; times the fitted fraction of
    the attention kind."""
    from topoctl.autoconf.decode_terms import kv_rate

    kind = "kv_mla" if feat.mla else "kv_gqa"
    fraction = f"{kind} {terms.kv(feat.mla):.3f}"
    if stream is None:
        return Input(
            "KV read rate",
            kv_rate(feat, terms) / 1e9,
            "GB/s",
            f"datasheet x {terms.eta(feat.family):.3f} ({feat.family}) x {fraction}",
            FIT_ORIGIN,
        )
    capped = (
        f", capped at the datasheet {feat.bandwidth / 1e9:.0f} GB/s"
        if stream.bandwidth > feat.bandwidth
        else ""
    )
    return Input(
        "KV read rate",
        kv_rate(feat, terms) / 1e9,
        "GB/s",
        f"{stream.bandwidth / 1e9:.0f} GB/s{capped}, the slope of {stream.rows} {stream.dtype} "
        f"decode-step rows ({stream.fixed_us:.1f} us + bytes / rate a layer; snapshot "
        f"measurements.decode_step) x {fraction}",
        f"{MEASURED_HERE} (the decode-step rows' slope; {kind} {FIT_ORIGIN})",
    )


def _kv_inputs(
    feat: Any, terms: Any, model: dict[str, Any], tp: int, context: Input, stream: Any = None
) -> list[Input]:
    """The KV-read term's inputs: the context, the bytes a token of it holds on one GPU, the rate
    they stream at."""
    from topoctl.autoconf.decode_terms import kv_read_us

    if feat.mla:
        held = (
            f"the MLA latent ({model.get('kv_bytes_per_token_layer')} bytes a layer) of "
            f"{feat.layers} layers, on every GPU"
        )
    else:
        heads = max(1, int(model["kv_heads"]) // tp)
        held = (
            f"K and V of {heads} of {model['kv_heads']} KV heads per GPU (at least one), head_dim "
            f"{model['head_dim']}, {model['dtype_bytes']} bytes, {feat.layers} layers"
        )
    return [
        context,
        Input(
            "KV cache bytes per token of context per GPU",
            feat.kv_bytes / 1e3,
            "KB",
            f"{held} (memory.kv_bytes_per_token)",
        ),
        _kv_rate_input(feat, terms, stream),
        Input(
            "KV read per forward pass",
            kv_read_us(feat, terms),
            "us",
            "context x bytes per token / rate",
        ),
    ]


def estimate(case: EstimateCase) -> Estimate | None:
    """The predicted tokens/s of one candidate, with its band; None when the GPU's bandwidth is
    unknown."""
    from topoctl.autoconf import decode_terms
    from topoctl.autoconf.step_estimate import composed_step, fallback_basis, with_composed

    model, launch, path, gpu, lat, memory = (
        case.model,
        case.launch,
        case.path,
        case.gpu,
        case.lat,
        case.memory,
    )
    objective, accept, context_tokens = case.objective, case.accept, case.context_tokens
    if not gpu.get("bandwidth"):
        return None
    tp = int(launch.get("tp_size") or 1)
    graph = uses_cuda_graph(launch)
    terms, _ = fitted_terms()
    spec = bool(launch.get("speculative_algorithm"))
    draft = _draft_shape(model, launch, tp) if spec else None
    context = decode_context(case.decode_context, memory)
    batch, kv_context, batch_inputs = _batch(
        objective, memory, context_tokens, context if case.decode_context else None
    )
    counts = (
        (batch,)
        if draft is None
        else (batch, batch * draft.topk, batch * draft.draft_tokens, batch * draft.extend_tokens)
    )
    feat = decode_features(model, tp, path, gpu, lat, graph, counts)
    feat.kernel = kernel_path(
        memory.reserve.get("release"), gpu.get("compute_capability"), model, launch
    )
    read_context = (
        context if kv_context is None else kv_context
    )  # one stream's, or every stream's (throughput)
    feat.context = read_context.value
    measured = gpu.get("decode_step_bandwidth")
    feat.measured_bandwidth = (
        measured.for_dtype(weight_format(model)) if measured is not None else None
    )
    stream = measured.stream if measured is not None else None
    if (
        stream is not None
    ):  # no faster than the datasheet: a steeper line is the rows' noise, not the memory
        feat.measured_stream = min(stream.bandwidth, feat.bandwidth)
    inputs = (
        _term_inputs(feat, terms, gpu, model) + _kernel_inputs(feat, terms, batch) + batch_inputs
    )
    inputs += _kv_inputs(feat, terms, model, tp, read_context, stream)
    call = lat.lookup(path, batch * model["allreduce_bytes_per_token"], tp, graph)
    mode = "" if graph else "; the launch decodes eagerly (--disable-cuda-graph)"
    inputs.append(
        Input("allreduce latency per call (decode)", call.us, "us", call.source + mode, call.origin)
    )
    parts = decode_terms.forward_parts(feat, terms, batch)
    step = sum(parts.values())
    replicas = int(launch.get("dp_size") or 1) if objective == "throughput" else 1
    factor, band_source = band_of(band_group(model, spec))
    fixed = parts["overhead"] + parts["tokens"] + parts["fusion"]
    est = Estimate(
        replicas * batch / step * 1e6,
        step,
        parts["allreduce"],
        parts["weights"],
        fixed,
        objective,
        tuple(inputs),
        batch=batch,
        allreduce_source=call.source,
        allreduce_level=call.level,
        allreduce_origin=call.origin,
        band=factor,
        band_source=band_source,
        moe=bool(feat.experts),
        kv_us=parts["kv"],
    )
    composed = composed_step(
        case, feat, batch, read_context.value / (batch if kv_context is not None else 1), graph
    )
    if composed is not None:
        fields, rows = with_composed(est, composed[0], replicas, batch, composed[1])
        kept = [
            _composed_saving(item, composed[0])
            for item in est.inputs
            if item.name
            in (DECODE_CONTEXT_INPUT, KV_READ_INPUT, "streams per replica", SAVED_INPUT)
            or item.name.startswith("decode kernel path")
        ]
        est = replace(est, inputs=(*kept, *(Input(*row) for row in rows)), **fields)
    else:
        est = replace(est, step_basis=fallback_basis(gpu, graph))
    if draft is None:
        return est
    length, source, origin = accept_length(model, accept, draft)
    step = decode_terms.forward_us(feat, terms, batch * draft.draft_tokens)
    cycle = decode_terms.cycle_us(feat, terms, draft, batch)
    if (
        composed is not None
    ):  # the verify pass composed like the plain step; the draft and bookkeeping as fitted
        verify = composed[2](
            batch * draft.draft_tokens, batch
        )  # T tokens of each stream read its context once
        cycle += verify.total_us - step
        step = verify.total_us
    return replace(
        est,
        inputs=est.inputs + tuple(_spec_inputs(feat, terms, draft, length, source, origin)),
        tokens_per_s=replicas * batch * length / cycle * 1e6,
        cycle_us=cycle,
        step_us=step,
    )


def _composed_saving(item: Input, step: Any) -> Input:
    """The fused allreduce's saving priced as the composed step prices a norm kernel (its
    small-kernel time)."""
    if item.name != SAVED_INPUT or not item.value:
        return item
    kernel = next(op for op in step.ops if op.name.startswith("small kernels a layer"))
    calls = round(item.value / norm_kernel_time())
    return replace(
        item,
        value=calls * kernel.each_us,
        origin=kernel.origin,
        source=f"{item.source}; in the composed step {calls} x {kernel.each_us:.2f} us, its "
        "small-kernel "
        "time (step_model.small_kernels)",
    )


def norm_kernel_time() -> float:
    from topoctl.autoconf.decode_terms import norm_kernel_us

    return norm_kernel_us(fitted_terms()[0])


def _batch(
    objective: str, memory: Fit, context_tokens: int | None, asked: Input | None = None
) -> tuple[int, Input | None, list[Input]]:
    """(streams per replica, the KV tokens a step reads over all of them, their inputs): one stream
    and None (the stream's own decode context) for the latency objective. For throughput, with
    --decode-context (`asked`, capped by the context length: decode_context), each stream holds and
    reads that mean context, so min(CUDA graph max batch, KV tokens / decode context) streams;
    without it, min(CUDA graph max batch, KV tokens / context) streams of the context
    (--context-length, else costs.yaml's throughput_context_tokens), each admitted with room for all
    of it and reading half of it on the mean. The KV tokens read are priced like one stream's
    (decode_terms.kv_read_us: at the KV read rate of the attention kind), not as weight bytes: the
    decode attention kernel reads them, not the weight GEMMs."""
    if objective != "throughput":
        return 1, None, []
    if asked is not None:
        held = int(asked.value)
        batch = max(1, min(memory.cuda_graph_max_bs, memory.kv_tokens // max(held, 1)))
        read = Input(
            KV_READ_INPUT,
            batch * held,
            "tokens",
            f"{batch} streams x decode context {held}",
            COMPUTED,
        )
        return (
            batch,
            read,
            [
                asked,
                Input(
                    "streams per replica",
                    batch,
                    "requests",
                    f"min(CUDA graph max batch {memory.cuda_graph_max_bs}, KV tokens "
                    f"{memory.kv_tokens} / decode context {held}); each reads its "
                    "decode context's KV cache once a step",
                ),
            ],
        )
    context = context_tokens or int(load("costs.yaml").get("throughput_context_tokens", 4096))
    batch = max(1, min(memory.cuda_graph_max_bs, memory.kv_tokens // max(context, 1)))
    read = Input(
        KV_READ_INPUT,
        batch * context // 2,
        "tokens",
        f"{batch} streams x half the context {context} (a stream's mean while it decodes)",
        COMPUTED,
    )
    return (
        batch,
        read,
        [
            Input(
                "streams per replica",
                batch,
                "requests",
                f"min(CUDA graph max batch {memory.cuda_graph_max_bs}, KV tokens "
                f"{memory.kv_tokens} / context {context})",
            )
        ],
    )


# ------------------------------------------------------------------------ decode-step features and
# terms


def _moe_layers(model: dict[str, Any]) -> int:
    """MoE layers of a profile: the router holds hidden x experts weights in each of them."""
    experts = model.get("experts") or 0
    router = (model.get("parts_params") or {}).get("router") or 0
    return int(round(router / (model["hidden_size"] * experts))) if experts else 0


def draft_read_bytes(model: dict[str, Any], tp: int) -> float:
    """Bytes one draft forward reads per GPU beside its fc: one decoder layer of the target's width
    and an lm_head over the draft vocabulary, in bf16, split over the TP group (SGLang's draft
    layers are tensor-parallel: QKVParallelLinear, row-parallel output and down projections,
    ParallelLMHead)."""
    from topoctl.autoconf.decode_terms import DRAFT_VOCAB

    hidden = model["hidden_size"]
    heads, kv, head_dim = model["heads"], model["kv_heads"], model["head_dim"]
    layer = 2 * hidden * heads * head_dim + 2 * hidden * kv * head_dim + 3 * hidden * 4 * hidden
    params = layer + min(DRAFT_VOCAB, model["vocab_size"] or DRAFT_VOCAB) * hidden
    return params * 2.0 / tp


def draft_fc_bytes(model: dict[str, Any], algorithm: str = "EAGLE3") -> float:
    """Bytes of the draft's fc on every GPU: a plain torch.nn.Linear, not split by TP (3 x hidden ->
    hidden for EAGLE-3, 2 x hidden -> hidden for EAGLE), bf16."""
    hidden = model["hidden_size"]
    return (3 if algorithm.upper() == "EAGLE3" else 2) * hidden * hidden * 2.0


def gpu_family(gpu: dict[str, Any]) -> str:
    """The GPU's architecture family as topoctl/data/gpus.yaml names it (hopper, blackwell, ...)."""
    from topoctl.core import gpus

    if gpu.get("family"):
        return str(gpu["family"])
    found = gpus.lookup(gpu.get("name")) if gpu.get("name") else None
    return found.architecture if found else "other"


def weight_format(model: dict[str, Any]) -> str:
    """The decode-step rows' name of a model's weight format: fp8, or bf16 for 16-bit weights; 4-bit
    formats (int4, mxfp4) take the fp8 rows, the narrowest a plain-torch product reads (`topoctl
    bench --decode-step`)."""
    quant = model.get("quantization") or {}
    bits = quant.get("bits")
    if bits is None or bits >= 16:
        return "fp16" if str(quant.get("dtype")) == "float16" else "bf16"
    return "fp8"


def decode_features(
    model: dict[str, Any],
    tp: int,
    path: str,
    gpu: dict[str, Any],
    lat: Latencies,
    cuda_graph: bool = True,
    token_counts: tuple[int, ...] = (1,),
) -> Any:
    """The features of one launch's decode step (decode_terms.Features): bytes per GPU, layers by
    kind, experts, the datasheet bandwidth and the per-call allreduce latency at each token count
    asked for."""
    from topoctl.autoconf.decode_terms import Features

    active = per_gpu(model["active_parts_bytes"], model, tp)
    experts = int(model.get("experts") or 0)
    moe_layers = _moe_layers(model)
    expert_total = active.get("experts", 0.0)
    base = sum(v for k, v in active.items() if k != "experts")
    if not model["parts_bytes"].get(
        "lm_head"
    ):  # tied embeddings: the lm_head read is the embedding matrix
        base += model["parts_bytes"].get("embed", 0.0) / tp
    active_k = int(model.get("active_experts") or 0)
    one_expert = expert_total / (moe_layers * active_k) if moe_layers and active_k else 0.0
    feat = Features(
        layers=int(model["layers"]),
        moe_layers=moe_layers,
        mla=model.get("attention") == "mla",
        experts=experts,
        active_experts=active_k,
        base_bytes=base,
        expert_bytes=one_expert,
        bandwidth=float(gpu.get("bandwidth") or 0.0),
        family=gpu_family(gpu),
        allreduces=int(model["allreduces_per_forward"]) if tp > 1 else 0,
        kv_bytes=kv_bytes_per_token(model, tp),
    )
    for tokens in token_counts:
        feat.allreduce_us[tokens] = lat.lookup(
            path, tokens * model["allreduce_bytes_per_token"], tp, cuda_graph
        ).us
        # a draft forward's logits are all-gathered through NCCL whatever the allreduce path (SGLang
        # parallel_state.py all_gather -> pynccl); no all-gather was measured, so the nccl allreduce
        # latency of the gathered bytes stands for it (an all-gather moves each byte once, an
        # allreduce twice)
        feat.gather_us[tokens] = lat.lookup(
            "nccl", tokens * _draft_vocab(model) * 2.0, tp, cuda_graph
        ).us
    return feat


def _draft_vocab(model: dict[str, Any]) -> int:
    from topoctl.autoconf.decode_terms import DRAFT_VOCAB

    return min(DRAFT_VOCAB, int(model.get("vocab_size") or DRAFT_VOCAB))
