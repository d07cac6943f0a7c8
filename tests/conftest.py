"""Shared test helpers: the fixtures folder, the `cli` fixture, tests/ on sys.path (for the fakes package),
and the `--update-golden` option that rewrites tests/golden/ (see tests/golden_cases.py)."""
from __future__ import annotations

import os
import sys
import tempfile
from typing import Callable, Sequence

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
FIXTURES = os.path.join(ROOT, "fixtures")
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)
# The knowledge cache (topoctl/cache.py) goes to a folder of this test run, never the user's ~/.cache.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="topoctl-test-cache-")

CliResult = tuple[int, str, str]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/ from the current outputs instead of comparing with them")


def fixture_dirs() -> list[str]:
    """Every fixture folder holding a capture.json (real and synthetic), sorted by name."""
    return sorted(name for name in os.listdir(FIXTURES) if os.path.isfile(os.path.join(FIXTURES, name, "capture.json")))


@pytest.fixture
def fixtures_root() -> str:
    return FIXTURES


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[[Sequence[str]], CliResult]:
    """Run `topoctl ARGV` in-process through topoctl.cli.main: returns (exit code, stdout, stderr)."""
    from topoctl.cli import main

    def run(argv: Sequence[str]) -> CliResult:
        capsys.readouterr()  # drop what came before, so the result is this command's alone
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run
