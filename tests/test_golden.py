"""Behaviour guard: every reference system's probe replay, recommend, show and check, byte for byte.

The expected outputs live in tests/golden/; the cases in tests/golden_cases.py. After an intended
change:

    .venv/bin/python -m pytest -q tests/test_golden.py --update-golden

and review `git diff tests/golden/` before committing it.
"""

from __future__ import annotations

import os

import pytest
from golden_cases import GOLDEN, ROOT, Case, cases, render

from topoctl.core.io import write_atomic

CASES = cases()


def _run(cli, case: Case, folder: str) -> str:
    if case.env_from:
        code, out, err = cli(list(case.env_from))
        assert code == 0, err
        with open(os.path.join(folder, "launch.env"), "w", encoding="utf-8") as handle:
            handle.write(out)
    code, out, err = cli(list(case.argv))
    return render(case.argv, code, out, err)


def test_every_system_has_cases():
    from topoctl.snapshot.catalogue import list_systems

    systems = {case.system for case in CASES}
    assert set(list_systems()) <= systems
    assert "no-gpu" in systems  # the exit-3 replay is guarded too
    assert "_rules" in systems  # and what `rules explain` says of every built-in rule


@pytest.mark.parametrize("case", CASES, ids=[f"{c.system}/{c.name}" for c in CASES])
def test_output_matches_golden(case, cli, tmp_path, monkeypatch, request):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(
        "COLUMNS", "120"
    )  # `rules list` fits the terminal: the golden files are 120 wide
    for name in (
        "fixtures",
    ):  # relative paths in the command lines, as written in the golden files
        os.symlink(os.path.join(ROOT, name), tmp_path / name)
    got = _run(cli, case, str(tmp_path))
    if request.config.getoption("--update-golden"):
        os.makedirs(os.path.dirname(case.path), exist_ok=True)
        write_atomic(case.path, got)
        return
    assert os.path.isfile(case.path), (
        f"no golden file {case.path}: run pytest tests/test_golden.py --update-golden"
    )
    with open(case.path, encoding="utf-8", newline="") as handle:
        expected = handle.read()
    assert got == expected, (
        f"{case.system}/{case.name} changed; if intended, regenerate with --update-golden"
    )


def test_no_golden_file_without_a_case(request):
    """A golden file whose case is gone (a system renamed, a case dropped) is stale; --update-golden
    removes it."""
    wanted = {os.path.normpath(case.path) for case in CASES}
    stale = []
    for folder, _dirs, files in os.walk(GOLDEN):
        for name in files:
            path = os.path.normpath(os.path.join(folder, name))
            if path not in wanted:
                stale.append(path)
    if request.config.getoption("--update-golden"):
        for path in stale:
            os.unlink(path)
        return
    assert not stale, (
        f"golden files without a case: {stale}; run pytest tests/test_golden.py --update-golden"
    )
