"""Evaluating rules on a snapshot and a request, and checking a launch against the findings.

evaluate() answers "what does the knowledge say about this machine and this request?"; violations()
answers "which of those findings does this particular launch break?". autoconf calls evaluate once
and violations once per candidate launch, so violations() is cheap and knows each setting's default:
a launch that says nothing about custom allreduce runs with it on, and breaks "require it off".

Layer: knowledge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from collections.abc import Mapping

from topoctl.rules.sglang import settings as launch_settings
from topoctl.snapshot.view import SnapshotLike

from .conditions import FORBID_OPERATORS, make_test
from .facts import Context, SharedCache
from .model import SEVERITY_ORDER, Finding, Report, Rule, RuleSet, Status, Violation

_SNAPSHOT_KEY = "snapshot\0"  # the snapshot a facts_cache belongs to


def evaluate_rule(
    rule: Rule, snapshot: SnapshotLike, request: Mapping[str, object]
) -> tuple[bool | None, list[str]]:
    """One rule's three-valued answer and the facts it could not read (used by rule self-tests)."""
    context = Context(snapshot, request)
    answer = rule.condition(context)
    return answer, _unique(context.unknown_seen)


def evaluate(
    ruleset: RuleSet,
    snapshot: SnapshotLike,
    request: Mapping[str, object] | None,
    facts_cache: SharedCache | None = None,
) -> Report:
    """Findings of every active rule: fired ones, and block rules that could not be decided
    ("unknown").

    A block rule whose facts are unknown is never dropped: it is reported with status "unknown"
    (shown as "cannot verify") and violations() treats it as blocking, because an unknown P2P is not
    a working P2P.

    `facts_cache`: an empty dict the caller keeps to evaluate many requests (candidate launches) on
    one snapshot; the facts that depend on the snapshot alone (pair facts included) are then read
    once. It is tied to the first snapshot it sees and starts afresh when given another one. Results
    are the same.
    """
    shared = None
    if facts_cache is not None:
        if facts_cache.get(_SNAPSHOT_KEY) is not snapshot:
            facts_cache.clear()
            facts_cache[_SNAPSHOT_KEY] = snapshot
        shared = facts_cache
    request = request or {}
    implied = implied_settings(ruleset, snapshot, request, shared)
    if implied:
        written = request.get("launch")
        launch: Mapping[str, object] = written if isinstance(written, dict) else {}
        request = {
            **request,
            "launch": {**launch, **{setting: value for setting, (value, _) in implied.items()}},
        }
    context = Context(snapshot, request, shared)
    findings: list[Finding] = []
    undecided: list[tuple[str, list[str]]] = []
    for rule in ruleset.active():
        context.unknown_seen = []
        answer = rule.condition(context)
        if answer is True:
            findings.append(_finding(rule, "fired", []))
        elif answer is None:
            facts = _unique(context.unknown_seen)
            if rule.severity == "block":
                findings.append(_finding(rule, "unknown", facts))
            else:
                undecided.append((rule.id, facts))
    findings.sort(
        key=lambda finding: (
            SEVERITY_ORDER[finding.severity],
            finding.status != "fired",
            finding.rule_id,
        )
    )
    return Report(
        findings=findings,
        disabled=sorted(ruleset.disabled.items()),
        undecided=undecided,
        implied=implied,
    )


def implied_settings(
    ruleset: RuleSet,
    snapshot: SnapshotLike,
    request: Mapping[str, object],
    shared: SharedCache | None = None,
) -> dict[str, tuple[object, str]]:
    """What SGLang sets by itself for this launch: the effect.implies of every active rule that
    fires on the launch as written (setting -> (value, rule id); a later rule does not override an
    earlier one).

    SGLang changes some settings inside its process (deterministic inference sets NCCL_ALGO and
    turns custom allreduce off): evaluate() judges the launch with these values, as SGLang will run
    it. Implications are read from the launch as written, one step (an implied setting does not
    imply further ones).
    """
    rules = [rule for rule in ruleset.active() if rule.effect.get("implies")]
    if not rules:
        return {}
    context = Context(snapshot, request, shared)
    implied: dict[str, tuple[object, str]] = {}
    for rule in rules:
        context.unknown_seen = []
        if rule.condition(context) is True:
            for setting, value in rule.effect["implies"].items():
                implied.setdefault(setting, (value, rule.id))
    return implied


