"""The plain data the engine hands to its users: rules, findings, reports and violations.

These are the types autoconf and the CLI code against (docs/architecture.md, "Rules engine
contract"), so they stay small, immutable where it matters, and free of engine internals.

Layer: knowledge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Literal, Optional

from topoctl.core.vocab import SEVERITIES

if TYPE_CHECKING:
    from .facts import Context

SEVERITY_ORDER = {name: rank for rank, name in enumerate(SEVERITIES)}

# A compiled condition: takes the evaluation context, answers True, False or None (= unknown).
Condition = Callable[["Context"], Optional[bool]]
# The closed word sets of a rule file and a report (vocab.SEVERITIES;
# tests/rules/test_rules_engine.py holds them equal).
Severity = Literal["block", "warn", "prefer", "info"]
Expectation = Literal["fire", "unknown", "silent"]  # what a rule's own test case asserts
Status = Literal[
    "fired", "unknown"
]  # a finding's status: fired, or a block rule that could not be decided
ViolationKind = Literal["forbid", "require"]


@dataclass
class TestCase:
    """One of a rule's own cases: a partial snapshot and request, and what the rule must do on them."""

    name: str
    expect: Expectation
    snapshot: dict[str, Any]
    request: dict[str, Any]
    violates: Optional[list[str]] = (
        None  # the settings request.launch breaks, asserted (None: not asserted)
    )


@dataclass
class Rule:
    """One piece of knowledge, as written in a rule file, plus its compiled condition."""

    id: str
    title: str
    severity: Severity
    message: str
    remediation: str
    effect: dict[str, Any]
    evidence: list[dict[str, Any]]
    tests: list[TestCase]
    when: object  # the condition as written (for explain)
    condition: Condition
    source_file: str
    scope: str = ""
    tags: list[str] = field(default_factory=list)
    builtin: bool = True


@dataclass(frozen=True)
class Finding:
    """A rule that fired (or, for block rules, could not be decided) on a snapshot and request."""

    rule_id: str
    title: str
    severity: Severity
    status: Status  # fired | unknown ("cannot verify")
    message: str
    remediation: str
    effect: dict[str, Any]
    evidence: list[dict[str, Any]]
    unknown_facts: list[str]
    source_file: str

    @property
    def status_text(self) -> str:
        """What people read: an undecided rule is shown as "cannot verify", never as a pass."""
        return "cannot verify" if self.status == "unknown" else self.status

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule_id": self.rule_id,
            "title": self.title,
            "severity": self.severity,
            "status": self.status,
            "status_text": self.status_text,
            "message": self.message,
            "remediation": self.remediation,
            "effect": self.effect,
            "evidence": self.evidence,
            "unknown_facts": list(self.unknown_facts),
            "source_file": self.source_file,
        }


@dataclass
class Report:
    """Everything one evaluation found, and which rules were switched off and why."""

    findings: list[Finding]
    disabled: list[tuple[str, str]]
    # Non-block rules whose facts were unknown: not findings (they neither warn nor prefer), but
    # shown by `--explain` style output so nobody wonders why a rule stayed quiet.
    undecided: list[tuple[str, list[str]]] = field(default_factory=list)
    # What SGLang sets by itself for this launch (effect.implies of the rules that fired on the
    # launch as written): setting -> (value, rule id). Every rule was judged with these values in
    # the launch.
    implied: dict[str, tuple[object, str]] = field(default_factory=dict)

    def blocking(self) -> list[Finding]:
        """Block findings, fired or undecided: an undecided block rule never silently passes."""
        return [finding for finding in self.findings if finding.severity == "block"]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, object] = {
            "findings": [finding.to_dict() for finding in self.findings],
            "disabled": [
                {"rule_id": rule_id, "reason": reason} for rule_id, reason in self.disabled
            ],
            "undecided": [
                {"rule_id": rule_id, "unknown_facts": facts} for rule_id, facts in self.undecided
            ],
        }
        if (
            self.implied
        ):  # only when SGLang changes something by itself, so other reports read as before
            out["implied"] = [
                {"setting": setting, "value": value, "rule_id": rule_id}
                for setting, (value, rule_id) in self.implied.items()
            ]
        return out


@dataclass
class Violation:
    """A launch breaking a finding's forbid or require (value is the launch's effective value)."""

    finding: Finding
    setting: str
    value: object
    kind: ViolationKind
    explicit: bool = True  # False when the value is a default the launch did not write
    detail: str = ""


class RuleSet:
    """The loaded rules, in load order (built-in first), and the disabled ones with their reasons."""

    def __init__(self, rules: list[Rule], disabled: dict[str, str] | None = None) -> None:
        self.rules = rules
        self.disabled: dict[str, str] = dict(disabled or {})
        self.warnings: list[
            str
        ] = []  # what the loader tells the user (a site file that holds no rules)
        self._by_id = {rule.id: rule for rule in rules}

    def get(self, rule_id: str) -> Rule:
        """The rule with this id; KeyError if there is none (disabled rules are still here)."""
        return self._by_id[rule_id]

    def __contains__(self, rule_id: object) -> bool:
        return rule_id in self._by_id

    def __len__(self) -> int:
        return len(self.rules)

    def active(self) -> list[Rule]:
        """Rules that take part in evaluation (not disabled)."""
        return [rule for rule in self.rules if rule.id not in self.disabled]
