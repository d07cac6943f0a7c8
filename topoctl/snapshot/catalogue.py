"""The built-in reference systems: snapshots shipped in the package (topoctl.systems, the fixtures/
folder).

Each system is a folder with its capture, its snapshot.json (the probe's replay of the capture) and
a README saying where its facts come from. `--system NAME` reads them here.

Layer: snapshot (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, cast

from topoctl.core.errors import TopoctlError
from topoctl.snapshot.document import validate_shipped_snapshot

if TYPE_CHECKING:
    from topoctl.snapshot.shape import Snapshot

SYSTEMS_PACKAGE = "topoctl.systems"


def list_systems() -> list[str]:
    """Names of the built-in reference systems (folders of topoctl.systems with a snapshot.json)."""
    root = _systems_dir()
    try:
        entries = os.listdir(root)
    except OSError:
        return []
    return sorted(
        name for name in entries if os.path.isfile(os.path.join(root, name, "snapshot.json"))
    )


def builtin_capture(name: str) -> str | None:
    """The path of built-in capture `name` (a reference system's, or one shipped as a capture alone,
    such as `no-gpu`), or None."""
    entry = os.path.join(_systems_dir(), name, "capture.json")
    return entry if os.path.isfile(entry) else None


def list_captures() -> list[str]:
    """Names of every built-in capture: the reference systems and the captures shipped alone
    (`no-gpu`)."""
    root = _systems_dir()
    try:
        entries = os.listdir(root)
    except OSError:
        return []
    return sorted(
        name for name in entries if os.path.isfile(os.path.join(root, name, "capture.json"))
    )


def _systems_dir() -> str:
    from topoctl.core.knowledge_cache import (
        package_dir,
    )  # a plain folder lookup: no importlib.resources on the start-up path

    return package_dir(SYSTEMS_PACKAGE)


def system_snapshot(name: str) -> Snapshot:
    """The snapshot of built-in system `name`, or a TopoctlError listing the names there are."""
    entry = os.path.join(_systems_dir(), name, "snapshot.json")
    if "/" in name or os.sep in name or name.startswith(".") or not os.path.isfile(entry):
        known = ", ".join(list_systems()) or "(none installed)"
        raise TopoctlError(f"unknown system {name!r}", hint=f"built-in systems: {known}")
    from topoctl.core import safe_read as limits

    data = json.loads(limits.read_file(entry, limits.MAX_SNAPSHOT_BYTES))
    validate_shipped_snapshot(data, origin=f"system {name}")
    return cast("Snapshot", data)  # validated above
