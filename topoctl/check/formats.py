"""The report stage of check: the outcomes of every launch as text (for people), json (one result
per launch), JUnit XML (one test case per finding), GitHub annotations (file and line) or SARIF
2.1.0 (report_sarif.py). Every format says each file: a launch's findings, a file with no launch
(why), a file that could not be checked.

Layer: judge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import json

from topoctl.check.outcome import Outcome, failing, fails, origin_file_line, verdict
from topoctl.core.errors import one_line
from topoctl.core.vocab import Severity

SCHEMA_VERSION = 1  # of check's json report: a key renamed or removed raises it


def escape(text: str) -> str:
    """XML text escape (xml.sax.saxutils would pull in urllib on every start)."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def quoteattr(text: str) -> str:
    return '"' + escape(text).replace('"', "&quot;") + '"'


def format_text(outcomes: list[Outcome], fail_on: str) -> str:
    lines = []
    for outcome in outcomes:
        if outcome.error:
            lines.append(f"{outcome.origin}: not checked")
            lines.append(f"  ERROR {one_line(outcome.error)}")
            continue
        if outcome.skipped:
            lines.append(f"{one_line(outcome.origin)}: no launch checked")
            lines.append(f"  NONE  {one_line(outcome.skipped)}")
            continue
        # everything that comes from the input (names, paths, values) on one line: a container named
        # "x\n::error::..." must not print a line a CI log reads as its own annotation
        head = f"{outcome.origin}: SGLang {outcome.flags_version}" + (
            f" ({outcome.note})" if outcome.note else ""
        )
        lines.append(one_line(head))
        for rule_id, reason in outcome.disabled:
            lines.append(f"  OFF   {one_line(rule_id)}: disabled: {one_line(reason)}")
        for item in outcome.items:
            lines.append(
                f"  {item.severity.upper():5} {one_line(item.id)}: {one_line(item.message)}"
            )
            if item.remediation:
                lines.append(f"        fix: {one_line(item.remediation)}")
        lines.append(
            f"  {verdict(outcome, fail_on)}: {outcome.count(Severity.BLOCK)} blocking, "
            f"{outcome.count(Severity.WARN)} warning(s)"
        )
    return "\n".join(lines) + "\n"


