"""The import contracts of .importlinter hold (import-linter, from the lint extra): check never imports
recommend's search, topoctl/sglang/ imports neither autoconf nor the rules, check's readers only read files.
The packages are laid out as installed (topoctl.autoconf from autoconf/, ...) in a temporary folder, because
import-linter walks one package's folder."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

LAYOUT = {"topoctl": "topoctl", "topoctl/autoconf": "autoconf", "topoctl/rules": "rules", "topoctl/probe": "probe"}


def _installed_layout(into: str) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "data", "knowledge", "schema", "*.json", "*.yaml")
    for target, source in LAYOUT.items():
        shutil.copytree(os.path.join(ROOT, source), os.path.join(into, target), ignore=ignore, dirs_exist_ok=True)
    os.makedirs(os.path.join(into, "topoctl", "systems"), exist_ok=True)
    open(os.path.join(into, "topoctl", "systems", "__init__.py"), "w").close()


def _lint(tmp_path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(config_filename=sys.argv[1]))"
    return subprocess.run([sys.executable, "-c", code, os.path.join(ROOT, ".importlinter")], cwd=str(tmp_path),
                          env=env, capture_output=True, text=True, timeout=300)


def test_the_import_contracts_hold(tmp_path):
    pytest.importorskip("importlinter", reason="import-linter comes with the lint extra (.ci/run installs it)")
    _installed_layout(str(tmp_path))
    result = _lint(tmp_path)
    assert result.returncode == 0 and "0 broken" in result.stdout, result.stdout + result.stderr


def test_a_forbidden_import_breaks_a_contract(tmp_path):
    pytest.importorskip("importlinter", reason="import-linter comes with the lint extra (.ci/run installs it)")
    _installed_layout(str(tmp_path))
    with open(os.path.join(tmp_path, "topoctl", "sglang", "launchers.py"), "a", encoding="utf-8") as handle:
        handle.write("\nfrom topoctl.autoconf import search  # noqa: E402,F401\n")
    result = _lint(tmp_path)
    assert result.returncode != 0 and "topoctl.sglang.launchers -> topoctl.autoconf.search" in result.stdout
