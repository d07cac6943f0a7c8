"""One basis for the allreduce paths of one launch: a launch whose tok/s the rules measured anchors
the launches that differ from it only in the allreduce path, each scaled by the launch model's ratio
of the two (issue 41, "one basis for every candidate").

Without this, a measured NCCL launch (89.5 tok/s on 8x RTX PRO 6000) outranks any path the launch
model prices faster, because a measured number and a modelled one are ranked as levels, not values.
Anchored, the other path's estimate is the measurement times the model's ratio; it keeps the
measurement's level for ranking, and its formula carries the ratio as a modelled factor, so the
evidence line says what was modelled. A path is anchored only where its per-call latency is at least
reported upstream: no gain is assumed from a latency nobody measured (the no-faster-than fallback, a
ratio of at most 1, stays at the model's level).

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from dataclasses import replace
from typing import TypeAlias

from topoctl.autoconf.evidence import LEVELS, Evidence
from topoctl.autoconf.space import Candidate
from topoctl.rules.sglang import spelling as table

# A launch apart from its allreduce path: TP, DP, speculation, and every other setting as (name,
# repr)
_Key: TypeAlias = tuple[int, int, "str | None", tuple[tuple[str, str], ...]]

# names the modelled factor in an estimate formula (no rule file has it)
RULE_ID = "launch-model-path-ratio"


def _path_settings() -> set[str]:
    return {
        setting for settings in table.table()["allreduce_paths"].values() for setting in settings
    }


def _key(cand: Candidate, path_settings: set[str]) -> _Key:
    """The launch apart from its allreduce path: TP, DP, speculation and every other setting."""
    rest = sorted(
        (name, repr(value)) for name, value in cand.launch.items() if name not in path_settings
    )
    return cand.tp, cand.dp, cand.speculative, tuple(rest)


def _anchors(cands: list[Candidate], path_settings: set[str]) -> dict[_Key, Candidate]:
    """Per launch, its clean candidate whose estimate comes from rule evidence, the best level then
    value."""
    out: dict[_Key, Candidate] = {}
    for cand in cands:
        if cand.estimate is None or cand.predicted is None or cand.warnings or cand.blocked_by:
            continue
        key = _key(cand, path_settings)
        best = out.get(key)
        if best is None or (cand.estimate_level, cand.estimate) > (
            best.estimate_level,
            best.estimate or 0.0,
        ):
            out[key] = cand
    return out


def ratio_evidence(cand: Candidate, anchor: Candidate) -> Evidence:
    """The launch model's ratio of `cand` over `anchor` as a relative number, for the estimate
    formula."""
    paths = table.table()["allreduce_paths"]
    ratio = cand.prediction.tokens_per_s / anchor.prediction.tokens_per_s
    source = (
        f"launch model, {cand.prediction.tokens_per_s:.1f} tok/s with allreduce={cand.runs_path} "
        f"vs {anchor.prediction.tokens_per_s:.1f} with {anchor.runs_path} for the measured "
        f"launch; {cand.runs_path} per call {cand.prediction.allreduce_level}"
    )
    return Evidence(
        RULE_ID,
        "modelled",
        "decode throughput",
        round(ratio, 4),
        "x",
        source,
        cand.runs_path,
        dict(paths[cand.path]),
        {},
        baseline=dict(paths[anchor.path]),
        baseline_path=anchor.runs_path,
        number_kind="relative",
    )


def anchored(cands: list[Candidate]) -> list[Candidate]:
    """The candidates, in the order given, each one without an estimate of its own that has an
    anchor (same launch, another path, measured or reported tok/s) and a per-call latency reported
    upstream or better, estimated as the anchor's tok/s times the launch model's ratio."""
    path_settings = _path_settings()
    anchors = _anchors(cands, path_settings)
    out = []
    for cand in cands:
        anchor = anchors.get(_key(cand, path_settings))
        if (
            anchor is not None
            and anchor is not cand
            and cand.estimate is None
            and cand.predicted is not None
            and anchor.runs_path != cand.runs_path
            and cand.allreduce_level >= LEVELS["upstream-reported"]
        ):
            factor = ratio_evidence(cand, anchor)
            cand = replace(
                cand,
                estimate=float(anchor.estimate or 0.0) * factor.value,
                estimate_level=anchor.estimate_level,
                estimate_basis=[*anchor.estimate_basis, factor],
            )
        out.append(cand)
    return out
