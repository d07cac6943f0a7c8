"""Helm charts (a folder with Chart.yaml): rendered by `helm template CHART` when helm is on PATH;
else each template is rendered from the chart's values.yaml as far as plain substitution goes, and
what was not rendered is named with its line. Plain substitution covers `{{ .Values.a.b }}` (with `|
quote`, `| default X`, `| int`, `| toString`), `.Release.Name`, `.Chart.Name`/`.Chart.AppVersion`,
`{{- if .Values.x }}` / `{{- if not ... }}` / `else` / `end`, `{{- with .Values.x }}`, `{{- range
.Values.list }}` over a list or mapping (with `.`, `$key`, `$value`), and `toYaml VALUE | nindent N`
/ `indent N`. `include`, `template`, `tpl`, functions and other actions are not rendered: the line
is kept without them, and the launch says so.

Layer: deployment reading (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

from topoctl.core.errors import TopoctlError
from topoctl.deploy.found import Found, shape_of
from topoctl.deploy.yaml_file import read_yaml_text

_ACTION = re.compile(r"\{\{-?\s*(.*?)\s*-?\}\}")
_CONTROL = re.compile(r"^\s*\{\{-?\s*(if|else if|else|end|range|with|define)\b(.*?)-?\}\}\s*$")
_RELEASE = "release-name"  # what `helm template` calls the release when none is given


def is_chart(path: str) -> bool:
    return os.path.isdir(path) and os.path.isfile(os.path.join(path, "Chart.yaml"))


@dataclass
class Rendered:
    """One template as YAML text, the source line of each rendered line, and what was not rendered."""

    path: str
    text: str
    lines: list[int]
    not_rendered: list[str] = field(default_factory=list)


def _load(path: str) -> Any:
    from topoctl.core import safe_read as limits

    try:
        text = limits.read_file(path, limits.MAX_LAUNCH_FILE_BYTES).decode("utf-8", "replace")
        return limits.load_yaml(text, path)
    except Exception:  # noqa: BLE001 - a chart without readable values renders what it can
        return None


def _lookup(expression: str, context: dict[str, Any]) -> tuple[bool, Any]:
    """(found, value) of `.Values.a.b`, `.`, `.field`, `$value`, `.Release.Name`..."""
    expression = expression.strip()
    if expression.startswith("$") and expression[1:] in context.get("$", {}):
        return True, context["$"][expression[1:]]
    if expression == ".":
        return ("." in context), context.get(".")
    if not expression.startswith("."):
        return False, None
    parts = expression[1:].split(".")
    root: Any = context.get(".") if parts[0] not in ("Values", "Release", "Chart") else context
    if parts[0] in ("Values", "Release", "Chart"):
        root = context[parts[0]]
        parts = parts[1:]
    for part in parts:
        if not isinstance(root, dict) or part not in root:
            return False, None
        root = root[part]
    return True, root


def _scalar(value: Any) -> str:
    if value is True or value is False:
        return "true" if value else "false"
    return "" if value is None else str(value)


def _pipe(action: str, context: dict[str, Any]) -> tuple[bool, str]:
    """An inline action: a value with simple pipes, or (False, why) when it is more than that."""
    stages = [stage.strip() for stage in action.split("|")]
    head = stages[0]
    if head.startswith(("toYaml ", "toJson ")):
        return False, action
    found, value = _lookup(head, context)
    for stage in stages[1:]:
        name, _, argument = stage.partition(" ")
        if name == "default":
            if not found or value in (None, "", [], {}):
                found, value = True, argument.strip().strip('"')
        elif name == "quote" and found:
            value = '"' + _scalar(value).replace('"', '\\"') + '"'
        elif name in ("int", "toString", "trim") and found:
            value = _scalar(value).strip()
        else:
            return False, action
    return (True, _scalar(value)) if found else (False, action)


class _Renderer:
    def __init__(self, values: Any, chart: dict[str, Any]) -> None:
        self.base = {
            "Values": values if isinstance(values, dict) else {},
            "Release": {"Name": _RELEASE, "Namespace": "default", "Service": "Helm"},
            "Chart": chart,
        }
        self.out: list[str] = []
        self.lines: list[int] = []
        self.not_rendered: list[str] = []
        self.path = ""

    def render(
        self, lines: list[str], numbers: list[int], context: dict[str, Any], active: bool = True
    ) -> None:
        index = 0
        while index < len(lines):
            control = _CONTROL.match(lines[index])
            if control is None:
                if active:
                    self._line(lines[index], numbers[index], context)
                index += 1
                continue
            kind, argument = control.group(1), control.group(2).strip()
            end = _block_end(lines, index)
            body, body_numbers = lines[index + 1 : end], numbers[index + 1 : end]
            if active and kind in ("if", "with", "range"):
                self._block(kind, argument, body, body_numbers, context, numbers[index])
            index = end + 1

    def _block(
        self,
        kind: str,
        argument: str,
        body: list[str],
        numbers: list[int],
        context: dict[str, Any],
        line: int,
    ) -> None:
        then, otherwise, other_numbers = _split_else(body, numbers)
        if kind == "range":
            self._range(argument, then, numbers[: len(then)], context, line)
            return
        negate = argument.startswith("not ")
        found, value = _lookup(argument[4:] if negate else argument, context)
        if not found and not argument.startswith(".Values"):
            self.not_rendered.append(
                f"{self.path}:{line}: {{{{ {kind} {argument} }}}} (assumed true)"
            )
            found, value = True, True
        truthy = bool(value) != negate if found else negate
        if truthy:
            inner = dict(context, **{".": value}) if kind == "with" else context
            self.render(then, numbers[: len(then)], inner)
        elif otherwise:
            self.render(otherwise, other_numbers, context)

    def _range(
        self, argument: str, body: list[str], numbers: list[int], context: dict[str, Any], line: int
    ) -> None:
        names, _, source = argument.rpartition(":=")
        found, value = _lookup(source.strip() if names else argument, context)
        if not found:
            self.not_rendered.append(
                f"{self.path}:{line}: {{{{ range {argument} }}}} (no such value)"
            )
            return
        if value is not None and not isinstance(value, (dict, list)):
            raise TopoctlError(
                f"{self.path}:{line}: {{{{ range {argument} }}}}: {source.strip()} is "
                f"{shape_of(value)}, not a list or mapping",
                hint="give it as a list or a mapping in the chart's values.yaml",
            )
        items = list(value.items()) if isinstance(value, dict) else list(enumerate(value or []))
        variables = [name.strip().lstrip("$") for name in names.split(",")] if names else []
        for key, item in items:
            bound = dict(context.get("$", {}))
            if len(variables) == 2:
                bound[variables[0]], bound[variables[1]] = key, item
            elif variables:
                bound[variables[0]] = item
            self.render(body, numbers, dict(context, **{".": item, "$": bound}))

    def _line(self, text: str, number: int, context: dict[str, Any]) -> None:
        to_yaml = re.match(
            r"^(\s*)\{\{-?\s*toYaml\s+(\S+)\s*\|\s*n?indent\s+(\d+)\s*-?\}\}\s*$", text
        )
        if to_yaml:
            import yaml

            found, value = _lookup(to_yaml.group(2), context)
            if found and value is not None:
                for piece in yaml.safe_dump(
                    value, default_flow_style=False, sort_keys=False
                ).splitlines():
                    self.out.append(" " * int(to_yaml.group(3)) + piece)
                    self.lines.append(number)
            return

        def replace(match: re.Match[str]) -> str:
            action = match.group(1)
            if action.startswith("/*"):
                return ""
            ok, value = _pipe(action, context)
            if not ok:
                self.not_rendered.append(f"{self.path}:{number}: {{{{ {action} }}}}")
                return ""
            return value

        self.out.append(_ACTION.sub(replace, text))
        self.lines.append(number)


_OPENS = ("if", "range", "with", "define")


def _controls(lines: list[str]) -> Iterator[tuple[int, str, int]]:
    """(index, action word, nesting depth after it) of each control action (if, range, with, define,
    else, end) in `lines`: where a block ends and where its else stands are read from the one count.
    """
    depth = 0
    for index, text in enumerate(lines):
        control = _CONTROL.match(text)
        if control is None:
            continue
        word = control.group(1)
        depth += 1 if word in _OPENS else -1 if word == "end" else 0
        yield index, word, depth


def _block_end(lines: list[str], start: int) -> int:
    for index, word, depth in _controls(lines[start:]):
        if word == "end" and depth == 0:
            return start + index
    return len(lines) - 1


def _split_else(body: list[str], numbers: list[int]) -> tuple[list[str], list[str], list[int]]:
    for index, word, depth in _controls(body):
        if word == "else" and depth == 0:
            return body[:index], body[index + 1 :], numbers[index + 1 :]
    return body, [], []


def plain(chart_dir: str) -> list[Rendered]:
    """Every template of the chart rendered from values.yaml by plain substitution."""
    values = _load(os.path.join(chart_dir, "values.yaml"))
    chart = _load(os.path.join(chart_dir, "Chart.yaml"))
    chart = (
        {
            "Name": chart.get("name"),
            "AppVersion": chart.get("appVersion"),
            "Version": chart.get("version"),
        }
        if isinstance(chart, dict)
        else {}
    )
    out = []
    templates = os.path.join(chart_dir, "templates")
    for name in sorted(os.listdir(templates)) if os.path.isdir(templates) else []:
        if not name.endswith((".yaml", ".yml")):
            continue
        path = os.path.join(templates, name)
        from topoctl.core import (
            safe_read as limits,
        )  # the one reading layer: regular files, the size checked first

        lines = (
            limits.read_file(path, limits.MAX_LAUNCH_FILE_BYTES)
            .decode("utf-8", "replace")
            .splitlines()
        )
        renderer = _Renderer(values, chart)
        renderer.path = path
        renderer.render(lines, list(range(1, len(lines) + 1)), dict(renderer.base))
        out.append(
            Rendered(path, "\n".join(renderer.out) + "\n", renderer.lines, renderer.not_rendered)
        )
    return out


def with_helm(chart_dir: str, timeout: float = 60.0) -> list[Rendered] | None:
    """`helm template CHART`, split at its `# Source:` comments; None when helm is not on PATH or
    fails."""
    import shutil
    import subprocess

    helm = shutil.which("helm")
    if helm is None:
        return None
    try:
        result = subprocess.run(
            [helm, "template", chart_dir],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if result.returncode != 0:
        return None
    out: list[Rendered] = []
    parent = os.path.dirname(os.path.abspath(chart_dir))
    for document in result.stdout.split("\n---"):
        match = re.search(r"^# Source: (.+)$", document, re.M)
        if not match:
            continue
        source = os.path.join(parent, match.group(1).strip())
        text = document[match.end() :].lstrip("\n")
        out.append(
            Rendered(
                source, text, [], ["rendered by helm template: lines are the rendered document's"]
            )
        )
    return out


def read(path: str, text: str, base_dir: str) -> tuple[str, list[Found]]:
    """The Helm chart kind's reader (topoctl/deploy/registry.py): a chart folder, read as one."""
    return "helm", read_chart(path)


