"""Shared test helpers: the fixtures folder, the `cli` fixture, tests/ on sys.path (for the fakes
package), the `--update-golden` option that rewrites tests/golden/ (see tests/golden_cases.py), and
the hypothesis profiles (below) that make every property test draw the same examples on every run.
"""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Callable, Sequence

import pytest
from hypothesis import settings

from topoctl.snapshot.catalogue import list_systems

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
FIXTURES = os.path.join(ROOT, "fixtures")
LAUNCH_CORPUS = os.path.join(
    TESTS, "data", "launch_corpus"
)  # launch files in public forms, with expected.yaml
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)
# The knowledge cache (topoctl/core/knowledge_cache.py) goes to a folder of this test run, never the
# user's ~/.cache.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="topoctl-test-cache-")

CliResult = tuple[int, str, str]


def target(name: str) -> list[str]:
    """--system NAME of a built-in reference system (fixtures/NAME)."""
    assert name in list_systems(), name
    return ["--system", name]


# Hypothesis profiles. A gate must not pass or fail by chance, so the suite and CI draw a fixed
# sequence of examples (derandomize: the examples follow from each test's code) with no example
# database: a run is the same on every machine. The randomized hunt for new failures is a separate,
# longer run for local use (CONTRIBUTING.md): HYPOTHESIS_PROFILE=explore draws fresh examples,
# EXPLORE_SCALE times as many as the suite, and keeps failures in .hypothesis/ so the next run
# replays them. Per-test counts go through examples(n) so that the explore run scales them too.
EXPLORE_SCALE = 10
settings.register_profile("suite", derandomize=True, database=None, deadline=None)
settings.register_profile("ci", settings.get_profile("suite"), print_blob=True)
settings.register_profile(
    "explore", derandomize=False, deadline=None, max_examples=100 * EXPLORE_SCALE
)
HYPOTHESIS_PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or (
    "ci" if os.environ.get("CI") == "true" else "suite"
)
settings.load_profile(HYPOTHESIS_PROFILE)


def examples(count: int) -> int:
    """A property test's example count: `count` in the suite and CI, EXPLORE_SCALE times it when
    exploring."""
    return count * EXPLORE_SCALE if HYPOTHESIS_PROFILE == "explore" else count


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/golden/ from the current outputs instead of comparing with them",
    )


def fixture_dirs() -> list[str]:
    """Every fixture folder holding a capture.json (real and synthetic), sorted by name."""
    return sorted(
        name
        for name in os.listdir(FIXTURES)
        if os.path.isfile(os.path.join(FIXTURES, name, "capture.json"))
    )


@pytest.fixture
def large_snapshot() -> Callable[[int], dict]:
    """benchmarks/large_snapshots.py's synthetic N-GPU snapshot (copies of an 8-GPU reference
    system)."""
    if os.path.join(ROOT, "benchmarks") not in sys.path:
        sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from large_snapshots import synthetic_snapshot

    return synthetic_snapshot


@pytest.fixture
def fixtures_root() -> str:
    return FIXTURES


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Callable[[Sequence[str]], CliResult]:
    """Run `topoctl ARGV` in-process through topoctl.cli.app.main: returns (exit code, stdout,
    stderr)."""
    from topoctl.cli.app import main

    def run(argv: Sequence[str]) -> CliResult:
        capsys.readouterr()  # drop what came before, so the result is this command's alone
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run


# ------------------------------------------------------------------------------------------ a new
# user's install


class CleanClone:
    """A clone of this repository as it is published (branch main only, no tags: `git clone
    --single-branch --no-tags`), its newest commit, and the git URL that the docs' `<org>/topoctl`
    stands for."""

    def __init__(self, path: str, commit: str) -> None:
        self.path, self.commit = path, commit
        self.url = (
            "file://localhost" + path
        )  # a host part: older pip rejects "topoctl @ git+file:///..."

    def fill(self, text: str) -> str:
        """A documented recipe with its placeholders filled in: the repository URL and `<commit>`."""
        return text.replace("https://github.com/<org>/topoctl", self.url).replace(
            "<commit>", self.commit
        )


