"""The search behind `topoctl recommend`: enumerate candidate launches, drop the blocked ones, rank the
rest, and say why.

Nothing here names a system. The pieces live in their own modules: the target and the request
(target.py), the candidate space (space.py), what each candidate is expected to cost (cost.py, with the
rule evidence read by evidence.py) and the ranking (ranking.py). This module runs them in order and keeps
the result every renderer reads.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from topoctl.autoconf.cost import (  # noqa: F401 - re-exported for callers of the search
    NO_MODEL_NOTE,
    _known_latency,
    allreduces_per_forward,
    estimate_all,
    estimate_formula,
    throughput,
)
from topoctl.autoconf.evidence import Evidence, collect_evidence
from topoctl.autoconf.placement import Placement, choose_gpus
from topoctl.autoconf.ranking import (
    faster_paths,
    rank,
    require_a_launch,
    speculative_comparison,
    winner_reasons,
)
from topoctl.autoconf.space import (  # noqa: F401 - re-exported
    SPEC_GROUP,
    Candidate,
    Space,
    agrees,
    effect_items,
    launches,
    settings_space,
)
from topoctl.autoconf.target import (  # noqa: F401 - re-exported
    check_parallel_sizes,
    rules_request,
    target_gpu_count,
)
from topoctl.rules.engine import launch_defaults
from topoctl.sglang import spelling as table

if TYPE_CHECKING:
    from topoctl.rules.model import Report, Violation

_agrees = agrees  # the name tests and site code have used
_throughput = throughput


@dataclass
class Result:
    snapshot: dict[str, Any]
    model: dict[str, Any] | None
    flags: Any
    target_version: str | None
    tp_size: int
    ep_size: int
    speculative_asked: str | None
    forced: bool
    winner: Candidate
    ranked: list[Candidate]
    blocked: list[Candidate]
    findings: list[Any]
    reasons: dict[str, list[str]]  # setting -> rule ids / topoctl reasons behind its value
    decided: set[str]
    comparison: dict[str, Any] | None
    offers: list[Candidate]
    notes: list[str]
    evidence: list[Evidence]
    disabled: list[tuple[str, str]] = field(default_factory=list)  # (rule id, the written reason), every report shows them
    placement: Placement | None = None  # the GPUs the launch runs on, and why (render writes CUDA_VISIBLE_DEVICES)
    # What render.py builds from this result (the launch written for the version, the document), built once
    # and shared by every format and --explain.
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


def _violations(report: Report, launch: dict[str, Any]) -> tuple[list[tuple[Any, str]], list[tuple[Any, str]]]:
    """(blocking, warning) (finding, why) pairs of the violations a candidate launch commits."""
    from topoctl.rules import violations

    blocks: list[tuple[Any, str]] = []
    warns: list[tuple[Any, str]] = []
    found: list[Violation] = violations(report, launch)
    for violation in found:
        why = violation.detail or f"{violation.kind} {violation.setting}"
        (blocks if violation.finding.severity == "block" else warns).append((violation.finding, why))
    return blocks, warns


def _spec_options(speculative: str | None, forced: bool) -> list[str | None]:
    """Speculative decoding off, and on when asked for (only on when forced)."""
    if not speculative:
        return [None]
    return [speculative] if forced else [None, speculative]


class _Judge:
    """Evaluates the rules for one launch after another, sharing the snapshot's facts and every finding."""

    def __init__(self, ruleset: Any, snapshot: dict[str, Any], model: dict[str, Any] | None, tp: int, ep: int,
                 version: str | None, gpus: tuple[int, ...] = ()):
        import topoctl.rules as rules_api

        self.rules_api, self.ruleset, self.snapshot = rules_api, ruleset, snapshot
        self.model, self.tp, self.ep, self.version = model, tp, ep, version
        self.gpus = gpus  # the launch's GPU group (placement): what the rules' pair quantifiers judge
        self.facts_cache: dict[str, Any] = {}  # facts of the snapshot alone, read once for every evaluation
        self.findings_by_id: dict[str, Any] = {}

    def report(self, spec: str | None, launch: dict[str, Any]) -> Any:
        report = self.rules_api.evaluate(self.ruleset, self.snapshot,
                                         rules_request(self.model, spec, self.tp, self.ep, self.version, dict(launch),
                                                       self.gpus),
                                         self.facts_cache)
        for finding in report.findings:
            self.findings_by_id.setdefault(finding.rule_id, finding)
        return report

    def findings(self) -> list[Any]:
        return [self.findings_by_id[key] for key in sorted(self.findings_by_id)]


