"""`python -m build` makes a wheel and an sdist; both carry the Apache-2.0 LICENSE the metadata
names; the sdist carries every file of the repository, so that the README's test command runs in the
unpacked sdist as in a clone: the sdist holds every file git tracks (so every input of the suite).
That last test runs a stated subset of the sdist's suite (SDIST_SUBSET) to keep its cost modest; the
whole of it runs the same way by hand (unpack, `pip install -e '.[test]'`, `python -m pytest -q`),
and docs/pythons.md records such a run."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

from tests.conftest import ROOT, FreshVenv, _base_python, _git_head, needs_package_index

# The Apache License 2.0 as the Apache Software Foundation publishes it (LICENSE-2.0.txt), taken
# unchanged from a wheel that ships it (torch 2.13.0's third_party/onnx/LICENSE); its SHA-256 is
# that file's.
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
# Run inside the unpacked sdist: the README and docs checks, the CI recipes, the goldens, the rules'
# own cases.
SDIST_SUBSET = [
    "tests/docs/test_readme.py",
    "tests/integration/test_ci.py",
    "tests/test_golden.py",
    "tests/rules/test_rules_cases.py",
    "tests/snapshot/test_fixtures.py",
]
INNER = (
    "TOPOCTL_TESTING_AN_SDIST"  # set for the sdist's own run, so it does not build an sdist again
)

pytestmark = [
    pytest.mark.slow,  # minutes: its own step of .ci/run (setup.cfg, "markers")
    pytest.mark.skipif(os.environ.get(INNER) == "1", reason="already the sdist's own test run"),
]


def _version() -> str:
    text = open(os.path.join(ROOT, "topoctl", "__init__.py"), encoding="utf-8").read()
    return re.search(r'__version__ = "([^"]+)"', text).group(1)


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, str]:
    """The wheel and the sdist `python -m build` writes (build isolation: setuptools from the
    package index)."""
    needs_package_index()
    pytest.importorskip("build", reason="the build package (pip install -e '.[test]' installs it)")
    out = str(tmp_path_factory.mktemp("dist"))
    done = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", out, ROOT],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    version = _version()
    found = {
        "wheel": os.path.join(out, f"topoctl-{version}-py3-none-any.whl"),
        "sdist": os.path.join(out, f"topoctl-{version}.tar.gz"),
    }
    assert sorted(os.listdir(out)) == sorted(os.path.basename(path) for path in found.values())
    return found


def test_license_is_the_apache_2_text_the_metadata_names():
    with open(os.path.join(ROOT, "LICENSE"), "rb") as handle:
        assert hashlib.sha256(handle.read()).hexdigest() == APACHE_2_SHA256
    setup = open(os.path.join(ROOT, "setup.cfg"), encoding="utf-8").read()
    assert re.search(r"^license = Apache-2.0$", setup, re.M) and re.search(
        r"^license_files = LICENSE$", setup, re.M
    )


def test_the_wheel_carries_the_license_the_data_and_the_metadata(dist):
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        names = set(wheel.namelist())
        info = f"topoctl-{_version()}.dist-info"
        with open(os.path.join(ROOT, "LICENSE"), "rb") as handle:
            assert wheel.read(f"{info}/licenses/LICENSE") == handle.read()
        metadata = wheel.read(f"{info}/METADATA").decode()
    assert "Requires-Python: >=3.11" in metadata
    for version in (
        "3.11",
        "3.12",
        "3.13",
    ):  # the Pythons docs/pythons.md records whole-suite passes on
        assert f"Classifier: Programming Language :: Python :: {version}" in metadata
    assert re.search(r"^License(-Expression)?: Apache-2.0$", metadata, re.M), metadata[:2000]
    for needed in (
        "topoctl/systems/h200-4x-nvswitch-vm/snapshot.json",
        "topoctl/rules/schema/rule.schema.json",
    ):
        assert needed in names, needed
    assert not any(name.startswith("tests/") for name in names), (
        "the wheel carries the package alone"
    )


def test_the_sdist_carries_every_file_of_the_repository(dist):
    with tarfile.open(dist["sdist"]) as sdist:
        prefix = f"topoctl-{_version()}/"
        names = {name[len(prefix) :] for name in sdist.getnames() if name.startswith(prefix)}
    for needed in (
        "LICENSE",
        "tests/conftest.py",
        "tests/fakes/__init__.py",
        "tests/golden",
        "fixtures/no-gpu/capture.json",
        ".ci/run",
        ".pre-commit-hooks.yaml",
        "examples/ci/pre-commit-config.yaml",
    ):
        assert needed in names, needed
    if _git_head(ROOT) is not None:
        tracked = subprocess.run(
            ["git", "-C", ROOT, "ls-files"], capture_output=True, text=True, check=True
        ).stdout
        missing = {name for name in tracked.split("\n") if name and name != ".gitignore"} - names
        assert not missing, sorted(missing)[:20]


def test_the_unpacked_sdist_runs_its_own_tests(dist, tmp_path):
    """The README's test command, in the unpacked sdist (SDIST_SUBSET of its suite)."""
    if shutil.which("bash") is None:
        pytest.skip("needs bash")
    with tarfile.open(dist["sdist"]) as sdist:
        sdist.extractall(tmp_path, filter="data")
    unpacked = str(tmp_path / f"topoctl-{_version()}")
    venv = FreshVenv(os.path.join(unpacked, ".venv"))
    subprocess.run([_base_python(), "-m", "venv", venv.path], check=True, timeout=300)
    done = venv.run("pip install -q -e '.[test]'", unpacked)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    done = venv.run(
        f"python -m pytest -q -p no:cacheprovider {' '.join(SDIST_SUBSET)}",
        unpacked,
        **{INNER: "1"},
    )
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
    summary = done.stdout.strip().splitlines()[-1]
    assert (
        re.search(r"\d+ passed", summary) and "failed" not in summary and "error" not in summary
    ), summary


def test_every_python_package_of_the_source_is_in_the_metadata():
    """An installed topoctl (not editable) imports only the packages setup.cfg lists: a new folder
    with an __init__.py that is not listed works in a clone and fails after `pip install`
    (ModuleNotFoundError)."""
    import configparser

    import setuptools

    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"), encoding="utf-8")
    assert config["options"]["packages"].strip() == "find:"
    listed = set(setuptools.find_packages(ROOT, include=["topoctl", "topoctl.*"]))
    found = set()
    for folder, _, names in os.walk(os.path.join(ROOT, "topoctl"), followlinks=True):
        if "__init__.py" in names and "__pycache__" not in folder:
            relative = os.path.relpath(folder, ROOT)
            found.add(relative.replace(os.sep, "."))
    assert "topoctl.autoconf" in found and "topoctl.probe.bench" in found, sorted(found)
    assert found - listed == set(), sorted(found - listed)
