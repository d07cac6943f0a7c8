"""The README's promises that can drift: its two set-up commands, the CI entry point, the systems it lists."""
from __future__ import annotations

import os
import re

from topoctl.snapshot import list_systems

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _read(*parts: str) -> str:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as handle:
        return handle.read()


def _quick_start_commands() -> list[str]:
    readme = _read("README.md")
    section = readme.split("## Quick start", 1)[1]
    block = section.split("```sh", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.strip().splitlines() if line.strip()]


def test_readme_starts_with_two_commands_install_and_main_job_then_tests():
    first, second = _quick_start_commands()
    assert "pip install" in first and "topoctl recommend" in first and "--fallback-system" in first
    assert "pip install" in second and "[test]" in second and "pytest" in second


def test_ci_runs_the_readme_test_command_verbatim():
    ci = _read(".ci", "run")
    assert _quick_start_commands()[1] in ci.splitlines()


def test_ci_fails_when_a_step_fails():
    ci = _read(".ci", "run")
    assert "set -euo pipefail" in ci


def test_every_reference_system_in_the_readme_exists_and_every_shipped_one_is_listed():
    readme = _read("README.md")
    table = readme.split("## Reference systems", 1)[1].split("##", 1)[0]
    named = set(re.findall(r"^\| `([a-z0-9.-]+)`", table, flags=re.M))
    assert set(list_systems()) <= named
    assert named - {"no-gpu"} <= set(list_systems())


def test_readme_has_no_unfilled_placeholders():
    readme = _read("README.md")
    assert not re.search(r"\b(REAL_[A-Z_]+|SYNTH_SHOW|RECOMMEND_RTX|CHECK_EXAMPLE|MEASUREMENTS|TODO)\b", readme)