def read_chart(chart_dir: str) -> list[Found]:
    """A Helm chart's launches: `helm template` when helm is on PATH, else its templates by plain
    substitution (what was not rendered is said in each launch's notes)."""
    rendered = with_helm(chart_dir)
    how = "helm template"
    if rendered is None:
        rendered, how = plain(chart_dir), "plain substitution of values.yaml (helm is not on PATH)"
    out: list[Found] = []
    for template in rendered:
        try:
            _, founds = read_yaml_text(template.path, template.text, os.path.dirname(template.path))
        except TopoctlError as error:
            founds = [
                Found(
                    template.path,
                    1,
                    kind="unreadable",
                    none_reason=f"not read ({how}): {error.message}",
                )
            ]
        for item in founds:
            _remap(item, template)
            if item.launch is not None:
                item.launch = replace(
                    item.launch,
                    notes=[
                        *item.launch.notes,
                        f"Helm chart {chart_dir} rendered by {how}",
                        *(f"not rendered: {part}" for part in template.not_rendered[:8]),
                    ],
                )
        out.extend(
            item
            for item in founds
            if item.launch is not None or "no launch (" not in item.none_reason
        )
    if not out:
        out = [
            Found(
                chart_dir,
                1,
                kind="helm",
                none_reason=f"{chart_dir}: no launch in the chart's templates (rendered by {how})",
            )
        ]
    return out


def _remap(item: Found, template: Rendered) -> None:
    """Lines of a rendered template back to the template file's lines."""
    lines = template.lines

    def back(where: str) -> str:
        head, _, number = where.rpartition(":")
        if head == template.path and number.isdigit() and 0 < int(number) <= len(lines):
            return f"{head}:{lines[int(number) - 1]}"
        return where

    if not lines:
        return
    item.line = int(back(f"{template.path}:{item.line}").rsplit(":", 1)[1])
    launch = item.launch
    if launch is not None:
        item.launch = replace(
            launch,
            where=back(launch.where),
            arg_where=[back(w) for w in launch.arg_where] if launch.arg_where else launch.arg_where,
            env_where={k: back(v) for k, v in launch.env_where.items()},
        )
