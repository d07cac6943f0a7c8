"""Reading the README and docs/ as a new user does: their fenced blocks (indented ones inside list
items too), the `$ command` sessions in them, and what "prints what the doc shows" means for a
session."""

from __future__ import annotations

import os
import re
import textwrap
from dataclasses import dataclass

FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.S | re.M
)


@dataclass(frozen=True)
class Block:
    """One fenced block: the doc it is in (relative to the checkout), its line, language and text
    (dedented)."""

    doc: str
    line: int
    lang: str
    text: str

    @property
    def first(self) -> str:
        return next((line.strip() for line in self.text.splitlines() if line.strip()), "")

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


def doc_names(root: str) -> list[str]:
    """README.md and every docs/*.md of the checkout at `root`."""
    docs = sorted(
        os.path.join("docs", name)
        for name in os.listdir(os.path.join(root, "docs"))
        if name.endswith(".md")
    )
    return ["README.md", *docs]


def fenced_blocks(root: str) -> list[Block]:
    found = []
    for name in doc_names(root):
        text = open(os.path.join(root, name), encoding="utf-8").read()
        for match in FENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(
                Block(name, line, match.group("lang").strip(), textwrap.dedent(match.group("body")))
            )
    return found


@dataclass(frozen=True)
class Session:
    """A `$ command` of a block (continuation lines joined) and the text the doc shows after it."""

    block: Block
    command: str
    shown: str


def sessions(block: Block) -> list[Session]:
    """The `$ ...` commands of a block that opens with one; a `$ echo $?` and its number stay with
    the command before it (as what it exited with)."""
    found: list[Session] = []
    parts = re.split(r"(?m)^(?=\$ (?!echo \$\?$))", block.text)
    for part in filter(None, parts):
        lines = part.rstrip("\n").split("\n")
        command, i = lines[0][2:], 1
        while command.endswith("\\"):
            command, i = command[:-1] + " " + lines[i].strip(), i + 1
        found.append(Session(block, command, "\n".join(lines[i:]).rstrip("\n") + "\n"))
    return found


def matches(shown: str, code: int, out: str, err: str) -> bool:
    """The doc's `exit N` line means stdout, stderr and the exit code as shown; a closing `$ echo
    $?` and its number, the exit code; a line that opens with `...` means the lines above it start
    the output (the rest is elided, the exit code too unless shown); otherwise stdout exactly, and
    exit 0."""
    if re.search(r"^exit \d+$", shown, re.M):
        return out + err + f"exit {code}\n" == shown
    expected_code = None
    status = re.search(r"^\$ echo \$\?\n(\d+)\n\Z", shown, re.M)
    if status:
        expected_code, shown = int(status.group(1)), shown[: status.start()]
    lines = shown.splitlines(keepends=True)
    cut = next((i for i, line in enumerate(lines) if line.lstrip().startswith("...")), None)
    if cut is not None:
        return code == (code if expected_code is None else expected_code) and out.startswith(
            "".join(lines[:cut])
        )
    return code == (0 if expected_code is None else expected_code) and out == shown


def lines_in_order(shown: str, printed: str) -> str | None:
    """None when every line of `shown` is a line of `printed`, in order (`...` in a shown line
    stands for any text: the doc cut it short; a closing `(...)`, for the rest of the line); else
    the first shown line that is not there."""
    remaining = printed.splitlines()
    for line in shown.splitlines():
        if not line.strip():
            continue
        line = re.sub(r"\(\.\.\.\)$", "...", line)
        pattern = re.compile(".*".join(re.escape(part) for part in line.split("...")) + r"\Z")
        while remaining and not pattern.match(remaining[0]):
            remaining.pop(0)
        if not remaining:
            return line
        remaining.pop(0)
    return None
