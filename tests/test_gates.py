"""The gates themselves: every property test draws the same examples on every run of the suite and
of CI (tests/conftest.py's hypothesis profiles) and its example count follows the profile; the
commit-msg hook (.pre-commit-config.yaml, scripts/check_commit_msg.py) holds commit subjects to 72
characters; mypy checks against the oldest Python the package supports."""

from __future__ import annotations

import glob
import importlib
import os
import re
import subprocess
import sys

import pytest
import yaml
from conftest import HYPOTHESIS_PROFILE, ROOT, TESTS

TEST_FILES = sorted(
    glob.glob(os.path.join(TESTS, "**", "test_*.py"), recursive=True)
)  # tests/ and its folders
PROPERTY_MODULES = [
    os.path.relpath(path, TESTS)[:-3]
    for path in TEST_FILES  # "rules/test_rules_properties"
    if re.search(r"^@given", open(path, encoding="utf-8").read(), re.M)
]


def _property_tests(module_name: str) -> list[tuple[str, object]]:
    folder, name = os.path.split(os.path.join(TESTS, module_name))
    if folder not in sys.path:  # pytest imports a test file by its basename, from its own folder
        sys.path.insert(0, folder)
    module = importlib.import_module(name)
    return [
        (name, value)
        for name, value in vars(module).items()
        if callable(value) and hasattr(value, "_hypothesis_internal_use_settings")
    ]


def test_property_modules_are_found():
    assert len(PROPERTY_MODULES) >= 10, PROPERTY_MODULES


@pytest.mark.skipif(
    HYPOTHESIS_PROFILE == "explore", reason="the explore run draws fresh examples on purpose"
)
@pytest.mark.parametrize("module_name", PROPERTY_MODULES)
def test_every_property_test_is_derandomized(module_name):
    tests = _property_tests(module_name)
    assert tests, f"{module_name} uses @given but no test of it was found"
    for name, test in tests:
        chosen = test._hypothesis_internal_use_settings  # type: ignore[attr-defined]
        assert chosen.derandomize, f"{module_name}.{name} draws fresh examples on every run"
        assert chosen.database is None, (
            f"{module_name}.{name} replays examples saved by an earlier run"
        )


def test_example_counts_go_through_the_profile():
    """A literal max_examples (or derandomize) in a test would escape the explore run's scale (or
    the seed)."""
    assert len(TEST_FILES) > 100, TEST_FILES
    for path in TEST_FILES:
        if path == os.path.abspath(__file__):
            continue
        text = open(path, encoding="utf-8").read()
        assert not re.search(r"max_examples=(?!examples\()", text), path
        assert "derandomize=" not in text, path


def _commit_msg(tmp_path, text: str) -> "subprocess.CompletedProcess[str]":
    path = tmp_path / "COMMIT_EDITMSG"
    path.write_text(text, encoding="utf-8")
    return subprocess.run(
        [sys.executable, os.path.join(ROOT, "scripts", "check_commit_msg.py"), str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    "text",
    [
        "Say what every snapshot schema array holds\n\nThe why, in a body of any length "
        + "x" * 200
        + "\n",
        "A" * 72 + "\n",
        "\n# Please enter the commit message\nFix the loader\n",
        "Fix the loader\n\n# ------------------------ >8 ------------------------\n"
        + "+"
        + "y" * 100
        + "\n",
    ],
)
def test_commit_msg_hook_accepts_a_short_subject(tmp_path, text):
    result = _commit_msg(tmp_path, text)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("A" * 73 + "\n", "73 characters, more than 72"),
        (
            "check: split the judge; add the oracle; rename the flags table so that it says what "
            "it is\n",
            "more than 72",
        ),
        ("Fix the loader\nbecause it broke\n", "second line is not blank"),
        ("# only a comment\n\n", "empty"),
    ],
)
def test_commit_msg_hook_rejects_what_the_rule_forbids(tmp_path, text, says):
    result = _commit_msg(tmp_path, text)
    assert result.returncode == 1 and says in result.stderr, result.stderr


def test_the_pre_commit_config_runs_the_subject_check_at_commit_msg():
    with open(os.path.join(ROOT, ".pre-commit-config.yaml"), encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    assert "commit-msg" in config["default_install_hook_types"]
    hooks = {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}
    hook = hooks["commit-subject-length"]
    assert (
        hook["stages"] == ["commit-msg"] and hook["entry"] == "python scripts/check_commit_msg.py"
    )


def test_mypy_checks_against_the_oldest_python_the_package_supports():
    """mypy's python_version is python_requires' floor: code that needs a newer Python fails the
    gate, and widening the supported Pythons upwards (classifiers) leaves the floor where it is."""
    import configparser

    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"), encoding="utf-8")
    floor = re.fullmatch(r">=\s*(3\.\d+)", config["options"]["python_requires"].strip())
    assert floor, config["options"]["python_requires"]
    assert config["mypy"]["python_version"].strip() == floor.group(1)


def test_the_slow_step_is_the_integration_folder():
    """.ci/run's `-m slow` step runs exactly tests/integration/: each file there is marked slow,
    none elsewhere."""
    marked = {
        os.path.relpath(path, TESTS)
        for path in TEST_FILES
        if re.search(
            r"^pytestmark = \[?\s*pytest\.mark\.slow\b", open(path, encoding="utf-8").read(), re.M
        )
    }
    folder = {
        os.path.relpath(path, TESTS)
        for path in TEST_FILES
        if os.path.relpath(path, TESTS).startswith("integration")
    }
    assert folder and marked == folder, (sorted(marked), sorted(folder))
