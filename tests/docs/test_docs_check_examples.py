"""The multi-node examples and the script with arrays in docs/recommend-and-check.md ("Multi-node
launches and shell scripts, as they run") are what the commands print now: each `$ topoctl check
...` block is run from the repository root and its output compared line for line (its `$ echo $?`
with the exit code); the script shown is written to a folder as serve.sh and checked with the
command the text names."""

from __future__ import annotations

import os
import re
import shlex

from conftest import ROOT

SECTION = "### Multi-node launches and shell scripts, as they run"


def _section() -> str:
    with open(os.path.join(ROOT, "docs", "recommend-and-check.md"), encoding="utf-8") as handle:
        text = handle.read()
    start = text.index(SECTION)
    return text[start : text.index("\n### ", start + len(SECTION))]


def _blocks(text: str) -> list[tuple[str, str]]:
    return [
        (m.group(1), m.group(2)) for m in re.finditer(r"^```([^\n]*)\n(.*?)^```", text, re.S | re.M)
    ]


def _sessions(block: str) -> list[tuple[list[str], list[str], int | None]]:
    """(argv, output lines, exit code said by `$ echo $?`) for each `$ topoctl ...` of a block."""
    sessions: list[tuple[list[str], list[str], int | None]] = []
    lines = block.splitlines()
    index = 0
    while index < len(lines):
        command = lines[index]
        index += 1
        if not command.startswith("$ topoctl "):
            continue
        output: list[str] = []
        while index < len(lines) and not lines[index].startswith("$ "):
            output.append(lines[index])
            index += 1
        code = None
        if index + 1 < len(lines) and lines[index] == "$ echo $?":
            code = int(lines[index + 1])
            index += 2
        sessions.append((shlex.split(command[2:])[1:], output, code))
    return sessions


def test_the_multi_node_examples_print_what_the_docs_show(cli, monkeypatch):
    monkeypatch.chdir(ROOT)
    sessions = [session for _, block in _blocks(_section()) for session in _sessions(block)]
    assert len(sessions) == 2  # the two-node LeaderWorkerSet, and its 4-GPU pods
    assert any("--nnodes 2" in line for _, output, _ in sessions for line in output)
    for argv, output, code in sessions:
        got, out, err = cli(argv)
        assert out.splitlines() == output, argv
        assert code is None or got == code, (argv, got, err)


def test_the_script_with_arrays_prints_what_the_docs_show(cli, tmp_path, monkeypatch):
    section = _section()
    blocks = _blocks(section)
    script_at = next(index for index, (lang, _) in enumerate(blocks) if lang == "sh")
    script, shown = blocks[script_at][1], blocks[script_at + 1][1]
    assert "ARGS=(" in script and '"${ARGS[@]}"' in script and "EXTRA=()" in script
    command = re.search(r"\(`topoctl (check serve\.sh [^`]+)`\)", section)
    assert command is not None
    (tmp_path / "serve.sh").write_text(script, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(shlex.split(command.group(1)))
    assert code == 0, err
    assert out.splitlines() == shown.splitlines()
