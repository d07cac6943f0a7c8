"""The cost side of a candidate: which rule evidence speaks of it (tok/s, measured or reported), and
the modelled allreduce time of one forward pass (allreduces x per-call latency of its path).

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from topoctl.autoconf.data_files import load
from topoctl.autoconf.evidence import (
    DESCRIPTIVE_KEYS,
    INTERCONNECT_KEY,
    LEVEL_NAMES,
    LEVELS,
    MODEL_KEY,
    Evidence,
    _changed,
    _fmt,
    _here,
    unmeasured_settings,
)
from topoctl.autoconf.launch_model import Relation, table_relations, table_unmeasured
from topoctl.autoconf.models import same_model
from topoctl.autoconf.request import ModelProfile
from topoctl.autoconf.space import SPEC_GROUP, Candidate, agrees
from topoctl.autoconf.target import interconnect
from topoctl.rules.sglang import spelling as table
from topoctl.rules.sglang.settings import equal
from topoctl.snapshot.view import SnapshotLike

if (
    TYPE_CHECKING
):  # unit aliases are annotations only: no start-up import (tests/cli/test_startup_imports.py)
    from topoctl.autoconf.launch_model import Latencies
    from topoctl.core.units import Microseconds

NO_MODEL_NOTE = "no model given: ranked by per-call allreduce latency"


def estimate_formula(cand: Candidate) -> str | None:
    """How a candidate's tok/s estimate was reached, e.g. `89.5 tok/s measured (rule a) x 1.09 (+9%
    with cuda_graph_max_bs=128 instead of 512, measured, rule b) = 97.6 tok/s`; None without
    throughput evidence."""
    if cand.estimate is None or not cand.estimate_basis:
        return None
    base = cand.estimate_basis[0]
    text = f"{_fmt(base.value)} {base.unit} {base.level} (rule {base.rule_id})"
    for rel in cand.estimate_basis[1:]:
        text += (
            f" x {rel.factor():.4g} ({rel.relative_text()} with {rel.change_text()}, {rel.level}, "
            f"rule {rel.rule_id})"
        )
    if len(cand.estimate_basis) > 1:
        text += f" = {cand.estimate:.1f} {base.unit}"
    return text


def model_matches(wanted: object, model: ModelProfile | None) -> bool:
    """An evidence `model=` against the requested model: `wanted` names the built-in profile that
    was measured, and the requested model matches when its properties are that profile's
    (architecture, layers, widths, heads, experts, vocabulary, quantization), whatever the requested
    model is called."""
    if wanted is None:
        return True
    return same_model(str(wanted), model)


def applies(
    ev: Evidence, cand: Candidate, model: ModelProfile | None, link: str | None = None
) -> bool:
    """Whether a number measured under ev.config speaks of this candidate: every setting the
    evidence names agrees with the candidate (a setting the candidate leaves out takes SGLang's
    default); settings the evidence does not name do not disqualify it."""
    if ev.path is not None and ev.path != cand.runs_path:
        return False
    for key, value in ev.config.items():
        if key in DESCRIPTIVE_KEYS:
            continue
        if key == INTERCONNECT_KEY:
            if not _here(ev, link):
                return False
            continue
        if key == MODEL_KEY:
            if not model_matches(value, model):
                return False
            continue
        if not agrees(key, value, cand.effective, cand.defaults):
            return False
    return True


def throughput(
    cand: Candidate, evidence: list[Evidence], model: ModelProfile | None, link: str | None = None
) -> tuple[float, int, list[Evidence]] | None:
    """Expected tok/s of a candidate from the evidence, or None (throughput_withheld says what was
    not carried)."""
    return throughput_withheld(cand, evidence, model, link)[0]


def throughput_withheld(
    cand: Candidate, evidence: list[Evidence], model: ModelProfile | None, link: str | None = None
) -> tuple[tuple[float, int, list[Evidence]] | None, list[str]]:
    """Expected tok/s of a candidate: the absolute number that applies to it (the most specific,
    then the best level, then the lower value), times each relative number that applies to it and
    changes a setting the absolute number was not measured with; (value, level, basis: the absolute
    number first).

    A number is carried onto the candidate only when the candidate is the launch that was measured:
    every setting it departs from SGLang's defaults in is named by the number, its allreduce path or
    an applied relative number (evidence.unmeasured_settings). The numbers left out for that reason
    are the second item (the candidate's estimate_withheld)."""
    exact = [ev for ev in evidence if ev.kind == "throughput" and applies(ev, cand, model, link)]
    withheld: list[str] = []
    for base in sorted(
        exact,
        key=lambda ev: (len(ev.config) + (ev.path is not None), ev.rank, -abs(ev.value)),
        reverse=True,
    ):
        value, level, basis, taken = _chain(base, cand, evidence, model, link)
        named = set(base.config) | taken
        if base.path is not None:
            named |= set(table.table()["allreduce_paths"][base.path])
        if "speculative_algorithm" in base.config:
            named |= set(SPEC_GROUP)
        unmeasured = unmeasured_settings(cand.effective, cand.defaults, named)
        if not unmeasured:
            return (value, level, basis), withheld
        withheld.append(
            f"not carried: {base.describe()}: this launch sets {', '.join(unmeasured)}, "
            "which the measurement did not"
        )
    return None, withheld


def _chain(
    base: Evidence,
    cand: Candidate,
    evidence: list[Evidence],
    model: ModelProfile | None,
    link: str | None,
) -> tuple[float, int, list[Evidence], set[str]]:
    """The absolute number times the relative numbers that apply to the candidate, and the settings
    they change."""
    value, level, basis = base.value, base.rank, [base]
    taken: set[str] = set()
    for rel in sorted(
        (ev for ev in evidence if ev.kind == "relative"),
        key=lambda ev: (ev.rule_id, ev.config_text),
    ):
        if not applies(rel, cand, model, link):
            continue
        changed = _changed(rel)
        if not changed or taken & set(changed):
            continue
        # The absolute number must stand for the relative number's baseline: it names none of the
        # changed settings, or names them at the baseline's value (a number measured with the change
        # already has it).
        if "allreduce" in changed and base.path is not None:
            continue
        if any(
            key in base.config and not equal(key, base.config[key], before)
            for key, (_, before) in changed.items()
        ):
            continue
        value *= rel.factor()
        level = min(level, rel.rank)
        basis.append(rel)
        taken.update(changed)
    return value, level, basis, taken


def _known_latency(
    path: str, evidence: list[Evidence], snapshot: SnapshotLike
) -> tuple[float, int, str] | None:
    """Per-call latency of one path from the best evidence here, else the modelled cost table."""
    link = interconnect(snapshot)
    items = [ev for ev in evidence if ev.kind == "latency" and ev.path == path and _here(ev, link)]
    if items:
        best = max(items, key=lambda ev: (ev.rank, -ev.value))
        return best.latency_us(), best.rank, best.describe()
    costs = load("costs.yaml")
    per_link = (costs.get("latency_us") or {}).get(link) or {}
    if path in per_link:
        return (
            float(per_link[path]),
            1,
            f"{per_link[path]} us per call (modelled: {costs.get('source')})",
        )
    return None


# Without a model the per-call ranking cannot count what a fused allreduce saves beside its call.
NO_MODEL_SAVING = (
    "the RMSNorm kernel a fused call saves is counted only with a model (--model): how many a pass "
    "saves depends on the model's layers and the kernel path SGLang picks for it"
)


def _related(
    path: str, relations: dict[str, Relation], known: dict[str, tuple[float, int, str] | None]
) -> tuple[float, int, str] | None:
    """A path with no data of its own that a costs.yaml relation (`priced_as`) prices as another
    path: that path's latency here, level and source as the launch model gives them
    (launch_model.Relation.price)."""
    relation = relations.get(path)
    found = (
        known.get(relation.priced_as)
        if relation is not None and relation.priced_as != path
        else None
    )
    if relation is None or found is None:
        return None
    value, rank, basis = found
    level, source = relation.price(LEVEL_NAMES.get(rank, "modelled"), basis)
    return value, LEVELS.get(level, 1), f"{source}; {NO_MODEL_SAVING}"


def path_latencies(
    evidence: list[Evidence], snapshot: SnapshotLike
) -> dict[str, tuple[float, int, str]]:
    """Per-call allreduce latency (us), level and basis of every path: best evidence, else the cost
    table; a path with neither that costs.yaml prices as another path (`priced_as`:
    flashinfer_fusion as custom on NVSwitch/NVLink) takes that path's latency, as the launch model
    does; any other is assumed no faster than the slowest path that has data here (no gain is
    assumed for what nobody measured), with the costs.yaml `unmeasured` reason where there is one.
    Computed once per search: it depends on the path, not on the candidate."""
    link = interconnect(snapshot)
    relations, unmeasured = table_relations(link), table_unmeasured(link)
    paths = list(table.table()["allreduce_paths"])
    known = {path: _known_latency(path, evidence, snapshot) for path in paths}
    out: dict[str, tuple[float, int, str]] = {}
    for path in paths:
        found = known[path] or _related(path, relations, known)
        if found:
            out[path] = found
            continue
        others = [(item[0], other) for other, item in known.items() if other != path and item]
        why = f" ({unmeasured[path]})" if path in unmeasured else ""
        if others:
            value, other = max(others)
            out[path] = (
                value,
                1,
                f"no data for this path: assumed no faster than {other}{why} (modelled)",
            )
        else:
            out[path] = (100.0, 1, f"no data: 100 us per call assumed{why} (modelled)")
    return out


def measured_latency(cand: Candidate, measured: Latencies) -> tuple[Microseconds, int, str] | None:
    """Per-call latency of the candidate's path from the snapshot's own allreduce rows (`topoctl
    bench`), chosen as the launch model chooses them (launch_model.Latencies: the candidate's
    CUDA-graph kind first, the nearest world size, scaled to the candidate's TP by the curve's
    rule). Measurements here come before rule evidence and the reference table, as with --model.
    Without a model the message size is not known: the curve is read at the smallest size measured
    (one decode step's allreduce is the small end), and the basis says so. None for one GPU (no
    allreduce) or a path the snapshot has no rows for."""
    from topoctl.autoconf.launch_model import uses_cuda_graph

    world = cand.tp
    if world <= 1:
        return None
    found = measured.measured_curve(cand.runs_path, world, uses_cuda_graph(cand.effective))
    if found is None:
        return None
    curve, note = found
    kib = curve.points[0][0]
    scaled = "" if curve.world == world else f"; scaled from {curve.world} to {world} GPUs"
    return (
        curve.at(kib, world),
        LEVELS["measured"],
        f"{curve.source}{note}{scaled}; read at {kib:g} KiB, the smallest size measured (no "
        "model given, "
        "so the message size is not known)",
    )


def allreduces_per_forward(model: ModelProfile | None, notes: list[str]) -> int:
    """Allreduces of one forward pass come from the model; without one, paths are ranked by per-call
    latency."""
    allreduces = (model or {}).get("allreduces_per_forward")
    if not allreduces:
        notes.append(NO_MODEL_NOTE)
        return 1
    return int(allreduces)


def estimate_all(
    cands: list[Candidate],
    evidence: list[Evidence],
    snapshot: SnapshotLike,
    model: ModelProfile | None,
    allreduces: int,
) -> list[Candidate]:
    """Each candidate with its tok/s from evidence (when any reaches it) and its modelled allreduce
    time, in the order given."""
    from topoctl.autoconf.launch_model import Latencies

    latencies = path_latencies(evidence, snapshot)
    measured = Latencies(snapshot)
    link = interconnect(snapshot)
    priced = []
    for cand in cands:
        found, withheld = throughput_withheld(cand, evidence, model, link)
        if found:
            cand = replace(
                cand, estimate=found[0], estimate_level=found[1], estimate_basis=found[2]
            )
        latency, level, basis = measured_latency(cand, measured) or latencies[cand.runs_path]
        priced.append(
            replace(
                cand,
                estimate_withheld=withheld,
                allreduce_us=allreduces * latency,
                allreduce_level=level,
                allreduce_basis=[basis],
            )
        )
    return priced
