"""The search behind `topoctl recommend`: enumerate candidate launches, drop the blocked ones, rank
the rest, and say why.

Nothing here names a system. The pieces live in their own modules: the target and the request
(target.py), the candidate space (space.py), what each candidate is expected to cost (cost.py, with
the rule evidence read by evidence.py) and the ranking (ranking.py). This module runs them in order
and keeps the result every renderer reads.

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

from topoctl.autoconf import pcie_ipc
from topoctl.autoconf.anchor import anchored
from topoctl.autoconf.cost import (  # noqa: F401 - re-exported for callers of the search
    NO_MODEL_NOTE,
    _known_latency,
    allreduces_per_forward,
    estimate_all,
    estimate_formula,
    throughput,
)
from topoctl.autoconf.evidence import Evidence, collect_evidence
from topoctl.autoconf.placement import Placement, choose_gpus, choose_replicas
from topoctl.autoconf.ranking import (
    faster_paths,
    rank,
    require_a_launch,
    speculative_comparison,
    ties,
    winner_reasons,
)
from topoctl.autoconf.request import GpuFacts, Launch, ModelProfile, Request
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
from topoctl.core.errors import TopoctlError
from topoctl.rules.engine.evaluation import launch_defaults
from topoctl.rules.sglang import kernels
from topoctl.rules.sglang import spelling as table
from topoctl.rules.sglang.settings import equal
from topoctl.snapshot.cuda_devices import ProbeVisible, probe_visible
from topoctl.snapshot.view import SnapshotLike, SnapshotView, view_of

if TYPE_CHECKING:
    from topoctl.autoconf.launch_model import Latencies
    from topoctl.autoconf.placement import PairView
    from topoctl.rules.engine.facts import SharedCache
    from topoctl.rules.engine.model import Finding, Report, RuleSet, Violation
    from topoctl.rules.sglang.flags import FlagSet

_agrees = agrees  # the name tests and site code have used
_throughput = throughput


@dataclass(frozen=True)
class Result:
    """What the search chose and why, built once at its end. Frozen: every format and --explain read
    the same answer; a later stage that changes the launch (recommend --nnodes) makes a new one with
    dataclasses.replace. `memo` is render's cache of what it built from this result, not part of the
    answer."""

    # the one view of the target the command made (autoconf reads it, never the dict)
    snapshot: SnapshotView
    model: ModelProfile | None
    flags: FlagSet
    target_version: str | None
    tp_size: int
    ep_size: int
    speculative_asked: str | None
    forced: bool
    winner: Candidate
    ranked: list[Candidate]
    blocked: list[Candidate]
    findings: list[Finding]
    reasons: dict[str, list[str]]  # setting -> rule ids / topoctl reasons behind its value
    decided: set[str]
    comparison: dict[str, Any] | None
    offers: list[Candidate]
    notes: list[str]
    evidence: list[Evidence]
    disabled: list[tuple[str, str]] = field(
        default_factory=list
    )  # (rule id, the written reason), every report shows them
    placement: Placement | None = (
        None  # the GPUs the launch runs on, and why (render writes CUDA_VISIBLE_DEVICES)
    )
    # What render.py builds from this result (the launch written for the version, the document),
    # built once and shared by every format and --explain.
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    unfit: list[Candidate] = field(
        default_factory=list
    )  # launches the memory model says cannot load
    gpu: GpuFacts = field(default_factory=dict)  # the GPU facts the launch model used
    objective: str = "latency"


def _violations(
    report: Report, launch: Launch
) -> tuple[list[tuple[Finding, str]], list[tuple[Finding, str]]]:
    """(blocking, warning) (finding, why) pairs of the violations a candidate launch commits."""
    from topoctl.rules.engine import violations

    blocks: list[tuple[Finding, str]] = []
    warns: list[tuple[Finding, str]] = []
    found: list[Violation] = violations(report, launch)
    for violation in found:
        why = violation.detail or f"{violation.kind} {violation.setting}"
        (blocks if violation.finding.severity == "block" else warns).append(
            (violation.finding, why)
        )
    return blocks, warns


def _spec_options(speculative: str | None, forced: bool) -> list[str | None]:
    """Speculative decoding off, and on when asked for (only on when forced)."""
    if not speculative:
        return [None]
    return [speculative] if forced else [None, speculative]


@dataclass(frozen=True)
class Layout:
    """The parallel layout one judge's launches share: sizes, and the GPUs in rank order (the
    placement), which is what the rules' pair quantifiers judge."""

    tp: int
    ep: int
    dp: int = 1
    gpus: tuple[int, ...] = ()


