"""What check says of one launch: its findings (Item) and the launch's outcome (Outcome), handed
from the judge stage to the report stage (topoctl/check/__init__.py lists the stages).

Layer: judge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum

from topoctl.core.vocab import Severity


class Verdict(StrEnum):
    """A checked launch's line in the text report: FAIL when a finding fails at --fail-on, else ok."""

    OK = "ok"
    FAIL = "FAIL"


@dataclass(frozen=True)
class Item:
    """One finding of check about one launch (never severity "prefer": the judge keeps block, warn
    and info)."""

    id: str
    severity: Severity
    title: str
    message: str
    remediation: str = ""
    where: str = ""
    status: str = "fired"


@dataclass
class Outcome:
    origin: str
    items: list[Item] = field(default_factory=list)
    flags_version: str = ""
    note: str = ""
    disabled: list[tuple[str, str]] = field(
        default_factory=list
    )  # (rule id, written reason): in every format
    skipped: str = (
        ""  # a file (or container) with no SGLang launch in it: why; reported, never "ok"
    )
    # a file (or launch) that could not be checked: why; reported, and the check ends with exit 2
    error: str = ""

    def count(self, severity: Severity) -> int:
        return sum(1 for item in self.items if item.severity == severity)


def fails(item: Item, fail_on: str) -> bool:
    return item.severity == Severity.BLOCK or (fail_on == "warn" and item.severity == Severity.WARN)


def failing(outcome: Outcome, fail_on: str) -> bool:
    return any(fails(item, fail_on) for item in outcome.items)


def verdict(outcome: Outcome, fail_on: str) -> Verdict:
    return Verdict.FAIL if failing(outcome, fail_on) else Verdict.OK


def origin_file_line(origin: str) -> tuple[str, str]:
    """`path:line (label)` or `path` -> (path, line or "")."""

    match = re.match(r"^(.*?):(\d+)(?: \(.*\))?$", origin)
    return (match.group(1), match.group(2)) if match else (origin, "")
