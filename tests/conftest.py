"""Shared test helpers: the fixtures folder, the `cli` fixture, tests/ on sys.path (for the fakes package),
the `--update-golden` option that rewrites tests/golden/ (see tests/golden_cases.py), and the hypothesis
profiles (below) that make every property test draw the same examples on every run."""
from __future__ import annotations

import os
import sys
import tempfile
from typing import Callable, Sequence

import pytest
from hypothesis import settings

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
FIXTURES = os.path.join(ROOT, "fixtures")
LAUNCH_CORPUS = os.path.join(TESTS, "data", "launch_corpus")  # launch files in public forms, with expected.yaml
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)
# The knowledge cache (topoctl/cache.py) goes to a folder of this test run, never the user's ~/.cache.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="topoctl-test-cache-")

CliResult = tuple[int, str, str]

# Hypothesis profiles. A gate must not pass or fail by chance, so the suite and CI draw a fixed sequence of
# examples (derandomize: the examples follow from each test's code) with no example database: a run is the
# same on every machine. The randomized hunt for new failures is a separate, longer run for local use
# (CONTRIBUTING.md): HYPOTHESIS_PROFILE=explore draws fresh examples, EXPLORE_SCALE times as many as the
# suite, and keeps failures in .hypothesis/ so the next run replays them. Per-test counts go through
# examples(n) so that the explore run scales them too.
EXPLORE_SCALE = 10
settings.register_profile("suite", derandomize=True, database=None, deadline=None)
settings.register_profile("ci", settings.get_profile("suite"), print_blob=True)
settings.register_profile("explore", derandomize=False, deadline=None, max_examples=100 * EXPLORE_SCALE)
HYPOTHESIS_PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") == "true" else "suite")
settings.load_profile(HYPOTHESIS_PROFILE)


def examples(count: int) -> int:
    """A property test's example count: `count` in the suite and CI, EXPLORE_SCALE times it when exploring."""
    return count * EXPLORE_SCALE if HYPOTHESIS_PROFILE == "explore" else count



def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/golden/ from the current outputs instead of comparing with them")


def fixture_dirs() -> list[str]:
    """Every fixture folder holding a capture.json (real and synthetic), sorted by name."""
    return sorted(name for name in os.listdir(FIXTURES) if os.path.isfile(os.path.join(FIXTURES, name, "capture.json")))


@pytest.fixture
def large_snapshot() -> Callable[[int], dict]:
    """benchmarks/large_snapshots.py's synthetic N-GPU snapshot (copies of an 8-GPU reference system)."""
    if os.path.join(ROOT, "benchmarks") not in sys.path:
        sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from large_snapshots import synthetic_snapshot

    return synthetic_snapshot


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