class _Judge:
    """Evaluates the rules for one launch after another, sharing the snapshot's facts and every
    finding."""

    def __init__(
        self,
        ruleset: RuleSet,
        snapshot: SnapshotLike,
        model: ModelProfile | None,
        layout: Layout,
        version: str | None,
        facts_cache: SharedCache | None = None,
    ):
        import topoctl.rules.engine as rules_api

        self.rules_api, self.ruleset, self.snapshot = rules_api, ruleset, snapshot
        self.model, self.version = model, version
        self.tp, self.ep, self.dp, self.gpus = layout.tp, layout.ep, layout.dp, layout.gpus
        # facts of the snapshot alone, read once for every evaluation (and shared by every TP
        # option's judge)
        self.facts_cache: SharedCache = {} if facts_cache is None else facts_cache
        self.findings_by_id: dict[str, Finding] = {}
        self.reports: dict[
            tuple[str | None, str], Report
        ] = {}  # one evaluation per distinct launch

    def report(self, spec: str | None, launch: Launch) -> Report:
        """The rules' report for one launch; the same settings (candidates of different paths often
        write the same ones) are evaluated once: a report depends on the snapshot, the judge's sizes
        and the launch only."""
        key = (spec, repr(sorted(launch.items(), key=lambda item: item[0])))
        report = self.reports.get(key)
        if report is None:
            request = rules_request(
                self.model, spec, self.tp, self.ep, self.version, dict(launch), self.gpus, self.dp
            )
            report = self.reports[key] = self.rules_api.evaluate(
                self.ruleset, self.snapshot, request, self.facts_cache
            )
            for finding in report.findings:
                self.findings_by_id.setdefault(finding.rule_id, finding)
        return report

    def findings(self) -> list[Finding]:
        return [self.findings_by_id[key] for key in sorted(self.findings_by_id)]


def judge_candidate(
    judge: _Judge,
    path: str,
    spec: str | None,
    launch: Launch,
    space: Space,
    speculative: str | None,
) -> tuple[Candidate, Report]:
    """One candidate, judged on its own (rules may speak of launch settings): blocks, warnings,
    preferences."""
    report = judge.report(spec, launch)
    blocked_by, warnings = _violations(report, launch)
    # a warning that fires for this launch without naming a setting (check reports it too) counts
    # against it
    warnings += [
        (finding, finding.message)
        for finding in report.findings
        if finding.severity == "warn"
        and finding.status == "fired"
        and not finding.effect.get("forbid")
        and not finding.effect.get("require")
    ]
    defaults = launch_defaults(report)
    judged = Candidate(
        path,
        launch,
        blocked_by,
        warnings,
        defaults=defaults,
        honours_request=(spec == speculative),
        default_rules={
            setting: finding.rule_id
            for finding in report.findings
            for setting in finding.effect.get("defaults") or {}
        },
        gpus=judge.gpus,
        implied=dict(getattr(report, "implied", None) or {}),
        report=report,
    )
    running = (
        judged.effective
    )  # what SGLang runs: the preferences and remedies are judged on it, as check does
    cand = replace(
        judged,
        prefers=sum(
            1
            for setting, value, _ in space.prefer_pairs
            if agrees(setting, value, running, defaults)
        ),
        remedies=sum(
            1 for setting, value in space.remedies if agrees(setting, value, running, defaults)
        ),
        remedies_asked=len(space.remedies),
        departures=sum(
            1
            for setting, value in launch.items()
            if setting not in ("tp_size",) and not agrees(setting, value, {}, defaults)
        ),
    )
    return cand, report


def parallel_options(
    model: ModelProfile | None, gpu_count: int, req: Request
) -> list[tuple[int, int]]:
    """(TP, DP) pairs to consider: the sizes asked for, else every TP that divides the GPUs and the
    attention heads (SGLang requires it), with DP replicas on the GPUs left; without a model, TP
    across every GPU."""
    if req.tp_size:
        return [(req.tp_size, req.dp_size or 1)]
    if model is None:
        return [(gpu_count, 1)]
    heads = int(model.get("heads") or 1)
    options = []
    for tp in range(1, gpu_count + 1):
        if gpu_count % tp or heads % tp:
            continue
        dp = req.dp_size or gpu_count // tp
        if tp * dp <= gpu_count:
            options.append((tp, dp))
    return options or [(gpu_count, 1)]


