"""Running each rule's own cases: the knowledge carries its tests, like `conftest verify`.

A case is a partial snapshot plus a request and what the rule's condition must answer on them: fire
(true), unknown (cannot be decided) or silent (false). Facts a case leaves out are unknown, so a
case that must fire names every fact the rule needs, and a silent case proves the rule's scope is
narrow.

Layer: knowledge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from dataclasses import dataclass

from .evaluation import evaluate_rule
from .model import Rule, TestCase

ANSWER_OF = {"fire": True, "unknown": None, "silent": False}
EXPECT_OF = {True: "fire", None: "unknown", False: "silent"}


@dataclass
class CaseResult:
    rule: Rule
    case: TestCase
    got: str
    unknown_facts: list[str]
    violated: list[str] | None = (
        None  # the settings request.launch breaks, when the case asserts them
    )

    @property
    def passed(self) -> bool:
        return self.got == self.case.expect and (
            self.case.violates is None or sorted(self.violated or []) == sorted(self.case.violates)
        )

    def describe(self) -> str:
        text = f"{self.rule.id} :: {self.case.name}: expected {self.case.expect}, got {self.got}"
        if self.unknown_facts and self.got == "unknown":
            text += f" (unknown: {', '.join(self.unknown_facts)})"
        if self.case.violates is not None:
            text += (
                f"; violates expected {sorted(self.case.violates)}, got "
                f"{sorted(self.violated or [])}"
            )
        return text


def run_case(rule: Rule, case: TestCase) -> CaseResult:
    """Evaluate one rule on one of its cases (no other rule takes part); with `violates:`, also what
    its effect makes of the case's launch."""
    answer, unknown = evaluate_rule(rule, case.snapshot, case.request)
    violated = None
    if case.violates is not None:
        from .evaluation import evaluate, violations
        from .model import RuleSet

        report = evaluate(RuleSet([rule]), case.snapshot, case.request)
        launch = (case.request or {}).get("launch") or {}
        violated = sorted(
            {item.setting for item in violations(report, launch) if item.finding.rule_id == rule.id}
        )
    return CaseResult(
        rule=rule, case=case, got=EXPECT_OF[answer], unknown_facts=unknown, violated=violated
    )


def run_all(rules: list[Rule]) -> list[CaseResult]:
    return [run_case(rule, case) for rule in rules for case in rule.tests]


def default_conflicts(rules: list[Rule]) -> list[str]:
    """Rules that say SGLang does different things by itself (effect.defaults) on a machine both
    apply to: for each must-fire case of a rule with defaults, every other rule whose defaults name
    the same setting with another value and that also fires on that case. One line per (pair of
    rules, setting)."""
    with_defaults = [rule for rule in rules if rule.effect.get("defaults")]
    found: dict[tuple[str, str, str], str] = {}
    for rule in with_defaults:
        for case in rule.tests:
            if case.expect != "fire":
                continue
            for other in with_defaults:
                if other is rule:
                    continue
                for setting, value in rule.effect["defaults"].items():
                    theirs = other.effect["defaults"].get(setting, value)
                    if theirs == value and type(theirs) is type(value):
                        continue
                    answer, _ = evaluate_rule(other, case.snapshot, case.request)
                    if answer is not True:
                        continue
                    first, second = sorted((rule.id, other.id))
                    found.setdefault(
                        (first, second, setting),
                        f"{rule.id} says {setting} defaults to {value!r}, {other.id} says "
                        f"{theirs!r}; both fire on {rule.id} :: {case.name}",
                    )
    return [found[key] for key in sorted(found)]
