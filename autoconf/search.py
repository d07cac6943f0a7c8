"""The search behind `topoctl recommend`: enumerate candidate launches, drop the blocked ones, rank the
rest by evidence, and say why.

Nothing here names a system. The candidate space is the allreduce paths of sglang/data/spelling.yaml, EAGLE-3
on or off (when asked for), and every value a rule's effect mentions (prefer/require) for the other
settings. The rules decide what is blocked (forbid/require effects; a block rule whose facts are unknown
counts as blocking: "cannot verify"), and their evidence decides the order, after fewest warnings and the
most remediations of blocking rules honoured (a `prefer` of a block rule, e.g. NCCL_P2P_DISABLE=1 where P2P
is missing or unverified: a safe launch is not traded for a number measured elsewhere):

1. measured > upstream-reported > modelled: a candidate whose expected speed rests on measurements
   outranks one that rests on upstream claims, which outranks the cost model alone;
2. within a level, the faster estimate wins (tok/s from evidence; or, without throughput evidence, the
   modelled allreduce time of one forward pass = allreduces x per-call latency of the path);
   a number is carried only onto the launch that was measured (evidence.unmeasured_settings);
3. then the user's request (EAGLE-3 asked for), the number of rule preferences honoured, and the fewest
   departures from SGLang's defaults.

The numbers themselves (what a rule's evidence says, under which settings) are read by autoconf/evidence.py;
this module decides which of them speak of each candidate and ranks on them.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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
    collect_evidence,
    unmeasured_settings,
)
from topoctl.autoconf.placement import Placement, choose_gpus
from topoctl.errors import TopoctlError
from topoctl.rules.engine import launch_defaults
from topoctl.rules.settings import equal
from topoctl.sglang import spelling as table

if TYPE_CHECKING:
    from topoctl.rules.model import Report, Violation

SPEC_GROUP = tuple(table.table()["speculative_group"])  # the three EAGLE sizes, from sglang/data/spelling.yaml
NO_MODEL_NOTE = "no model given: ranked by per-call allreduce latency"


# ---------------------------------------------------------------------------------------------- effects

def effect_items(effect: dict[str, Any], kind: str) -> list[tuple[str, Any]]:
    """(setting, values) of a finding's forbid list (values: the `values` operand, or None), (setting, value)
    of its require/prefer mapping. The loader has normalised the effect (forbid entries are mappings)."""
    if kind == "forbid":
        return [(entry["setting"], entry.get("values")) for entry in effect.get("forbid") or ()]
    return list((effect.get(kind) or {}).items())


# ------------------------------------------------------------------------------------------- candidates

@dataclass
class Candidate:
    path: str
    launch: dict[str, Any]
    blocked_by: list[tuple[Any, str]] = field(default_factory=list)  # (finding, why)
    warnings: list[tuple[Any, str]] = field(default_factory=list)
    estimate: float | None = None  # tok/s when throughput evidence reaches it
    estimate_level: int = 1
    estimate_basis: list[Evidence] = field(default_factory=list)
    allreduce_us: float = 0.0
    allreduce_level: int = 1
    allreduce_basis: list[str] = field(default_factory=list)
    prefers: int = 0
    departures: int = 0
    defaults: dict[str, Any] = field(default_factory=dict)  # what the rules say SGLang does by itself here
    honours_request: bool = True
    remedies: int = 0  # preferences of blocking rules honoured: ranked before speed (a safe launch first)
    gpus: tuple[int, ...] = ()  # the GPUs it runs on (snapshot indices; autoconf/placement.py)
    estimate_withheld: list[str] = field(default_factory=list)  # numbers measured on another launch, and why

    @property
    def speculative(self) -> str | None:
        return self.launch.get("speculative_algorithm")

    @property
    def level(self) -> int:
        return self.estimate_level if self.estimate is not None else self.allreduce_level

    def key(self) -> tuple:
        has_throughput = self.estimate is not None
        score = self.estimate if self.estimate is not None else -self.allreduce_us
        return (-len(self.warnings), self.remedies, self.level, has_throughput, round(score, 6), self.honours_request,
                self.prefers, -self.departures)

    def label(self) -> str:
        parts = [f"allreduce={self.path}", f"speculative={self.speculative or 'off'}"]
        for setting in sorted(self.launch):
            if setting in ("tp_size", "ep_size", "speculative_algorithm", "speculative_draft_model_path") \
                    or setting in SPEC_GROUP or setting in table.table()["allreduce_paths"][self.path]:
                continue
            parts.append(f"{setting}={self.launch[setting]}")
        return ", ".join(parts)

    def canonical(self) -> str:
        return repr(sorted((k, repr(v)) for k, v in self.launch.items()))


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


def estimate_formula(cand: "Candidate") -> str | None:
    """How a candidate's tok/s estimate was reached, e.g. `89.5 tok/s measured (rule a) x 1.09 (+9% with
    cuda_graph_max_bs=128 instead of 512, measured, rule b) = 97.6 tok/s`; None without throughput evidence."""
    if cand.estimate is None or not cand.estimate_basis:
        return None
    base = cand.estimate_basis[0]
    text = f"{_fmt(base.value)} {base.unit} {base.level} (rule {base.rule_id})"
    for rel in cand.estimate_basis[1:]:
        text += (f" x {rel.factor():.4g} ({rel.relative_text()} with {rel.change_text()}, {rel.level}, "
                 f"rule {rel.rule_id})")
    if len(cand.estimate_basis) > 1:
        text += f" = {cand.estimate:.1f} {base.unit}"
    return text


def _interconnect(snapshot: dict[str, Any]) -> str:
    return str((snapshot.get("summary") or {}).get("interconnect") or "none")


def _model_matches(wanted: Any, model: str | None) -> bool:
    """An evidence `model=` against the requested model: same name, ignoring case and an org prefix."""
    if wanted is None:
        return True
    if not model:
        return False
    return str(wanted).strip().lower().rsplit("/", 1)[-1] == str(model).strip().lower().rsplit("/", 1)[-1]


def _agrees(setting: str, value: Any, launch: dict[str, Any], scoped: dict[str, Any] | None = None) -> bool:
    """Whether a launch runs with `value` for `setting` (a setting it leaves out, or `none`, is at its default:
    `scoped`, what the rules say SGLang does by itself here, else rules/settings.yaml)."""
    return equal(setting, launch.get(setting), value, scoped)


def _applies(ev: Evidence, cand: Candidate, model: str | None, interconnect: str | None = None) -> bool:
    """Whether a number measured under ev.config speaks of this candidate: every setting the evidence names
    agrees with the candidate (a setting the candidate leaves out takes SGLang's default); settings the
    evidence does not name do not disqualify it."""
    if ev.path is not None and ev.path != cand.path:
        return False
    for key, value in ev.config.items():
        if key in DESCRIPTIVE_KEYS:
            continue
        if key == INTERCONNECT_KEY:
            if not _here(ev, interconnect):
                return False
            continue
        if key == MODEL_KEY:
            if not _model_matches(value, model):
                return False
            continue
        if not _agrees(key, value, cand.launch, cand.defaults):
            return False
    return True


def _throughput(cand: Candidate, evidence: list[Evidence], model: str | None,
                interconnect: str | None = None) -> tuple[float, int, list[Evidence]] | None:
    """Expected tok/s of a candidate: the absolute number that applies to it (the most specific, then the best
    level, then the lower value), times each relative number that applies to it and changes a setting the
    absolute number was not measured with; (value, level, basis: the absolute number first).

    A number is carried onto the candidate only when the candidate is the launch that was measured: every
    setting it departs from SGLang's defaults in is named by the number, its allreduce path or an applied
    relative number (evidence.unmeasured_settings). The numbers left out for that reason are said in
    cand.estimate_withheld."""
    exact = [ev for ev in evidence if ev.kind == "throughput" and _applies(ev, cand, model, interconnect)]
    cand.estimate_withheld = []
    for base in sorted(exact, key=lambda ev: (len(ev.config) + (ev.path is not None), ev.rank, -abs(ev.value)),
                       reverse=True):
        value, level, basis, taken = _chain(base, cand, evidence, model, interconnect)
        named = set(base.config) | taken
        if base.path is not None:
            named |= set(table.table()["allreduce_paths"][base.path])
        if "speculative_algorithm" in base.config:
            named |= set(SPEC_GROUP)
        unmeasured = unmeasured_settings(cand.launch, cand.defaults, named)
        if not unmeasured:
            return value, level, basis
        cand.estimate_withheld.append(f"not carried: {base.describe()}: this launch sets {', '.join(unmeasured)}, "
                                      "which the measurement did not")
    return None


def _chain(base: Evidence, cand: Candidate, evidence: list[Evidence], model: str | None,
           interconnect: str | None) -> tuple[float, int, list[Evidence], set[str]]:
    """The absolute number times the relative numbers that apply to the candidate, and the settings they change."""
    value, level, basis = base.value, base.rank, [base]
    taken: set[str] = set()
    for rel in sorted((ev for ev in evidence if ev.kind == "relative"), key=lambda ev: (ev.rule_id, ev.config_text)):
        if not _applies(rel, cand, model, interconnect):
            continue
        changed = _changed(rel)
        if not changed or taken & set(changed):
            continue
        # The absolute number must stand for the relative number's baseline: it names none of the changed
        # settings, or names them at the baseline's value (a number measured with the change already has it).
        if "allreduce" in changed and base.path is not None:
            continue
        if any(key in base.config and not equal(key, base.config[key], before) for key, (_, before) in changed.items()):
            continue
        value *= rel.factor()
        level = min(level, rel.rank)
        basis.append(rel)
        taken.update(changed)
    return value, level, basis, taken


def _known_latency(path: str, evidence: list[Evidence], snapshot: dict[str, Any]) -> tuple[float, int, str] | None:
    link = _interconnect(snapshot)
    items = [ev for ev in evidence if ev.kind == "latency" and ev.path == path and _here(ev, link)]
    if items:
        best = max(items, key=lambda ev: (ev.rank, -ev.value))
        return best.latency_us(), best.rank, best.describe()
    costs = load("costs.yaml")
    per_link = (costs.get("latency_us") or {}).get(_interconnect(snapshot)) or {}
    if path in per_link:
        return float(per_link[path]), 1, f"{per_link[path]} us per call (modelled: {costs.get('source')})"
    return None


def _latencies(evidence: list[Evidence], snapshot: dict[str, Any]) -> dict[str, tuple[float, int, str]]:
    """Per-call allreduce latency (us), level and basis of every path: best evidence, else the cost table; a
    path with neither is assumed no faster than the slowest path that has data here (no gain is assumed for
    what nobody measured). Computed once per search: it depends on the path, not on the candidate."""
    paths = list(table.table()["allreduce_paths"])
    known = {path: _known_latency(path, evidence, snapshot) for path in paths}
    out: dict[str, tuple[float, int, str]] = {}
    for path in paths:
        found_here = known[path]
        if found_here:
            out[path] = found_here
            continue
        others = [(found[0], other) for other, found in known.items() if other != path and found]
        if others:
            value, other = max(others)
            out[path] = (value, 1, f"no data for this path: assumed no faster than {other} (modelled)")
        else:
            out[path] = (100.0, 1, "no data: 100 us per call assumed (modelled)")
    return out


# ------------------------------------------------------------------------------------------------ search

def _request(model: dict[str, Any] | None, speculative: str | None, tp: int, ep: int, version: str | None,
             launch: dict[str, Any], gpus: tuple[int, ...] = ()) -> dict[str, Any]:
    """What the rules judge; `gpus`: the launch's GPU group (rules' pair quantifiers visit its pairs only)."""
    return {"model": model, "speculative": speculative, "tp_size": tp, "ep_size": ep,
            "sglang_version": version, "launch": launch, "gpus": list(gpus) if gpus else None}


def _violations(report: Report, launch: dict[str, Any]) -> tuple[list, list]:
    """(blocking, warning) (finding, why) pairs of the violations a candidate launch commits."""
    from topoctl.rules import violations

    blocks: list[tuple[Any, str]] = []
    warns: list[tuple[Any, str]] = []
    found: list[Violation] = violations(report, launch)
    for violation in found:
        why = violation.detail or f"{violation.kind} {violation.setting}"
        (blocks if violation.finding.severity == "block" else warns).append((violation.finding, why))
    return blocks, warns


def target_gpu_count(snapshot: dict[str, Any]) -> int:
    """GPUs of the target; a snapshot without any is bad input (exit 2): nothing can be launched on it."""
    summary = snapshot.get("summary") or {}
    try:
        count = int(summary.get("gpu_count") or len(snapshot.get("gpus") or []))
    except (TypeError, ValueError):
        count = len(snapshot.get("gpus") or [])
    if count < 1:
        raise TopoctlError("the target snapshot has no GPU: there is nothing to launch SGLang on",
                           hint="use a snapshot of the machine that will run SGLang (`topoctl probe` there), or --system NAME")
    return count


def check_parallel_sizes(tp: int, ep: int, gpu_count: int) -> None:
    """SGLang's own start-up checks on the sizes, made before anything is written (exit 2, with a hint)."""
    if tp > gpu_count:
        raise TopoctlError(f"--tp-size {tp} is more than the {gpu_count} GPUs of the target",
                           hint=f"use --tp-size {gpu_count} or fewer (a single-node launch spans at most every GPU)")
    if ep > tp:
        raise TopoctlError(f"--ep-size {ep} is larger than the tensor parallel size {tp}",
                           hint=f"expert parallelism runs inside the TP group: use --ep-size {tp} or a divisor of it")
    if tp % ep:
        divisors = [d for d in range(1, tp + 1) if tp % d == 0]
        raise TopoctlError(f"--ep-size {ep} does not divide the tensor parallel size {tp}",
                           hint=f"use one of {', '.join(map(str, divisors))}")


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
    gpus = placement.gpus
    version = flags.version
    notes: list[str] = []
    if not flags.exact:
        notes.append(flags.note)
    spec_options: list[str | None] = [None]
    if speculative:
        spec_options = [speculative] if force_speculative else [None, speculative]

    base_launch = {"tp_size": tp}
    if ep != 1:
        base_launch["ep_size"] = ep
    facts_cache: dict[str, Any] = {}  # facts of the snapshot alone, read once for every candidate's evaluation
    reports = {spec: rules_api.evaluate(ruleset, snapshot, _request(model, spec, tp, ep, target_version or version,
                                                                    dict(base_launch), gpus), facts_cache)
               for spec in spec_options}
    findings_by_id: dict[str, Any] = {}
    for report in reports.values():
        for finding in report.findings:
            findings_by_id.setdefault(finding.rule_id, finding)
    findings = [findings_by_id[key] for key in sorted(findings_by_id)]

    # Values rules mention: these settings are searched (default vs each value mentioned).
    paths = table.table()["allreduce_paths"]
    path_settings = {name for setting_map in paths.values() for name in setting_map}
    fixed_settings = set(path_settings) | {"speculative_algorithm", "speculative_draft_model_path", "tp_size",
                                           "ep_size", "model_path"} | set(SPEC_GROUP)
    required: dict[str, Any] = {}
    preferred: dict[str, list[Any]] = {}
    options: dict[str, list[Any]] = {}
    prefer_pairs: list[tuple[str, Any, str]] = []
    remedies: list[tuple[str, Any]] = []
    reasons: dict[str, list[str]] = {}
    for finding in findings:
        for setting, value in effect_items(finding.effect, "require"):
            if setting not in fixed_settings:
                required.setdefault(setting, value)
                reasons.setdefault(setting, []).append(finding.rule_id)
        for setting, value in effect_items(finding.effect, "prefer"):
            prefer_pairs.append((setting, value, finding.rule_id))
            if finding.severity == "block":  # the remediation of a blocking rule (NCCL_P2P_DISABLE=1 without P2P)
                remedies.append((setting, value))
            if setting not in fixed_settings:
                preferred.setdefault(setting, []).append(value)
        for setting, _ in effect_items(finding.effect, "forbid"):
            reasons.setdefault(setting, []).append(finding.rule_id)
    for setting, values in preferred.items():
        if setting in required:
            continue
        choices = [table.default(setting)]
        for value in values:
            if not any(equal(setting, value, seen) for seen in choices):
                choices.append(value)
        options[setting] = choices
    for setting, value in required.items():
        options[setting] = [value]

    spec_values: dict[str, Any] = dict(table.table()["speculative_defaults"])
    for setting, value, _ in prefer_pairs:
        if setting in SPEC_GROUP:
            spec_values[setting] = value

    model_name = model.get("name") if model else None
    # Allreduces of one forward pass come from the model; without one, paths are ranked by per-call latency.
    allreduces = (model or {}).get("allreduces_per_forward")
    if not allreduces:
        allreduces = 1
        notes.append(NO_MODEL_NOTE)

    candidates: list[Candidate] = []
    blocked: list[Candidate] = []
    reports_of: dict[int, Any] = {}
    option_names = sorted(options)
    for path in paths:
        path_settings_map = paths[path]
        if not all(table.version_allows(setting, version) for setting in path_settings_map):
            continue
        for spec in spec_options:
            for combo in itertools.product(*(options[name] for name in option_names)):
                launch: dict[str, Any] = dict(base_launch)
                launch.update(path_settings_map)
                for name, value in zip(option_names, combo):
                    if value is not None:
                        launch[name] = value
                if spec:
                    launch["speculative_algorithm"] = spec
                    if draft_model:
                        launch["speculative_draft_model_path"] = draft_model
                    for name in SPEC_GROUP:
                        launch[name] = spec_values[name]
                cand = Candidate(path, launch, gpus=gpus)
                # Each candidate is judged on its own: rules may speak of launch settings.
                report = rules_api.evaluate(ruleset, snapshot,
                                            _request(model, spec, tp, ep, target_version or version, dict(launch), gpus),
                                            facts_cache)
                reports_of[id(cand)] = report
                for finding in report.findings:
                    findings_by_id.setdefault(finding.rule_id, finding)
                cand.blocked_by, cand.warnings = _violations(report, launch)
                cand.honours_request = (spec == speculative)
                cand.defaults = launch_defaults(report)
                cand.prefers = sum(1 for setting, value, _ in prefer_pairs
                                   if _agrees(setting, value, launch, cand.defaults))
                cand.remedies = sum(1 for setting, value in remedies if _agrees(setting, value, launch, cand.defaults))
                cand.departures = sum(1 for setting, value in launch.items()
                                      if setting not in ("tp_size",) and not _agrees(setting, value, {}, cand.defaults))
                (blocked if cand.blocked_by else candidates).append(cand)

    evidence = collect_evidence([findings_by_id[key] for key in sorted(findings_by_id)], notes)
    latencies = _latencies(evidence, snapshot)
    for cand in candidates + blocked:
        found = _throughput(cand, evidence, model_name, _interconnect(snapshot))
        if found:
            cand.estimate, cand.estimate_level, cand.estimate_basis = found
        latency, level, basis = latencies[cand.path]
        cand.allreduce_us = allreduces * latency
        cand.allreduce_level = level
        cand.allreduce_basis = [basis]

    candidates.sort(key=Candidate.canonical)
    candidates.sort(key=Candidate.key, reverse=True)
    blocked.sort(key=Candidate.canonical)
    if not candidates:
        reasons_text = sorted({f"{finding.rule_id}: {finding.message}" for cand in blocked
                               for finding, _ in cand.blocked_by})
        raise TopoctlError("no launch passes the rules on this machine: " + "; ".join(reasons_text[:4]),
                           hint="run with --explain to see every blocked alternative", exit_code=1)
    winner = candidates[0]
    findings = list(reports_of[id(winner)].findings)

    decided = {setting for setting in reasons}
    decided.update(setting for setting, _, _ in prefer_pairs)
    decided.add("tp_size")
    for ev in winner.estimate_basis:
        decided.update(ev.config)
    reasons.setdefault("tp_size", []).append("topoctl: tensor parallel across " + (
        f"all {gpu_count} GPUs" if tp == gpu_count else f"{tp} GPUs (--tp-size): GPUs {_ids(gpus)}"))
    for setting, _, rule_id in prefer_pairs:
        reasons.setdefault(setting, []).append(rule_id)
    for name in paths[winner.path]:
        reasons.setdefault(name, []).append(f"ranking: allreduce path {winner.path}")
    if winner.speculative:
        for name in ("speculative_algorithm", "speculative_draft_model_path") + SPEC_GROUP:
            reasons.setdefault(name, []).append("requested: --speculative " + winner.speculative)
    for name in options:
        if name not in reasons:
            reasons[name] = ["ranking"]

    comparison = None
    if speculative:
        with_spec = next((c for c in candidates if c.speculative), None)
        without = next((c for c in candidates if not c.speculative), None)
        comparison = _compare(with_spec, without, winner, speculative, force_speculative, blocked)
    offers = []
    for path in paths:
        if path == winner.path:
            continue
        best = next((c for c in candidates if c.path == path and c.speculative == winner.speculative), None)
        if best and not best.warnings and best.allreduce_level >= LEVELS["upstream-reported"] \
                and best.allreduce_us < winner.allreduce_us:
            offers.append(best)
    return Result(snapshot, model, flags, target_version, tp, ep, speculative, force_speculative, winner,
                  candidates, blocked, findings, {k: sorted(set(v)) for k, v in reasons.items()}, decided,
                  comparison, offers, notes, evidence,
                  sorted((str(k), str(v)) for k, v in (getattr(ruleset, "disabled", None) or {}).items()),
                  placement)


def _ids(gpus: tuple[int, ...]) -> str:
    return ",".join(str(index) for index in gpus)


def _side(cand: Candidate | None) -> dict[str, Any] | None:
    if cand is None:
        return None
    basis = cand.estimate_basis[0] if cand.estimate_basis else None
    return {
        "config": cand.label(),
        "throughput_tok_s": round(basis.value, 3) if basis else None,
        "estimated_tok_s": round(cand.estimate, 3) if cand.estimate is not None else None,
        "level": LEVEL_NAMES[cand.level],
        "evidence": [ev.describe() for ev in cand.estimate_basis] or cand.allreduce_basis,
        "modelled_allreduce_ms_per_forward": round(cand.allreduce_us / 1000.0, 3),
    }


def _compare(with_spec: Candidate | None, without: Candidate | None, winner: Candidate, speculative: str,
             forced: bool, blocked: list[Candidate]) -> dict[str, Any]:
    out: dict[str, Any] = {"asked": speculative, "forced": forced,
                           "with": _side(with_spec), "without": _side(without),
                           "emitted": "with" if winner.speculative else "without"}
    name = speculative.upper().replace("EAGLE3", "EAGLE-3")
    if with_spec is None:
        reasons = sorted({f.rule_id for c in blocked if c.speculative for f, _ in c.blocked_by})
        out["verdict"] = "blocked"
        out["message"] = f"{name} is blocked on this machine (rules: {', '.join(reasons) or 'none'})"
    elif without is None:
        out["verdict"] = "forced" if forced else "only"
        out["message"] = f"{name} kept (--force-speculative)" if forced else f"{name} is the only launch left"
    elif not winner.speculative:
        a, b = out["with"], out["without"]
        shown_a = a["throughput_tok_s"] if a["throughput_tok_s"] is not None else a["estimated_tok_s"]
        shown_b = b["throughput_tok_s"] if b["throughput_tok_s"] is not None else b["estimated_tok_s"]
        out["verdict"] = "slower"
        if shown_a is not None and shown_b is not None:
            out["message"] = (f"{name} is slower here: {_fmt(shown_a)} tok/s with it vs {_fmt(shown_b)} tok/s "
                              f"without ({a['level']}); emitting the launch without it "
                              "(--force-speculative keeps it)")
        else:
            out["message"] = (f"{name} ranks below the launch without it ({a['level']} vs {b['level']} evidence); "
                              "emitting the launch without it (--force-speculative keeps it)")
    else:
        out["verdict"] = "kept"
        out["message"] = f"{name} kept: no evidence that it is slower on this machine"
    return out