def _more_gpus_hint(
    model: ModelProfile, memory: int, gpu_count: int, req: Request, version: str | None
) -> list[str]:
    """The smallest TP of more GPUs like these that holds the model at the context asked; with a
    fixed --tp-size, that size is named as the one to change."""
    from topoctl.autoconf.memory import FitCase
    from topoctl.autoconf.memory import fit as memory_fit

    for n in (2, 4, 8, 16, 32, 64):
        if n <= gpu_count or (model.get("heads") or 1) % n or (req.tp_size and n <= req.tp_size):
            continue
        if memory_fit(
            FitCase(model, memory, n, version, False, context_length=req.context_length)
        ).fits:
            prefix = f"--tp-size {n} (instead of {req.tp_size}) on " if req.tp_size else ""
            return [f"{prefix}{n} GPUs like these (TP {n})"]
    return ["more GPUs than one node of these holds"] if gpu_count < 64 else []


def what_would_fit(
    model: ModelProfile,
    unfit: list[Candidate],
    gpu: GpuFacts,
    gpu_count: int,
    req: Request,
    version: str | None = None,
) -> str:
    """What the user can change so that the model loads: more GPUs, a quantized checkpoint, a
    shorter context."""
    from topoctl.autoconf.memory import FitCase
    from topoctl.autoconf.memory import fit as memory_fit

    memory = gpu.get("memory_bytes") or 0
    hints = _more_gpus_hint(model, memory, gpu_count, req, version)
    bits = (model.get("quantization") or {}).get("bits") or 16
    weights = model["weight_bytes"]
    tp = req.tp_size or gpu_count  # a fixed --tp-size stays what it is
    for label, factor in (("an FP8 checkpoint", 8 / bits), ("an int4 checkpoint", 4.5 / bits)):
        if factor >= 1:
            continue
        scaled = dict(
            model,
            parts_bytes={k: v * factor for k, v in model["parts_bytes"].items()},
            replicated_attention_bytes=(model.get("replicated_attention_bytes") or 0) * factor,
        )
        if memory_fit(
            FitCase(scaled, memory, tp, version, False, context_length=req.context_length)
        ).fits:
            where = (
                ("this GPU" if tp == 1 else f"{tp} GPUs like these at TP {tp}")
                if req.tp_size
                else ("this GPU" if gpu_count == 1 else f"these {gpu_count} GPUs")
            )
            hints.append(f"{label} (about {weights * factor / 1e9:.0f} GB) on {where}")
            break
    fits_context = [
        c
        for c in unfit
        if c.fit is not None and c.fit.context_only and (not req.tp_size or c.tp == req.tp_size)
    ]
    if fits_context:
        best = max(fits_context, key=lambda c: c.memory_fit.kv_tokens)
        hints.append(f"--context-length {best.memory_fit.kv_tokens} or less (TP {best.tp})")
    return "; ".join(hints) or "nothing on this machine"


def _fit(
    cand: Candidate, model: ModelProfile, gpu: GpuFacts, version: str, req: Request
) -> Candidate:
    """The candidate with its memory fit (as it is when the GPU's memory is unknown)."""
    from topoctl.autoconf.memory import FitCase
    from topoctl.autoconf.memory import fit as memory_fit

    if not gpu.get("memory_bytes"):
        return cand
    return replace(
        cand,
        fit=memory_fit(
            FitCase(
                model,
                gpu["memory_bytes"],
                cand.tp,
                version,
                bool(cand.speculative),
                cast("int | None", cand.effective.get("cuda_graph_max_bs")),
                req.context_length,
                req.draft,
                req.max_running_requests,
                launch=cand.effective,
            )
        ),
    )


