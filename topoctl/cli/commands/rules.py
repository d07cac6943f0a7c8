"""`topoctl rules`: read, explain, test and extend the knowledge topoctl carries.

The knowledge is data (rules/knowledge/*.yaml plus a site's own folders given with --rules DIR);
these subcommands are how a user reads it (`list`, `explain`), checks their own additions (`test`,
`schema`, `facts`) and sees which built-in rules a site switched off and why. Heavy imports
(jsonschema) happen only where a user's files are validated, so `topoctl rules list` stays fast.

Layer: commands and CLI (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import click

from topoctl.cli.commands._options import load_rules_for, rules_options
from topoctl.cli.commands.completion import complete_rule_ids
from topoctl.core.errors import TopoctlError
from topoctl.core.vocab import evidence_config_text

SEVERITY_MARK = {"block": "BLOCK", "warn": "WARN", "prefer": "PREFER", "info": "INFO"}


@click.group("rules")
def command() -> None:
    """List, explain and test the knowledge rules, and print their schema.

    \b
    Examples:
      topoctl rules list
      topoctl rules explain torch-symm-mem-sm12x-keyerror
      topoctl rules test --rules ./site-rules
      topoctl rules schema > rule.schema.json
    """


@command.command("list", short_help="Every rule: id, severity, title and where it comes from.")
@rules_options
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@click.option(
    "--severity",
    type=click.Choice(["block", "warn", "prefer", "info"]),
    help="Only rules of this severity.",
)
def list_rules(**given: Any) -> None:
    """Every rule: id, severity, title and where it comes from (built-in or a site file).

    \b
    Examples:
      topoctl rules list
      topoctl rules list --severity block --format json
      topoctl rules list --rules ./site-rules --disable nccl-ll128-without-nvlink='our NCCL build tested it'
    """
    run_list(ListOptions(**given))


@dataclass(frozen=True)
class ListOptions:
    """Everything `topoctl rules list` was given (click's parameter names)."""

    rules_dirs: tuple[str, ...] = ()
    disabled: tuple[str, ...] = ()
    fmt: str = "table"
    severity: str | None = None


def run_list(options: ListOptions) -> None:
    """The rules of the options' sources, as a table or a JSON document."""
    ruleset = load_rules_for(options.rules_dirs, options.disabled, with_tests=True)
    rules = [
        rule
        for rule in ruleset.rules
        if options.severity is None or rule.severity == options.severity
    ]
    if options.fmt == "json":
        rows = [
            {
                "id": rule.id,
                "severity": rule.severity,
                "title": rule.title,
                "scope": rule.scope,
                "builtin": rule.builtin,
                "source_file": rule.source_file,
                "tags": rule.tags,
                "evidence_levels": sorted({str(item.get("level")) for item in rule.evidence}),
                "disabled_reason": ruleset.disabled.get(rule.id),
            }
            for rule in rules
        ]
        click.echo(
            json.dumps(
                {
                    "rules": rows,
                    "disabled": [
                        {"rule_id": key, "reason": value}
                        for key, value in sorted(ruleset.disabled.items())
                    ],
                },
                indent=2,
            )
        )
        return
    import shutil  # here, where it is used: `topoctl rules list --format json` does without it

    width = shutil.get_terminal_size((120, 20)).columns
    id_width = max([len(rule.id) for rule in rules] + [2])
    title_width = max(20, width - id_width - 8 - 10 - 4)
    click.echo(f"{'ID':<{id_width}}  {'SEVERITY':<8}  {'ORIGIN':<8}  TITLE")
    for rule in rules:
        origin = "built-in" if rule.builtin else "site"
        title = (
            rule.title if len(rule.title) <= title_width else rule.title[: title_width - 3] + "..."
        )
        if rule.id in ruleset.disabled:
            title = f"[disabled: {ruleset.disabled[rule.id]}] {title}"
        click.echo(
            f"{rule.id:<{id_width}}  {SEVERITY_MARK[rule.severity]:<8}  {origin:<8}  {title}"
        )
    click.echo(
        f"{len(rules)} rules" + (f", {len(ruleset.disabled)} disabled" if ruleset.disabled else "")
    )


@command.command(
    "explain", short_help="What a rule says, why (its evidence), when it applies, its effect."
)
@click.argument("rule_id", shell_complete=complete_rule_ids)
@rules_options
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def explain(**given: Any) -> None:
    """What a rule says, why (its evidence, with numbers and scope), when it applies, and its
    effect.

    \b
    Examples:
      topoctl rules explain torch-symm-mem-sm12x-keyerror
      topoctl rules explain custom-allreduce-pcie-gate --format json
    """
    run_explain(ExplainOptions(**given))


@dataclass(frozen=True)
class ExplainOptions:
    """Everything `topoctl rules explain` was given (click's parameter names)."""

    rule_id: str
    rules_dirs: tuple[str, ...] = ()
    disabled: tuple[str, ...] = ()
    fmt: str = "text"


def run_explain(options: ExplainOptions) -> None:
    """One rule, as text or a JSON document; an unknown id is bad usage, with the nearest ids as the
    hint."""
    rule_id, fmt = options.rule_id, options.fmt
    ruleset = load_rules_for(options.rules_dirs, options.disabled, with_tests=True)
    if rule_id not in ruleset:
        import difflib

        close = difflib.get_close_matches(rule_id, [rule.id for rule in ruleset.rules], n=3)
        raise TopoctlError(
            f"no rule {rule_id!r}",
            hint=("did you mean " + ", ".join(close) + "?")
            if close
            else "`topoctl rules list` shows the ids",
        )
    rule = ruleset.get(rule_id)
    if fmt == "json":
        click.echo(
            json.dumps(
                {
                    "id": rule.id,
                    "title": rule.title,
                    "severity": rule.severity,
                    "scope": rule.scope,
                    "tags": rule.tags,
                    "when": rule.when,
                    "effect": rule.effect,
                    "message": rule.message,
                    "remediation": rule.remediation,
                    "evidence": rule.evidence,
                    "tests": [{"name": case.name, "expect": case.expect} for case in rule.tests],
                    "source_file": rule.source_file,
                    "builtin": rule.builtin,
                    "disabled_reason": ruleset.disabled.get(rule.id),
                },
                indent=2,
                default=str,
            )
        )
        return
    click.echo(render_explanation(rule, ruleset.disabled.get(rule.id)))


def render_explanation(rule: Any, disabled_reason: str | None = None) -> str:
    """The human text of `topoctl rules explain`."""
    import textwrap

    import yaml

    def block(text: str, indent: str = "  ") -> str:
        return textwrap.fill(text, width=100, initial_indent=indent, subsequent_indent=indent)

    lines = [f"{rule.id}  [{rule.severity}]", f"  {rule.title}", ""]
    if disabled_reason:
        lines += [f"  DISABLED here: {disabled_reason}", ""]
    lines += ["What:", block(rule.message), "", "What to do:", block(rule.remediation), ""]
    if rule.scope:
        lines += ["Scope:", block(rule.scope), ""]
    lines += ["When (condition):"]
    lines += [
        "  " + line
        for line in yaml.safe_dump(rule.when, sort_keys=False, default_flow_style=False)
        .rstrip()
        .splitlines()
    ]
    lines += ["", "Effect:"]
    effect = rule.effect
    for entry in effect.get("forbid") or []:
        rest = {key: value for key, value in entry.items() if key != "setting"}
        shown = f"  {json.dumps(rest)}" if rest else "  (any value other than its default)"
        lines.append(f"  forbid  {entry['setting']}" + shown)
    labels = {"defaults": "SGLang's own default here", "implies": "SGLang sets by itself"}
    for kind in ("require", "prefer", "defaults", "implies"):
        for setting, value in (effect.get(kind) or {}).items():
            label = labels.get(kind, kind)
            lines.append(f"  {label:<8} {setting} = {json.dumps(value)}")
    if not any(effect.get(kind) for kind in ("forbid", "require", "prefer", "defaults", "implies")):
        lines.append("  (none: evidence and context only)")
    lines += ["", "Evidence:"]
    for item in rule.evidence:
        lines.append(
            f"  - {item.get('source')}  [{item.get('level')}]"
            + (f"  {item['reference']}" if item.get("reference") else "")
        )
        lines.append(block(str(item.get("summary", "")), "      "))
        for number in item.get("numbers") or []:
            value = f"{number['value']}" + (
                f"-{number['value_max']}" if "value_max" in number else ""
            )
            text = f"      {number['metric']}: {value} {number['unit']}"
            if number.get("config"):
                text += f" ({evidence_config_text(number['config'])})"
            baseline = number.get("baseline")
            if baseline:
                text += f" vs {baseline['value']}" + (
                    f" ({evidence_config_text(baseline['config'])})"
                    if baseline.get("config")
                    else ""
                )
            lines.append(text)
        scope = item.get("scope")
        if isinstance(scope, dict):
            lines.append(
                "      scope: " + "; ".join(f"{key}: {value}" for key, value in scope.items())
            )
        elif scope:
            lines.append(f"      scope: {scope}")
    lines += [
        "",
        f"Tests: {len(rule.tests)} cases "
        f"({', '.join(sorted({case.expect for case in rule.tests}))})",
        f"Source: {rule.source_file}",
    ]
    return "\n".join(lines)


@command.command("test", short_help="Run every rule's own cases (must fire / must stay silent).")
@rules_options(disable=False)
@click.option(
    "--builtin/--no-builtin",
    default=True,
    show_default=True,
    help="Include the built-in rules (--no-builtin tests only the files given with --rules).",
)
@click.option("-v", "--verbose", is_flag=True, help="Print every case, not only the failures.")
@click.pass_context
def test(ctx: click.Context, **given: Any) -> None:
    """Run every rule's own cases (must fire / must stay silent / cannot be decided), and report
    rules whose defaults for one setting differ where both apply; exit 1 if a case fails or defaults
    conflict.

    \b
    Examples:
      topoctl rules test
      topoctl rules test --rules ./site-rules -v
      topoctl rules test --no-builtin --rules ./site-rules
    """
    if not run_test(SelfTestOptions(**given)):
        ctx.exit(1)


@dataclass(frozen=True)
class SelfTestOptions:
    """Everything `topoctl rules test` was given (click's parameter names)."""

    rules_dirs: tuple[str, ...] = ()
    builtin: bool = True
    verbose: bool = False


def run_test(options: SelfTestOptions) -> bool:
    """Every rule's own cases and the conflicting defaults, printed; whether all passed and none
    conflict."""
    from topoctl.rules.engine.selftest import default_conflicts, run_all

    rules_dirs, verbose = options.rules_dirs, options.verbose
    ruleset = load_rules_for(rules_dirs, builtin=options.builtin, with_tests=True)
    if not ruleset.rules:
        raise TopoctlError(
            "no rules to test" + (": the --rules paths hold no rule" if rules_dirs else ""),
            hint="give --rules DIR with *.yaml rule files, or drop --no-builtin to test the "
            "built-in rules",
        )
    results = run_all(ruleset.rules)
    failed = [result for result in results if not result.passed]
    for result in results:
        if not result.passed:
            click.echo(f"FAIL  {result.describe()}  [{result.rule.source_file}]")
        elif verbose:
            click.echo(f"ok    {result.rule.id} :: {result.case.name} ({result.case.expect})")
    conflicts = default_conflicts(ruleset.rules)
    for conflict in conflicts:
        click.echo(f"CONFLICT  {conflict}")
    click.echo(
        f"{len(results) - len(failed)} passed, {len(failed)} failed ({len(ruleset.rules)} rules)"
        + (f", {len(conflicts)} conflicting defaults" if conflicts else "")
    )
    return not failed and not conflicts


@command.command("schema", short_help="Print the JSON Schema of a rule file.")
def schema() -> None:
    """Print the JSON Schema of a rule file (rules/schema/rule.schema.json).

    \b
    Examples:
      topoctl rules schema > rule.schema.json
    """
    from topoctl.rules.engine import rule_schema

    click.echo(json.dumps(rule_schema(), indent=2))


@command.command("facts", short_help="The facts a rule's `when` may name, their types and sources.")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
def facts(fmt: str) -> None:
    """The facts a rule's `when` may name, their types, and where they come from.

    \b
    Examples:
      topoctl rules facts
      topoctl rules facts --format json
    """
    from topoctl.rules.engine.facts import FACTS, PAIR_FACTS
    from topoctl.rules.sglang.settings import setting_table

    rows = [(name, kind, doc) for name, (kind, doc, _) in FACTS.items()]
    rows += [
        (name, kind, doc + " (inside every_pair / any_pair)")
        for name, (kind, doc) in PAIR_FACTS.items()
    ]
    rows += [
        (
            f"launch.{name}",
            entry["type"],
            f"launch setting; default {entry['default']!r}: {entry['doc']}",
        )
        for name, entry in setting_table().items()
    ]
    rows.append(("launch.env:NAME", "str", "an environment variable of the launch; default unset"))
    if fmt == "json":
        click.echo(
            json.dumps(
                [{"fact": name, "type": kind, "doc": doc} for name, kind, doc in rows], indent=2
            )
        )
        return
    width = max(len(name) for name, _, _ in rows)
    for name, kind, doc in rows:
        click.echo(f"{name:<{width}}  {kind:<9}  {doc}")
