"""launch.env files read by their text: a file named on the command line whose name says nothing
(`recommend > launch.out`, `recommended.txt`, `.env.prod`) is a launch.env when it is neither YAML,
a Dockerfile nor a shell script and holds topoctl recommend's header, or NAME=VALUE lines as a
launch.env has them that assign SGLANG_ARGS. A folder walk never reaches this test: it takes `*.env`
files by name only (topoctl/deploy/ registry.py), and those are handed on whole, to
topoctl.deploy.sglang_launch.parse_env_file.

Layer: deployment reading (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import re

from topoctl import LAUNCH_ENV_TITLE
from topoctl.core.errors import TopoctlError
from topoctl.deploy.found import Found, error_line
from topoctl.deploy.sglang_launch import ARGS_KEY, parse_env_text

# The first line of every launch.env topoctl recommend writes (autoconf/launch_text.py render_env),
# up to its version.
_RECOMMEND_HEADER = f"# {LAUNCH_ENV_TITLE} "
_ARGS_ASSIGNMENT = re.compile(r"^[ \t]*(?:export[ \t]+)?SGLANG_ARGS=", re.MULTILINE)
_ENV_FORM_NEEDS = (
    "check reads a file not named *.env as a launch.env when it starts with topoctl recommend's "
    "header or its NAME='value' lines assign SGLANG_ARGS"
)


def read_by_text(path: str, text: str, base_dir: str) -> tuple[str, list[Found]] | None:
    """(kind, [what the file is]) for a launch.env named otherwise, or None when the text is not of
    the kind."""
    found = _env_form(path, text)
    return None if found is None else (found.kind, [found])


def _env_form(path: str, text: str) -> Found | None:
    """A launch.env named otherwise (launch.out, recommended.txt, .env.prod), by its text:
    recommend's header, or NAME=VALUE lines that parse_env_text reads to the end and that assign
    SGLANG_ARGS. NAME=VALUE lines without SGLANG_ARGS, and an SGLANG_ARGS assignment among lines a
    launch.env cannot hold, are no launch, said with what check looks for; None for any other text
    (the caller says it is no launch of a kind check reads)."""
    if text.startswith(
        _RECOMMEND_HEADER
    ):  # recommend's own output: read as launch.env even when edited badly
        return Found(path, 1, kind="launch.env")
    try:
        assignments = parse_env_text(text, path)
    except TopoctlError as error:
        if _ARGS_ASSIGNMENT.search(text) is None:
            return None
        line = error_line(error.message, path)
        why = error.message.split(": ", 1)[-1]
        return Found(
            path,
            line,
            kind="unknown",
            none_reason=f"{path}: no launch (it assigns {ARGS_KEY}, but line "
            f"{line} is not launch.env syntax: {why}. "
            f"{_ENV_FORM_NEEDS}; a #! line naming a shell makes "
            "it a shell script)",
        )
    if not assignments:
        return None
    if any(name == ARGS_KEY for _, name, _ in assignments):
        return Found(path, 1, kind="launch.env")
    return Found(
        path,
        1,
        kind="unknown",
        none_reason=f"{path}: no launch (NAME=VALUE lines without {ARGS_KEY}; {_ENV_FORM_NEEDS})",
    )