def measured_to_run(
    unfit: list[Candidate],
    evidence: list[Evidence],
    snapshot: SnapshotLike,
    model: ModelProfile | None,
) -> tuple[list[Candidate], list[Candidate]]:
    """(the candidates the memory model says do not load, with what evidence reaches them; those of
    them a measurement shows running on this machine): a measured throughput of this very launch and
    model wins over the model, and the fit says so. The memory model is an estimate (computed weight
    bytes, SGLang's reserve rules); a run is a fact."""
    from topoctl.autoconf.cost import interconnect, throughput_withheld
    from topoctl.autoconf.evidence import LEVELS

    if not unfit or not evidence:
        return unfit, []
    link = interconnect(snapshot)
    still, out = [], []
    for cand in unfit:
        found, withheld = throughput_withheld(cand, evidence, model, link)
        cand = replace(cand, estimate_withheld=withheld)
        if found:
            cand = replace(
                cand, estimate=found[0], estimate_level=found[1], estimate_basis=found[2]
            )
        basis = [
            ev
            for ev in cand.estimate_basis
            if ev.kind == "throughput" and ev.rank >= LEVELS["measured"]
        ]
        if cand.estimate is None or not basis or cand.fit is None or cand.fit.context_only:
            still.append(cand)
            continue
        fit = replace(
            cand.fit,
            fits=True,
            why="",
            notes=[
                *cand.fit.notes,
                (
                    f"the memory model says this launch does not load ({cand.fit.why}), but it "
                    f"was measured running here ({basis[0].describe()}): the measurement is taken"
                ),
            ],
        )
        out.append(replace(cand, fit=fit))
    return still, out


def _predict(
    cand: Candidate, model: ModelProfile, gpu: GpuFacts, lat: Latencies, req: Request
) -> Candidate:
    """The launch model's tokens/s for a candidate that loads; its allreduce time replaces the
    per-call table's."""
    from topoctl.autoconf import launch_model
    from topoctl.autoconf.evidence import LEVELS

    if cand.fit is None or not cand.fit.fits:
        return cand
    est = launch_model.estimate(
        launch_model.EstimateCase(
            model,
            cand.effective,
            cand.runs_path,
            gpu,
            lat,
            cand.fit,
            req.objective,
            req.accept_length,
            req.context_length,
            req.decode_context,
        )
    )
    if est is None:
        return replace(cand, predicted=None)
    return replace(
        cand,
        predicted=est,
        allreduce_us=est.allreduce_us,
        allreduce_level=LEVELS.get(est.allreduce_level, 1),
        allreduce_basis=[
            f"launch model: {est.tokens_per_s:.1f} tok/s predicted ({est.objective}); "
            f"allreduce: {est.allreduce_source}"
        ]
        + implied_notes(cand),
    )


# The settings of the allreduce paths (sglang/data/spelling.yaml): a default of SGLang's own in one
# of them can move the path a launch runs on.
PATH_SETTINGS = frozenset(
    setting for settings in table.table()["allreduce_paths"].values() for setting in settings
)


def implied_notes(cand: Candidate) -> list[str]:
    """What SGLang sets by itself for a candidate, and the path it then runs, for --explain and
    json."""
    notes = [
        f"SGLang sets {setting}={value!r} by itself here ({rule_id})"
        for setting, (value, rule_id) in sorted(cand.implied.items())
    ]
    notes += [
        f"SGLang turns {setting}={cand.defaults[setting]!r} by itself here, the launch leaving "
        f"it out ({cand.default_rules[setting]})"
        for setting in sorted(cand.default_rules)
        if setting not in cand.effective
        and setting in PATH_SETTINGS
        and not equal(setting, cand.defaults[setting], None)
    ]
    if cand.runs_path != cand.path:
        notes.append(
            f"so the launch runs allreduce path {cand.runs_path}, not {cand.path}: priced as "
            f"{cand.runs_path}"
        )
    return notes


def place(
    snapshot: SnapshotLike,
    tp: int,
    dp: int,
    visible: ProbeVisible | None = None,
    views: dict[tuple[int, int], PairView] | None = None,
) -> Placement:
    """The GPUs a (TP, DP) option runs on: one TP group, or each data-parallel replica's group
    (autoconf/placement.py), among the GPUs CUDA sees when the snapshot says it sees fewer than
    NVML. A snapshot whose GPU list is shorter than its stated GPU count gets every GPU it lists.
    `views`: the snapshot's pairs (placement.pair_views), read once for every option."""
    allowed = visible.gpus if visible is not None else None
    text = visible.text if visible is not None else ""
    try:
        return choose_replicas(snapshot, tp, dp, allowed, text, views)
    except ValueError:
        return choose_gpus(snapshot, max(1, tp * dp), allowed, text, views)