def violations(report: Report, launch: Mapping[str, object] | None) -> list[Violation]:
    """The forbid/require entries of the report's findings that `launch` breaks.

    A setting the launch does not name takes its default: first what a finding says SGLang does by
    itself in its scope (effect.defaults), then rules/sglang/data/settings.yaml. Findings with
    status "unknown" are included: undecided block rules block, conservatively. Every severity is
    returned; callers filter.
    """
    launch = launch if isinstance(launch, dict) else {}
    implied = getattr(report, "implied", None) or {}
    if (
        implied
    ):  # the launch as SGLang runs it: what it sets by itself replaces what the launch says
        launch = {**launch, **{setting: value for setting, (value, _) in implied.items()}}
    scoped = launch_defaults(report)

    def effective(setting: str) -> tuple[bool, object, object]:
        default = (
            launch_settings.normalize(
                setting, scoped.get(setting, launch_settings.default_of(setting))
            )
            if launch_settings.is_known_setting(setting)
            else scoped.get(setting)
        )
        if setting in launch:
            return True, launch_settings.normalize(setting, launch[setting]), default
        return False, default, default

    found: list[Violation] = []
    for finding in report.findings:
        effect = finding.effect
        for entry in effect.get("forbid") or ():
            setting = entry["setting"]
            explicit, value, default = effective(setting)
            operator = next((name for name in FORBID_OPERATORS if name in entry), None)
            if operator is None:
                broken = explicit and not launch_settings.equal(setting, value, default, scoped)
                detail = f"{setting} must stay at its default ({default!r})"
            else:
                broken = value is not None and make_test(operator, entry[operator])(value)
                detail = f"{setting} must not be {operator} {entry[operator]!r}"
            if broken:
                found.append(
                    Violation(
                        finding,
                        setting,
                        value,
                        "forbid",
                        explicit,
                        detail + _by_sglang(implied, setting),
                    )
                )
        for setting, required in (effect.get("require") or {}).items():
            explicit, value, _ = effective(setting)
            wanted = launch_settings.normalize(setting, required)
            if not launch_settings.equal(setting, value, wanted, scoped):
                found.append(
                    Violation(
                        finding,
                        setting,
                        value,
                        "require",
                        explicit,
                        f"{setting} must be {wanted!r}" + _by_sglang(implied, setting),
                    )
                )
    return found


def launch_defaults(report: Report) -> dict[str, object]:
    """What the report's findings say SGLang does by itself in their scope (effect.defaults): the
    defaults a launch that leaves a setting out runs with, before rules/sglang/data/settings.yaml.
    """
    scoped: dict[str, object] = {}
    for finding in report.findings:
        scoped.update(finding.effect.get("defaults") or {})
    return scoped


def _by_sglang(implied: dict[str, tuple[object, str]], setting: str) -> str:
    if setting not in implied:
        return ""
    value, rule_id = implied[setting]
    return f" (SGLang sets {setting}={value!r} by itself here: {rule_id})"


def _finding(rule: Rule, status: Status, unknown_facts: list[str]) -> Finding:
    return Finding(
        rule_id=rule.id,
        title=rule.title,
        severity=rule.severity,
        status=status,
        message=rule.message,
        remediation=rule.remediation,
        effect=rule.effect,
        evidence=rule.evidence,
        unknown_facts=unknown_facts,
        source_file=rule.source_file,
    )


def _unique(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))
