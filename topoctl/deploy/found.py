"""What every launch-file reader shares: `Found` (one launch found in a file, or why there is none),
the YAML node with the line of every part (manifests, compose files, SkyPilot tasks, rendered Helm
templates), and the one way a launch file's text is read.

Layer: deployment reading (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from topoctl.core import safe_read as limits
from topoctl.core.errors import TopoctlError
from topoctl.deploy.launchers import Launch


@dataclass
class Found:
    """One launch found in a file, or why a file (or a container in it) holds none."""

    path: str
    line: int
    label: str = ""  # "Deployment sglang / container server", "service sglang"
    launch: Launch | None = None
    none_reason: str = ""  # a file or container with no SGLang launch: why
    unsupported: str = ""  # the other server it starts (vLLM...), when it starts one
    # launch.env | kubernetes | compose | script | dockerfile | skypilot | helm | unknown |
    # unreadable
    kind: str = ""

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass
class Node:
    """A YAML value with the line it starts on (1-based) and, for collections, its children."""

    value: Any
    line: int
    style: str | None = None
    children: Any = field(default=None)

    def get(self, key: str) -> Node | None:
        if isinstance(self.children, dict):
            return self.children.get(key)
        return None

    def at(self, *keys: str) -> Node | None:
        node: Node | None = self
        for key in keys:
            node = node.get(key) if node is not None else None
        return node


_SHAPE_NAMES: dict[type, str] = {dict: "a mapping", list: "a list", str: "a string"}


def shape_of(value: Any) -> str:
    """A YAML value's shape as a message names it: a mapping, a list, a string, a number..."""
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "null"
    return next((name for kind, name in _SHAPE_NAMES.items() if isinstance(value, kind)), "a value")


def shaped(node: Node | None, want: type | tuple[type, ...], path: str, field: str) -> Node | None:
    """`node` when it is absent, null or of the shape `want` (dict, list or str, or a tuple of
    them); else bad input (exit 2, or the file reported unreadable in a folder run) naming the
    file, line and field."""
    if node is None or node.value is None or isinstance(node.value, want):
        return node
    name = " or ".join(_SHAPE_NAMES[w] for w in (want if isinstance(want, tuple) else (want,)))
    raise TopoctlError(
        f"{path}:{node.line}: {field} is {shape_of(node.value)}, not {name}",
        hint=f"write {field} as {name}",
    )


def _convert(node: Any, loader: Any) -> Node:
    """A composed YAML node as plain values plus the line of every part (PyYAML's start_mark.line)."""
    import yaml

    if isinstance(node, yaml.MappingNode):
        children = {}
        for key_node, value_node in node.value:
            children[str(key_node.value)] = _convert(value_node, loader)
        return Node(
            {k: v.value for k, v in children.items()}, node.start_mark.line + 1, None, children
        )
    if isinstance(node, yaml.SequenceNode):
        items = [_convert(item, loader) for item in node.value]
        return Node([i.value for i in items], node.start_mark.line + 1, None, items)
    return Node(loader.construct_object(node, deep=True), node.start_mark.line + 1, node.style)


def yaml_documents(path: str, text: str) -> list[Node]:
    """The documents of a YAML file as Nodes, within the limits of topoctl/core/safe_read.py."""
    import yaml

    # within the limits of topoctl/core/safe_read.py: depth, aliases (expanded size), integer size
    try:
        nodes = limits.compose_yaml_all(text, path)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{path}:{mark.line + 1}" if mark is not None else path
        raise TopoctlError(
            f"{at}: not valid YAML: {str(exc).splitlines()[0]}", hint="fix the YAML"
        ) from None
    loader = yaml.SafeLoader("")
    try:
        return [_convert(node, loader) for node in nodes if node is not None]
    except yaml.YAMLError as exc:
        raise TopoctlError(
            f"{path}: cannot read a YAML value: {str(exc).splitlines()[0]}", hint="fix the YAML"
        ) from None
    finally:
        loader.dispose()


def read_text(path: str) -> str:
    """A launch file's text (UTF-8, a leading BOM dropped), through the one reading layer and its
    size limit."""
    try:
        text = limits.read_file(path, limits.MAX_LAUNCH_FILE_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise TopoctlError(
            f"no such file: {path}", hint="give launch files, manifests, scripts or folders"
        ) from None
    except UnicodeDecodeError as exc:
        raise TopoctlError(
            f"cannot read {path}: not UTF-8 text ({exc.reason} at byte {exc.start})",
            hint="check reads text files: launch.env files, manifests, compose files, Dockerfiles "
            "and shell scripts",
        ) from None
    except OSError as exc:
        raise TopoctlError(
            f"cannot read {path}: {exc}", hint="check the path and its permissions"
        ) from None
    return text.lstrip("\ufeff")


def error_line(message: str, path: str) -> int:
    """The line an error message names for `path` (`PATH:LINE: ...`), else 1."""
    match = re.match(re.escape(path) + r":(\d+):", message)
    return int(match.group(1)) if match else 1


def words(node: Node | None) -> list[tuple[str, int, Node]]:
    """A command/args value as (word, line, node) items; a string is one word (Kubernetes) ."""
    if node is None:
        return []
    if isinstance(node.children, list):
        return [
            (str(item.value), item.line, item) for item in node.children if item.value is not None
        ]
    if node.value is None:
        return []
    return [(str(node.value), node.line, node)]
