"""Every product module imports alone, first, in a fresh interpreter (issue 35, item 5).

Inside one pytest process a module that only imports after another one, or an import circle that
happens to be entered from its safe end, stays hidden: the other modules are already in sys.modules.
Here each module is the first thing a new `python -W error -c "import <module>"` imports (pip-tools'
circular-import test does the same for its package), from a neutral folder so the checkout's own
folders cannot stand in for the installed package.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from architecture_imports import product_modules

MODULES = sorted(product_modules())


def _import_alone(
    module: str, cwd: Path, extra_path: str | None = None
) -> subprocess.CompletedProcess[str]:
    env = None if extra_path is None else dict(os.environ, PYTHONPATH=extra_path)
    return subprocess.run(
        [sys.executable, "-W", "error", "-c", f"import {module}"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_walk_finds_the_modules_of_every_linked_folder():
    """The list is the whole installed tree, links included, so a module cannot be left out by
    accident."""
    tops = {name.split(".")[1] for name in MODULES if "." in name}
    assert {
        "autoconf",
        "rules",
        "probe",
        "systems",
        "cli",
        "check",
        "deploy",
        "core",
        "snapshot",
    } <= tops
    assert len(MODULES) > 100


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_alone_in_a_fresh_interpreter(module, tmp_path):
    proc = _import_alone(module, tmp_path)
    assert proc.returncode == 0, f"`import {module}` alone fails:\n{proc.stderr}"
    assert proc.stdout == "" and proc.stderr == "", (
        f"`import {module}` alone prints:\n{proc.stdout}{proc.stderr}"
    )


def test_an_import_circle_fails_the_check(tmp_path):
    """The check above can fail: a two-module circle entered from either end is an ImportError
    alone."""
    package = tmp_path / "circle"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "first.py").write_text("from circle.second import SECOND\nFIRST = 1\n")
    (package / "second.py").write_text("from circle.first import FIRST\nSECOND = 2\n")
    for module in ("circle.first", "circle.second"):
        proc = _import_alone(module, tmp_path, extra_path=str(tmp_path))
        assert proc.returncode != 0 and "circular import" in proc.stderr, proc.stderr