def usable_gpu_count(snapshot: SnapshotLike, notes: list[str]) -> tuple[int, ProbeVisible | None]:
    """How many GPUs a launch can use on the target: those CUDA sees when the snapshot records
    CUDA_VISIBLE_DEVICES (probe/visible.py), else every GPU. A target where CUDA sees none is bad
    input."""
    machine = target_gpu_count(snapshot)
    visible = probe_visible(snapshot)
    if visible is None:
        return machine, None
    if not visible.known:
        notes.append(visible.text)
        return machine, None
    if not visible.gpus:
        raise TopoctlError(
            f"{visible.text}: there is no GPU to launch SGLang on",
            hint="probe again without CUDA_VISIBLE_DEVICES (or with the GPUs the launch will use)",
        )
    notes.append(f"{visible.text}; the launch is placed on those only")
    return len(visible.gpus), visible


@dataclass
class _Pool:
    """Every candidate of a search, by what became of it, and what each one's rules said."""

    candidates: list[Candidate] = field(default_factory=list)
    blocked: list[Candidate] = field(default_factory=list)
    unfit: list[Candidate] = field(default_factory=list)  # the memory model says they do not load
    findings_by_id: dict[str, Finding] = field(default_factory=dict)
    placements: dict[tuple[int, int], Placement] = field(default_factory=dict)
    space: Space | None = (
        None  # the last TP option's settings space (the one without a model speaks of)
    )
    unbuilt: set[str] = field(default_factory=set)  # kernels the launches left out would need

    def add(self, cand: Candidate) -> None:
        if cand.fit is not None and not cand.fit.fits:
            self.unfit.append(cand)
        else:
            (self.blocked if cand.blocked_by else self.candidates).append(cand)


@dataclass
class _Plan:
    """What a search needs before it judges anything: the request, the sizes to try and where."""

    req: Request
    ruleset: RuleSet
    notes: list[str]
    machine_count: int
    gpu_count: int
    visible: ProbeVisible | None
    ep: int
    options: list[tuple[int, int]]
    version: str  # the flags' version (flags.version)
    memory_version: str
    rules_version: str
    sms: tuple[int, ...] = ()  # the target GPUs' SMs, for the kernel matrix


def _checked_options(
    model: ModelProfile | None, gpu_count: int, visible: ProbeVisible | None, req: Request, ep: int
) -> list[tuple[int, int]]:
    """The (TP, DP) options, each checked against the GPUs the launch can use (a clear error
    otherwise)."""
    if ep > 1 and model is not None and not model.get("moe"):
        raise TopoctlError(
            f"--ep-size {ep}: {model['name']} is a dense model; expert parallelism needs experts",
            hint="leave --ep-size out for a dense model",
        )
    options = parallel_options(model, gpu_count, req)
    try:
        for tp, dp in options:
            check_parallel_sizes(tp * dp if req.dp_size else tp, ep, gpu_count)
            if tp % ep:
                check_parallel_sizes(tp, ep, gpu_count)
    except TopoctlError as error:
        if visible is not None and error.message.startswith("--tp-size"):
            error.message = error.message.replace(
                "GPUs of the target", "GPUs CUDA sees on the target"
            )
            error.hint = f"{visible.text}; " + (error.hint or "")
        raise
    if ep > 1:
        options = [(tp, dp) for tp, dp in options if tp >= ep and tp % ep == 0]
    return options


def _plan(
    snapshot: SnapshotView,
    model: ModelProfile | None,
    flags: FlagSet,
    target_version: str | None,
    req: Request,
    ruleset: RuleSet | None,
) -> _Plan:
    if ruleset is None:
        import topoctl.rules.engine as rules_api

        ruleset = rules_api.load_rules()
    notes: list[str] = [] if flags.exact else [flags.note]
    machine_count = target_gpu_count(snapshot)
    gpu_count, visible = usable_gpu_count(snapshot, notes)
    ep = req.ep_size or 1
    options = _checked_options(model, gpu_count, visible, req, ep)
    version = flags.version
    memory_version = (
        getattr(flags, "requested", None) or version
    )  # memory.py says how a newer one is matched
    sms = tuple(
        sorted({sm for gpu in snapshot.indexed_gpus if isinstance(sm := gpu.get("sm"), int)})
    )
    return _Plan(
        req,
        ruleset,
        notes,
        machine_count,
        gpu_count,
        visible,
        ep,
        options,
        version,
        memory_version,
        target_version or version,
        sms,
    )


