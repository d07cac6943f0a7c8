"""topoctl's knowledge as data: YAML rules and the small engine that applies them.

    from topoctl.rules.engine import load_rules, evaluate, violations
    ruleset = load_rules(extra_dirs=["site-rules/"], disabled={"RULE-ID": "why it does not apply here"})
    report = evaluate(ruleset, snapshot, request)       # findings: fired, or "unknown" for undecided blocks
    broken = violations(report, {"custom_all_reduce": True})

Rules live in rules/knowledge/*.yaml (built in) and in a user's folders (--rules DIR). The facts
they match on are documented in docs/rules.md; the file format is rules/schema/rule.schema.json.
Nothing here imports torch or NVML: the engine reads a Snapshot, never the hardware.

Layer: knowledge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from .evaluation import evaluate, evaluate_rule, violations
from .loader import load_rules, rule_schema
from .model import Finding, Report, Rule, RuleSet, TestCase, Violation

__all__ = [
    "Finding",
    "Report",
    "Rule",
    "RuleSet",
    "TestCase",
    "Violation",
    "evaluate",
    "evaluate_rule",
    "load_rules",
    "rule_schema",
    "violations",
]
