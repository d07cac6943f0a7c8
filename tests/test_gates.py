"""The gates themselves cannot pass by chance: every property test draws the same examples on every run of
the suite and of CI (tests/conftest.py's hypothesis profiles), and its example count follows the profile."""
from __future__ import annotations

import glob
import importlib
import os
import re

import pytest
from conftest import HYPOTHESIS_PROFILE, TESTS

PROPERTY_MODULES = sorted(os.path.basename(path)[:-3] for path in glob.glob(os.path.join(TESTS, "test_*.py"))
                          if re.search(r"^@given", open(path, encoding="utf-8").read(), re.M))


def _property_tests(module_name: str) -> list[tuple[str, object]]:
    module = importlib.import_module(module_name)
    return [(name, value) for name, value in vars(module).items()
            if callable(value) and hasattr(value, "_hypothesis_internal_use_settings")]


def test_property_modules_are_found():
    assert len(PROPERTY_MODULES) >= 10, PROPERTY_MODULES


@pytest.mark.skipif(HYPOTHESIS_PROFILE == "explore", reason="the explore run draws fresh examples on purpose")
@pytest.mark.parametrize("module_name", PROPERTY_MODULES)
def test_every_property_test_is_derandomized(module_name):
    tests = _property_tests(module_name)
    assert tests, f"{module_name} uses @given but no test of it was found"
    for name, test in tests:
        chosen = test._hypothesis_internal_use_settings  # type: ignore[attr-defined]
        assert chosen.derandomize, f"{module_name}.{name} draws fresh examples on every run"
        assert chosen.database is None, f"{module_name}.{name} replays examples saved by an earlier run"


def test_example_counts_go_through_the_profile():
    """A literal max_examples (or derandomize) in a test would escape the explore run's scale (or the seed)."""
    for path in sorted(glob.glob(os.path.join(TESTS, "test_*.py"))):
        if path == os.path.abspath(__file__):
            continue
        text = open(path, encoding="utf-8").read()
        assert not re.search(r"max_examples=(?!examples\()", text), path
        assert "derandomize=" not in text, path
