"""SGLang's releases and the FlashInfer version each one pins
(rules/sglang/generated/releases.json).

The list is read from the release wheels (every release on PyPI from 0.5.5 on, post releases
included; the FlashInfer pin is the wheel's `Requires-Dist: flashinfer_python==X`). Rules scope
SGLang behaviour by these releases, and FlashInfer behaviour by the FlashInfer that a release runs
with: the one the snapshot reports when the target is the installed SGLang, else the one the target
release pins.

json only (no SGLang, torch or network): cheap to import and call.

Layer: knowledge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import functools
import json
import os
from typing import Any

from topoctl.core.pep440 import InvalidVersion, Version

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "generated", "releases.json")


@functools.lru_cache(maxsize=1)
def _table() -> tuple[tuple[str, str | None], ...]:
    doc = _doc()
    rows = [(entry["version"], entry.get("flashinfer")) for entry in doc["releases"]]
    return tuple(sorted(rows, key=lambda row: Version(row[0])))


def release_versions() -> list[str]:
    """Every known SGLang release, oldest first."""
    return [version for version, _ in _table()]


def newest_release() -> str:
    return _table()[-1][0]


def flashinfer_pin(sglang_version: str) -> str | None:
    """The FlashInfer version the given SGLang release pins.

    A version between releases (a pre-release, a local build such as `0.5.12+cu129`, or a release
    newer than the list) takes the pin of the newest release at or below it: the FlashInfer it was
    built against is at least that one. None when the version is older than every release or not a
    PEP 440 version.
    """
    try:
        wanted = Version(sglang_version)
    except (InvalidVersion, TypeError):
        return None
    wanted = Version(wanted.base_version) if wanted.is_prerelease or wanted.local else wanted
    pin = None
    for version, flashinfer in _table():
        if Version(version) <= wanted:
            pin = flashinfer
        else:
            break
    return pin


@functools.lru_cache(maxsize=1)
def flashinfer_release_versions() -> list[str]:
    """Every flashinfer-python release from the oldest one an SGLang release pins, oldest first."""
    return sorted(_doc()["flashinfer_releases"], key=Version)


def _doc() -> Any:
    from topoctl.core import safe_read as limits

    return json.loads(limits.read_file(_PATH, limits.MAX_DATA_FILE_BYTES))