def _base_launch(tp: int, dp: int, ep: int, req: Request) -> Launch:
    launch: Launch = {"tp_size": tp}
    if dp != 1:
        launch["dp_size"] = dp
    if ep != 1:
        launch["ep_size"] = ep
    for name in ("context_length", "max_running_requests"):
        if getattr(req, name):
            launch[name] = getattr(req, name)
    return launch


def _judge_options(
    snapshot: SnapshotView, model: ModelProfile | None, plan: _Plan, gpu: GpuFacts
) -> _Pool:
    """Every candidate of every (TP, DP) option, judged by the rules and fitted by the memory model."""
    from topoctl.autoconf.placement import pair_views

    req, pool = plan.req, _Pool()
    spec_options = _spec_options(req.speculative, req.force_speculative)
    views = pair_views(snapshot)  # the pairs, read once for every option's placement
    facts_cache: SharedCache = {}  # the snapshot's facts, read once for every option's rules
    for tp, dp in plan.options:
        # the GPUs of this option (each replica's TP group with DP > 1): what the rules judge and
        # render writes
        placement = pool.placements[(tp, dp)] = place(snapshot, tp, dp, plan.visible, views)
        base_launch = _base_launch(tp, dp, plan.ep, req)
        judge = _Judge(
            plan.ruleset,
            snapshot,
            model,
            Layout(tp, plan.ep, dp, placement.gpus),
            plan.rules_version,
            facts_cache,
        )
        for spec in spec_options:
            judge.report(spec, base_launch)
        tp_space = settings_space(judge.findings())
        if pool.space is None or tp == plan.options[-1][0]:
            pool.space = tp_space
        ipc = pcie_ipc.Scope(plan.version, tp, pcie_ipc.model_dtype(model), req.nodes)
        for path, spec, launch in launches(
            tp_space, base_launch, plan.version, spec_options, req.draft_model
        ):
            if not pcie_ipc.admits(path, ipc):  # SGLang would run it on NCCL (rules/sglang/data)
                continue
            unbuilt = [
                a
                for sm in plan.sms
                for a in kernels.launch_unbuilt(plan.version, sm, launch, model, tp)
            ]
            if (
                unbuilt
            ):  # a kernel never built for this GPU (check blocks it, or warns for the fusion)
                pool.unbuilt.update(
                    f"{a.op.name}: {a.verdict} for SM{a.sm} in SGLang {a.release}" for a in unbuilt
                )
                continue
            cand, _ = judge_candidate(judge, path, spec, launch, tp_space, req.speculative)
            pool.add(
                _fit(cand, model, gpu, plan.memory_version, req) if model is not None else cand
            )
        for key, finding in judge.findings_by_id.items():
            pool.findings_by_id.setdefault(key, finding)
    return pool


def _settle_unfit(
    pool: _Pool,
    evidence: list[Evidence],
    snapshot: SnapshotView,
    model: ModelProfile | None,
    gpu: GpuFacts,
    plan: _Plan,
) -> None:
    """Move the launches a measurement shows running back in; with none left that loads, say what
    would fit."""
    pool.unfit, measured = measured_to_run(pool.unfit, evidence, snapshot, model)
    for cand in measured:
        (pool.blocked if cand.blocked_by else pool.candidates).append(cand)
    if model is not None and not pool.candidates and not pool.blocked and pool.unfit:
        best = max(pool.unfit, key=lambda c: (c.memory_fit.kv_cache_bytes, c.tp))
        raise TopoctlError(
            f"{model['name']} does not fit on this machine: at TP {best.tp} it "
            f"{best.memory_fit.why}",
            hint="what would fit: "
            + what_would_fit(model, pool.unfit, gpu, plan.gpu_count, plan.req, plan.memory_version),
            exit_code=1,
        )