def _git_head(root: str) -> str | None:
    import subprocess

    try:
        done = subprocess.run(
            ["git", "-C", root, "rev-parse", "--show-toplevel", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.split()
    if (
        done.returncode != 0
        or len(lines) != 2
        or os.path.realpath(lines[0]) != os.path.realpath(ROOT)
    ):
        return None  # not a git checkout of its own (an unpacked sdist, say)
    return lines[1]


@pytest.fixture(scope="session")
def clean_clone(tmp_path_factory: pytest.TempPathFactory) -> CleanClone:
    """The committed state of this checkout (HEAD; uncommitted edits are not in it), cloned as
    published."""
    import shutil
    import subprocess

    if shutil.which("git") is None or _git_head(ROOT) is None:
        pytest.skip(
            "needs git and a git checkout of topoctl (this is not one, e.g. an unpacked sdist)"
        )
    path = str(tmp_path_factory.mktemp("clone") / "topoctl")
    subprocess.run(
        ["git", "clone", "-q", "--single-branch", "--no-tags", ROOT, path], check=True, timeout=120
    )
    commit = subprocess.run(
        ["git", "-C", path, "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert not subprocess.run(
        ["git", "-C", path, "tag"], capture_output=True, text=True
    ).stdout.strip()
    return CleanClone(path, commit)


def needs_package_index() -> None:
    """Installing from a clone fetches topoctl's dependencies from the package index."""
    if os.environ.get("TOPOCTL_OFFLINE") == "1":
        pytest.skip("TOPOCTL_OFFLINE=1: installing from a fresh clone needs the package index")


class FreshVenv:
    """A new virtual environment, its bin folder first on PATH for the commands a recipe runs."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.bin = os.path.join(path, "bin")

    def env(self, **extra: str) -> dict[str, str]:
        path = self.bin + os.pathsep + os.environ.get("PATH", "/usr/bin:/bin")
        return dict(
            os.environ, PATH=path, VIRTUAL_ENV=self.path, PIP_DISABLE_PIP_VERSION_CHECK="1", **extra
        )

    def run(self, command: str, cwd: str, timeout: float = 600, **extra: str):
        import subprocess

        return subprocess.run(
            ["bash", "-c", command],
            cwd=cwd,
            env=self.env(**extra),
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def _base_python() -> str:
    """The interpreter the running venv was made from (a venv of a venv would point at this one)."""
    return getattr(sys, "_base_executable", None) or sys.executable


@pytest.fixture(scope="session")
def installed_from_clone(
    tmp_path_factory: pytest.TempPathFactory, clean_clone: CleanClone
) -> FreshVenv:
    """One fresh venv per test session, with topoctl installed by the docs' own install line
    (examples/ci/github-actions.yml, filled in with the clean clone and its commit)."""
    import shutil
    import subprocess

    import yaml

    needs_package_index()
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    venv = FreshVenv(str(tmp_path_factory.mktemp("venv") / "venv"))
    subprocess.run([_base_python(), "-m", "venv", venv.path], check=True, timeout=300)
    workflow = yaml.safe_load(
        open(os.path.join(ROOT, "examples", "ci", "github-actions.yml"), encoding="utf-8")
    )
    install = next(
        step["run"]
        for step in workflow["jobs"]["check"]["steps"]
        if "pip install" in step.get("run", "")
    )
    env = {name: clean_clone.fill(str(value)) for name, value in workflow["env"].items()}
    done = venv.run(clean_clone.fill(install) + " -q", clean_clone.path, **env)
    assert done.returncode == 0, f"{install}\n{done.stdout}\n{done.stderr}"
    assert os.path.isfile(os.path.join(venv.bin, "topoctl")), "the install made no topoctl command"
    return venv
