"""Running each rule's own cases: the knowledge carries its tests, like `conftest verify`.

A case is a partial snapshot plus a request and what the rule's condition must answer on them: fire
(true), unknown (cannot be decided) or silent (false). Facts a case leaves out are unknown, so a case
that must fire names every fact the rule needs, and a silent case proves the rule's scope is narrow.
"""
from __future__ import annotations

from dataclasses import dataclass

from .engine import evaluate_rule
from .model import Rule, TestCase

ANSWER_OF = {"fire": True, "unknown": None, "silent": False}
EXPECT_OF = {True: "fire", None: "unknown", False: "silent"}


@dataclass
class CaseResult:
    rule: Rule
    case: TestCase
    got: str
    unknown_facts: list[str]

    @property
    def passed(self) -> bool:
        return self.got == self.case.expect

    def describe(self) -> str:
        text = f"{self.rule.id} :: {self.case.name}: expected {self.case.expect}, got {self.got}"
        if self.unknown_facts and self.got == "unknown":
            text += f" (unknown: {', '.join(self.unknown_facts)})"
        return text


def run_case(rule: Rule, case: TestCase) -> CaseResult:
    """Evaluate one rule on one of its cases (no other rule takes part)."""
    answer, unknown = evaluate_rule(rule, case.snapshot, case.request)
    return CaseResult(rule=rule, case=case, got=EXPECT_OF[answer], unknown_facts=unknown)


def run_all(rules: list[Rule]) -> list[CaseResult]:
    return [run_case(rule, case) for rule in rules for case in rule.tests]