def _price(
    pool: _Pool,
    evidence: list[Evidence],
    snapshot: SnapshotView,
    model: ModelProfile | None,
    gpu: GpuFacts,
    req: Request,
    allreduces: int,
) -> None:
    """Each launch's expected cost: the per-call table, then the launch model where a model is
    known."""
    from topoctl.autoconf.launch_model import Latencies

    passing = len(pool.candidates)
    priced = estimate_all(pool.candidates + pool.blocked, evidence, snapshot, model, allreduces)
    if model is not None:
        lat = Latencies(snapshot, evidence)
        priced = [_predict(cand, model, gpu, lat, req) for cand in priced]
        priced = (
            anchored(priced[:passing]) + priced[passing:]
        )  # a measured launch anchors its other paths
    pool.candidates, pool.blocked = priced[:passing], priced[passing:]


def _result(
    snapshot: SnapshotView,
    model: ModelProfile | None,
    flags: FlagSet,
    target_version: str | None,
    plan: _Plan,
    pool: _Pool,
    evidence: list[Evidence],
    gpu: GpuFacts,
) -> Result:
    """The winner, the reasons behind its settings, ties and comparisons: what every renderer reads."""
    req, notes, candidates, blocked = plan.req, plan.notes, pool.candidates, pool.blocked
    winner = candidates[0]
    paths = table.table()["allreduce_paths"]
    assert pool.space is not None and winner.report is not None
    winner_space = settings_space(winner.report.findings) if model is not None else pool.space
    reasons, decided = winner_reasons(
        winner, winner_space, paths, bool(req.tp_size), plan.gpu_count, plan.machine_count
    )
    tied = ties(winner, candidates)
    if tied and winner.predicted is not None:
        notes.append(
            "tie: "
            + "; ".join(c.label() + f" (TP {c.tp})" for c in tied[:4])
            + f" predict the same {winner.score:.1f} tok/s as the chosen launch; it was chosen "
            "by the rules' "
            "preferences and the fewest departures from SGLang's defaults"
        )
    # a choice held at SGLang's default (ranking.hold_within_band); speculation's says so in its
    # comparison
    notes.extend(
        note for choice, note in sorted(winner.uncertain.items()) if choice != "speculative"
    )
    same_tp = [c for c in candidates if c.tp == winner.tp]
    result = Result(
        snapshot,
        model,
        flags,
        target_version,
        winner.tp,
        plan.ep,
        req.speculative,
        req.force_speculative,
        winner,
        candidates,
        blocked,
        list(winner.report.findings),
        reasons,
        decided,
        speculative_comparison(
            same_tp,
            winner,
            req.speculative,
            req.force_speculative,
            blocked,
            [c for c in pool.unfit if c.tp == winner.tp],
        ),
        faster_paths(winner, same_tp, paths),
        notes,
        evidence,
        sorted(
            (str(k), str(v)) for k, v in (getattr(plan.ruleset, "disabled", None) or {}).items()
        ),
        placement=pool.placements[(winner.tp, winner.dp)],
        unfit=pool.unfit,
        gpu=gpu,
        objective=req.objective,
    )
    return result


def search(
    snapshot: SnapshotLike,
    model: ModelProfile | None,
    flags: FlagSet,
    target_version: str | None,
    request: Request | None = None,
    ruleset: RuleSet | None = None,
) -> Result:
    """Run the stages in order: plan the options, judge every candidate, settle those that do not
    load, price and rank the rest, and keep the result. What the user asked for beyond the machine
    and the model comes in one Request (the default: nothing asked)."""
    from topoctl.autoconf.gpu_specs import target_gpu

    req = request or Request()
    snapshot = view_of(
        snapshot
    )  # the command's view, passed down to every stage (made here for a plain dict)
    plan = _plan(snapshot, model, flags, target_version, req, ruleset)
    gpu = target_gpu(snapshot)
    allreduces = allreduces_per_forward(model, plan.notes)
    pool = _judge_options(snapshot, model, plan, gpu)
    evidence = collect_evidence(
        [pool.findings_by_id[key] for key in sorted(pool.findings_by_id)], plan.notes
    )
    _settle_unfit(pool, evidence, snapshot, model, gpu, plan)
    _price(pool, evidence, snapshot, model, gpu, req, allreduces)
    rank(pool.candidates, pool.blocked, flags)
    require_a_launch(pool.candidates, pool.blocked, sorted(pool.unbuilt))
    return _result(snapshot, model, flags, target_version, plan, pool, evidence, gpu)
