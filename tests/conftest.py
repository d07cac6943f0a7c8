"""Shared test helpers: the fixtures folder, and tests/ on sys.path so tests can import the fakes package."""
from __future__ import annotations

import os
import sys
import tempfile

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)
FIXTURES = os.path.join(ROOT, "fixtures")
if TESTS not in sys.path:
    sys.path.insert(0, TESTS)
# The knowledge cache (topoctl/cache.py) goes to a folder of this test run, never the user's ~/.cache.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="topoctl-test-cache-")


def fixture_dirs() -> list[str]:
    """Every fixture folder holding a capture.json (real and synthetic), sorted by name."""
    return sorted(name for name in os.listdir(FIXTURES) if os.path.isfile(os.path.join(FIXTURES, name, "capture.json")))


@pytest.fixture
def fixtures_root() -> str:
    return FIXTURES
