"""The import contracts of .importlinter hold (import-linter, from the lint extra): one folder a
layer, check never imports recommend's search, rules/sglang/ knows nothing of the rule engine,
deployment reading never imports the rule engine. The tree is copied as it is (the links
topoctl/autoconf -> ../autoconf and the others followed), so that a test can add a bad import
without touching the checkout."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT


def _copy_tree(into: str) -> None:
    ignore = shutil.ignore_patterns(
        "__pycache__", "data", "knowledge", "schema", "*.json", "*.yaml"
    )
    shutil.copytree(os.path.join(ROOT, "topoctl"), os.path.join(into, "topoctl"), ignore=ignore)


def _lint(tmp_path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    code = (
        "import sys; from importlinter.cli import lint_imports; "
        "sys.exit(lint_imports(config_filename=sys.argv[1]))"
    )
    return subprocess.run(
        [sys.executable, "-c", code, os.path.join(ROOT, ".importlinter")],
        cwd=str(tmp_path),
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _add(tmp_path, module_path: str, line: str) -> None:
    with open(os.path.join(tmp_path, *module_path.split("/")), "a", encoding="utf-8") as handle:
        handle.write(f"\n{line}  # noqa: E402,F401\n")


def test_the_import_contracts_hold(tmp_path):
    pytest.importorskip(
        "importlinter", reason="import-linter comes with the lint extra (.ci/run installs it)"
    )
    _copy_tree(str(tmp_path))
    result = _lint(tmp_path)
    assert result.returncode == 0 and "0 broken" in result.stdout, result.stdout + result.stderr


def test_a_forbidden_import_breaks_a_contract(tmp_path):
    pytest.importorskip(
        "importlinter", reason="import-linter comes with the lint extra (.ci/run installs it)"
    )
    _copy_tree(str(tmp_path))
    _add(tmp_path, "topoctl/deploy/launchers.py", "from topoctl.autoconf import search")
    result = _lint(tmp_path)
    assert (
        result.returncode != 0
        and "topoctl.deploy.launchers -> topoctl.autoconf.search" in result.stdout
    )


def test_a_new_module_is_held_by_its_folder_without_being_listed(tmp_path):
    # The contract names folders: a module added to a lower layer that reaches up breaks it at once.
    pytest.importorskip(
        "importlinter", reason="import-linter comes with the lint extra (.ci/run installs it)"
    )
    _copy_tree(str(tmp_path))
    _add(tmp_path, "topoctl/core/brand_new.py", "from topoctl.check import judge")
    result = _lint(tmp_path)
    assert (
        result.returncode != 0 and "topoctl.core.brand_new -> topoctl.check.judge" in result.stdout
    )