def format_json(outcomes: list[Outcome], fail_on: str) -> str:
    doc = {
        "schema_version": SCHEMA_VERSION,
        "fail_on": fail_on,
        "ok": not any(failing(o, fail_on) for o in outcomes),
        "results": [
            {
                "origin": o.origin,
                "sglang_flags_version": o.flags_version,
                "note": o.note or None,
                "ok": not failing(o, fail_on),
                "blocking": o.count(Severity.BLOCK),
                "warnings": o.count(Severity.WARN),
                "findings": [item.__dict__ for item in o.items],
                "disabled": [
                    {"rule_id": rule_id, "reason": reason} for rule_id, reason in o.disabled
                ],
            }
            for o in outcomes
            if not o.skipped and not o.error
        ],
        "no_launch": [
            {"origin": o.origin, "reason": o.skipped} for o in outcomes if o.skipped and not o.error
        ],
    }
    errors = [{"origin": o.origin, "message": o.error} for o in outcomes if o.error]
    if (
        errors
    ):  # only when a file could not be checked: reports of runs without errors keep their form
        doc["errors"] = errors
        doc["ok"] = False
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def format_junit(outcomes: list[Outcome], fail_on: str) -> str:
    lines = ['<?xml version="1.0" encoding="UTF-8"?>']
    total = sum(max(len(o.items), 1) + len(o.disabled) for o in outcomes)
    failures = sum(1 for o in outcomes for i in o.items if fails(i, fail_on))
    skipped = sum(len(o.disabled) + (1 if o.skipped and not o.error else 0) for o in outcomes)
    errors = sum(1 for o in outcomes if o.error)
    lines.append(
        f'<testsuites name="topoctl check" tests="{total}" failures="{failures}" '
        f'skipped="{skipped}"' + (f' errors="{errors}"' if errors else "") + ">"
    )
    for o in outcomes:
        if o.error:
            lines.append(
                f'  <testsuite name={quoteattr(one_line(o.origin))} tests="1" failures="0" '
                'errors="1">'
            )
            lines.append(
                f'    <testcase classname="topoctl.check" name={quoteattr(one_line(o.origin))}>'
            )
            lines.append(f"      <error message={quoteattr(one_line('not checked: ' + o.error))}/>")
            lines.append("    </testcase>")
            lines.append("  </testsuite>")
            continue
        if o.skipped:
            lines.append(
                f'  <testsuite name={quoteattr(one_line(o.origin))} tests="1" failures="0" '
                'skipped="1">'
            )
            lines.append(
                f'    <testcase classname="topoctl.check" name={quoteattr(one_line(o.origin))}>'
            )
            lines.append(
                f"      <skipped message={quoteattr(one_line('no launch: ' + o.skipped))}/>"
            )
            lines.append("    </testcase>")
            lines.append("  </testsuite>")
            continue
        o_fail = sum(1 for i in o.items if fails(i, fail_on))
        lines.append(
            f"  <testsuite name={quoteattr(one_line(o.origin))} "
            f'tests="{max(len(o.items), 1) + len(o.disabled)}" failures="{o_fail}" '
            f'skipped="{len(o.disabled)}">'
        )
        if not o.items:
            lines.append('    <testcase classname="topoctl.check" name="launch"/>')
        for (
            rule_id,
            reason,
        ) in o.disabled:  # a switched-off rule shows as a skipped test with its reason
            classname = quoteattr("topoctl.check." + one_line(o.origin))
            lines.append(
                f"    <testcase classname={classname} name={quoteattr(one_line(rule_id))}>"
            )
            lines.append(f"      <skipped message={quoteattr(one_line('disabled: ' + reason))}/>")
            lines.append("    </testcase>")
        for item in o.items:
            name = quoteattr(f"{item.id}")
            lines.append(
                f"    <testcase classname={quoteattr('topoctl.check.' + one_line(o.origin))} "
                f"name={name}>"
            )
            text = escape(
                one_line(
                    f"{item.message}" + (f" -- fix: {item.remediation}" if item.remediation else "")
                )
            )
            if fails(item, fail_on):
                lines.append(
                    f'      <failure type="{item.severity}" '
                    f"message={quoteattr(one_line(item.title))}>{text}</failure>"
                )
            else:
                lines.append(f"      <system-out>{escape(item.severity)}: {text}</system-out>")
            lines.append("    </testcase>")
        lines.append("  </testsuite>")
    lines.append("</testsuites>")
    return "\n".join(lines) + "\n"


def _gh(text: str) -> str:
    return one_line(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(text: str) -> str:
    return _gh(text).replace(":", "%3A").replace(",", "%2C")


def format_github(outcomes: list[Outcome], fail_on: str) -> str:
    lines = []
    for o in outcomes:
        path, line_no = origin_file_line(o.origin)
        origin_part = (
            f"file={_gh_prop(path)}," + (f"line={line_no}," if line_no else "")
            if o.origin and o.origin not in ("<command>", "<stdin>")
            else ""
        )
        if o.error:
            lines.append(f"::error {origin_part}title={_gh_prop('not checked')}::{_gh(o.error)}")
            continue
        if o.skipped:
            lines.append(f"::notice {origin_part}title={_gh_prop('no launch')}::{_gh(o.skipped)}")
            continue
        for rule_id, reason in o.disabled:
            lines.append(
                "::notice "
                f"{origin_part}title={_gh_prop(rule_id + ': disabled')}::{_gh('disabled: ' + reason)}"
            )
        for item in o.items:
            level = (
                "error"
                if fails(item, fail_on)
                else ("warning" if item.severity == "warn" else "notice")
            )
            file_part = ""
            where = item.where or ""
            if ":" in where and where.rsplit(":", 1)[1].isdigit():
                path, line = where.rsplit(":", 1)
                file_part = f"file={_gh_prop(path)},line={line},"
            elif o.origin and o.origin not in ("<command>", "<stdin>"):
                file_part = origin_part
            message = item.message + (f" -- fix: {item.remediation}" if item.remediation else "")
            lines.append(
                f"::{level} "
                f"{file_part}title={_gh_prop(item.id + ': ' + item.title)}::{_gh(message)}"
            )
    return "\n".join(lines) + ("\n" if lines else "")


def format_sarif(outcomes: list[Outcome], fail_on: str) -> str:
    """SARIF 2.1.0 for code scanning: a renderer of its own (report_sarif.py)."""
    from topoctl.check.sarif import format_sarif as render

    return render(outcomes, fail_on)


FORMATTERS = {
    "text": format_text,
    "json": format_json,
    "junit": format_junit,
    "github": format_github,
    "sarif": format_sarif,
}
