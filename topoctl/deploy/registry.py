"""The kinds of launch file check reads, how each is recognised and which module reads it, and the
walk from the paths given to the files read. Nothing is run or sourced; every launch keeps its file
and line.

A kind is one line of FILE_KINDS (a file, or a folder holding a marker file) or of DOCUMENT_KINDS (a
document of a YAML file). A file is the first kind, in order, that its name (fnmatch patterns on the
base name), its marker or its first line (`sniff`) names; a kind with none of them reads what no
other kind took and may decline (None). Readers are imported only when a file of their kind is read:
`check launch.env` imports no YAML, Helm or Dockerfile reader (tests/cli/test_startup_imports.py). A
folder walk takes only the names of `folder_names` (else `names`); a file named on the command line
is tried against every kind.

Layer: deployment reading (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Callable

from topoctl.core.errors import TopoctlError
from topoctl.deploy.found import Found, error_line, read_text

Read = Callable[[str, str, str], tuple[str, list[Found]] | None]


@dataclass(frozen=True)
class FileKind:
    """A kind of launch file: how it is recognised and which reader reads it."""

    name: str
    # "module:function" (path, text, base dir) -> (kind, founds); "": the file is one launch, read
    # later
    reader: str = ""
    names: tuple[str, ...] = ()  # fnmatch patterns on the file's base name
    folder_names: tuple[str, ...] | None = None  # what a folder walk takes (None: names)
    sniff: str = ""  # a regular expression the first line matches (re.match)
    marker: str = ""  # a folder holding this file is one of this kind (read as one)
    stdin: bool = False  # `-` is a file of this kind


@dataclass(frozen=True)
class DocumentKind:
    """A kind of YAML document: its module has is_document(doc) and read_document(path, doc,
    base_dir); with `links`, also link(path, documents, founds), run once the file's documents are
    read."""

    name: str
    module: str
    # "a Kubernetes manifest", in "neither ... nor ..." when a YAML file is none of the kinds
    called: str
    none_found: str = "no container"  # what a file of only this kind lacks when it has no launch
    links: bool = False


FILE_KINDS: tuple[FileKind, ...] = (
    FileKind("launch.env", names=("*.env",), folder_names=("*launch*.env",), stdin=True),
    FileKind("helm", "topoctl.deploy.helm:read", marker="Chart.yaml"),
    FileKind("yaml", "topoctl.deploy.yaml_file:read", names=("*.yaml", "*.yml")),
    FileKind(
        "dockerfile",
        "topoctl.deploy.dockerfile:read",
        names=("Dockerfile", "Dockerfile.*", "*.Dockerfile", "*.dockerfile"),
    ),
    FileKind(
        "script",
        "topoctl.deploy.scripts:read",
        names=("*.sh", "*.bash"),
        sniff=r"#!.*\b(ba|da|z)?sh\b",
    ),
    FileKind(
        "launch.env", "topoctl.deploy.launch_env:read_by_text"
    ),  # by its text: only a file named on the command line
)

DOCUMENT_KINDS: tuple[DocumentKind, ...] = (
    DocumentKind(
        "kubernetes",
        "topoctl.deploy.kubernetes",
        "a Kubernetes manifest",
        "no Pod, Deployment, StatefulSet, Job, LeaderWorkerSet, DynamoGraphDeployment, OME or "
        "KServe runtime with a container",
        links=True,
    ),
    DocumentKind("compose", "topoctl.deploy.compose", "a compose file", "no service"),
    DocumentKind("skypilot", "topoctl.deploy.skypilot", "a SkyPilot task"),
)

_UNKNOWN = "not a launch.env, manifest, compose file, Dockerfile or shell script"
_SKIP_DIRS = {
    ".git",
    ".venv",
    "venv",
    "node_modules",
    "__pycache__",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
}


def reader(name: str) -> Any:
    """The function or module a registry line names ("module" or "module:function"), imported now."""
    module, _, function = name.partition(":")
    loaded = importlib.import_module(module)
    return getattr(loaded, function) if function else loaded


def _by_name(kind: FileKind, path: str) -> bool:
    if kind.marker:
        return os.path.isdir(path) and os.path.isfile(os.path.join(path, kind.marker))
    name = os.path.basename(path)
    return (kind.stdin and path == "-") or any(fnmatchcase(name, pattern) for pattern in kind.names)


def _by_text(kind: FileKind, text: str) -> bool:
    if kind.sniff:
        return re.match(kind.sniff, text.split("\n", 1)[0]) is not None
    return not kind.names  # a kind with neither names nor a sniff reads what no other kind took


def read_file(path: str, found_in_folder: bool = False) -> tuple[str, list[Found]]:
    """(kind, what the file holds) for one file or Helm chart folder; kind is launch.env,
    kubernetes, compose, script, dockerfile, skypilot, helm (or several YAML kinds joined by +),
    yaml or unknown.

    A file that cannot be read is bad input: named on the command line it is exit 2 at once
    (TopoctlError); one found by walking a folder is reported as unreadable with its reason and line
    (kind "unreadable"), the other files are still checked, and the check ends with exit 2."""
    if found_in_folder:
        try:
            return read_file(path)
        except TopoctlError as error:
            return "unreadable", [
                Found(
                    path,
                    error_line(error.message, path),
                    kind="unreadable",
                    none_reason=f"not read: {error.message}",
                )
            ]
    base_dir = os.path.dirname(path) or "."
    text: str | None = None
    for kind in FILE_KINDS:
        named = _by_name(kind, path)
        if not kind.reader and named:  # a launch.env: the check's parse stage reads it whole
            return kind.name, [Found(path, 1, kind=kind.name)]
        if kind.marker:
            if named:
                return reader(kind.reader)(path, "", base_dir)  # type: ignore[no-any-return]
            continue
        if not kind.reader:
            continue
        text = read_text(path) if text is None else text
        if named or _by_text(kind, text):
            read: Read = reader(kind.reader)
            result = read(path, text, base_dir)
            if result is not None:
                return result
    return "unknown", [
        Found(path, 1, kind="unknown", none_reason=f"{path}: no launch ({_UNKNOWN})")
    ]


def in_folder(name: str) -> bool:
    """Whether a folder walk reads the file of this base name."""
    return any(
        fnmatchcase(name, pattern)
        for kind in FILE_KINDS
        for pattern in (kind.names if kind.folder_names is None else kind.folder_names)
    )


def _is_folder_kind(path: str) -> bool:
    return any(kind.marker and _by_name(kind, path) for kind in FILE_KINDS)


def expand_paths(paths: list[str]) -> list[tuple[str, bool]]:
    """(file, found in a folder) for the files as given and the launch-like files under each folder
    (sorted, hidden and tool folders skipped; a Helm chart folder is one entry)."""
    out: list[tuple[str, bool]] = []
    for path in paths:
        if os.path.isdir(path) and _is_folder_kind(path):
            out.append((path, False))
        elif os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                if _is_folder_kind(
                    root
                    # a Helm chart is read as one: rendered, its templates are not files of their
                    # own
                ):
                    out.append((root, True))
                    dirs[:] = []
                    continue
                dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
                out.extend(
                    (os.path.join(root, name), True) for name in sorted(files) if in_folder(name)
                )
        elif path == "-" or os.path.exists(path):
            out.append((path, False))
        else:
            raise TopoctlError(
                f"no such file or folder: {path}",
                hint="give launch.env files, Kubernetes manifests, compose files, shell scripts "
                "or folders",
            )
    return out