def judge_candidate(judge: _Judge, path: str, spec: str | None, launch: dict[str, Any], space: Space,
                    speculative: str | None) -> tuple[Candidate, Any]:
    """One candidate, judged on its own (rules may speak of launch settings): blocks, warnings, preferences."""
    cand = Candidate(path, launch, gpus=judge.gpus)
    report = judge.report(spec, launch)
    cand.blocked_by, cand.warnings = _violations(report, launch)
    cand.honours_request = (spec == speculative)
    cand.defaults = launch_defaults(report)
    cand.prefers = sum(1 for setting, value, _ in space.prefer_pairs
                       if agrees(setting, value, launch, cand.defaults))
    cand.remedies = sum(1 for setting, value in space.remedies if agrees(setting, value, launch, cand.defaults))
    cand.departures = sum(1 for setting, value in launch.items()
                          if setting not in ("tp_size",) and not agrees(setting, value, {}, cand.defaults))
    return cand, report


def search(snapshot: dict[str, Any], model: dict[str, Any] | None, flags: Any, target_version: str | None,
           speculative: str | None = None, draft_model: str | None = None, force_speculative: bool = False,
           tp_size: int | None = None, ep_size: int | None = None, ruleset: Any = None) -> Result:
    import topoctl.rules as rules_api

    if ruleset is None:
        ruleset = rules_api.load_rules()
    gpu_count = target_gpu_count(snapshot)
    tp = tp_size or gpu_count
    ep = ep_size or 1
    check_parallel_sizes(tp, ep, gpu_count)
    placement = choose_gpus(snapshot, tp)  # the GPUs of a launch on fewer GPUs than the machine has
    version = flags.version
    notes: list[str] = [] if flags.exact else [flags.note]
    spec_options = _spec_options(speculative, force_speculative)
    base_launch: dict[str, Any] = {"tp_size": tp}
    if ep != 1:
        base_launch["ep_size"] = ep

    judge = _Judge(ruleset, snapshot, model, tp, ep, target_version or version, placement.gpus)
    for spec in spec_options:
        judge.report(spec, base_launch)
    space = settings_space(judge.findings())
    allreduces = allreduces_per_forward(model, notes)

    candidates: list[Candidate] = []
    blocked: list[Candidate] = []
    reports_of: dict[int, Any] = {}
    for path, spec, launch in launches(space, base_launch, version, spec_options, draft_model):
        cand, reports_of_cand = judge_candidate(judge, path, spec, launch, space, speculative)
        reports_of[id(cand)] = reports_of_cand
        (blocked if cand.blocked_by else candidates).append(cand)

    evidence = collect_evidence(judge.findings(), notes)
    estimate_all(candidates + blocked, evidence, snapshot, model, allreduces)
    rank(candidates, blocked)
    require_a_launch(candidates, blocked)
    winner = candidates[0]
    paths = table.table()["allreduce_paths"]
    reasons, decided = winner_reasons(winner, space, paths, tp, gpu_count)
    return Result(snapshot, model, flags, target_version, tp, ep, speculative, force_speculative, winner,
                  candidates, blocked, list(reports_of[id(winner)].findings), reasons, decided,
                  speculative_comparison(candidates, winner, speculative, force_speculative, blocked),
                  faster_paths(winner, candidates, paths), notes, evidence,
                  sorted((str(k), str(v)) for k, v in (getattr(ruleset, "disabled", None) or {}).items()),
                  placement)
