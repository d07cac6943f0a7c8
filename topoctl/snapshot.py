"""Loading the Snapshot that everything downstream of the probe reads.

A snapshot comes from one of three places: a file written by `topoctl probe` (--topology FILE), a
built-in reference system shipped in the package (--system NAME), or a live probe of this machine.
Downstream code (rules, autoconf, show) only ever sees the plain dict returned here.
"""
from __future__ import annotations

import json
import os
from typing import Any

from topoctl.errors import TopoctlError

SCHEMA_VERSION = 1
SYSTEMS_PACKAGE = "topoctl.systems"


def list_systems() -> list[str]:
    """Names of the built-in reference systems (folders of topoctl.systems with a snapshot.json)."""
    root = _systems_dir()
    try:
        entries = os.listdir(root)
    except OSError:
        return []
    return sorted(name for name in entries if os.path.isfile(os.path.join(root, name, "snapshot.json")))


def _systems_dir() -> str:
    from topoctl.cache import package_dir  # a plain folder lookup: no importlib.resources on the start-up path

    return package_dir(SYSTEMS_PACKAGE)


def system_snapshot(name: str) -> dict[str, Any]:
    """The snapshot of built-in system `name`, or a TopoctlError listing the names there are."""
    entry = os.path.join(_systems_dir(), name, "snapshot.json")
    if "/" in name or os.sep in name or name.startswith(".") or not os.path.isfile(entry):
        known = ", ".join(list_systems()) or "(none installed)"
        raise TopoctlError(f"unknown system {name!r}", hint=f"built-in systems: {known}")
    with open(entry, "rb") as handle:
        data = json.loads(handle.read())
    validate_snapshot(data, origin=f"system {name}")
    return data


def parse_snapshot_text(text: str, origin: str) -> dict[str, Any]:
    """Parse JSON or YAML snapshot text (YAML via safe_load only)."""
    stripped = text.lstrip()
    try:
        if stripped.startswith("{"):
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except ValueError as exc:
        raise TopoctlError(f"{origin}: not valid JSON: {exc}", hint="pass a file written by `topoctl probe`") from None
    except Exception as exc:  # yaml.YAMLError and friends
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TopoctlError(f"{origin}: not valid YAML: {first}",
                           hint="pass a file written by `topoctl probe`") from None
    validate_snapshot(data, origin=origin)
    return data


def load_snapshot(path: str) -> dict[str, Any]:
    """Read a snapshot file written by `topoctl probe` (JSON or YAML)."""
    if path == "-":
        import sys

        return parse_snapshot_text(sys.stdin.read(), origin="<stdin>")
    if os.path.isdir(path):
        raise TopoctlError(f"{path} is a folder, not a snapshot file",
                           hint="pass the file written by `topoctl probe -o FILE`")
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except FileNotFoundError:
        raise TopoctlError(f"no such file: {path}", hint="write one with `topoctl probe -o FILE`") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TopoctlError(f"cannot read {path}: {exc}", hint="check the path and its permissions") from None
    return parse_snapshot_text(text, origin=path)


def validate_snapshot(data: Any, origin: str) -> None:
    """Check the shape downstream code relies on; raise a one-line TopoctlError otherwise."""
    hint = "regenerate it with `topoctl probe -o FILE`"
    if not isinstance(data, dict):
        raise TopoctlError(f"{origin}: a snapshot must be a mapping, got {type(data).__name__}", hint=hint)
    version = data.get("schema_version")
    if version is None:
        raise TopoctlError(f"{origin}: missing schema_version (is this a topoctl snapshot?)", hint=hint)
    if version != SCHEMA_VERSION:
        raise TopoctlError(f"{origin}: schema_version {version!r} is not supported (this topoctl reads {SCHEMA_VERSION})",
                           hint="use the topoctl version that wrote it, or probe again")
    for key, kind in (("gpus", list), ("pairs", list), ("software", dict), ("summary", dict)):
        if not isinstance(data.get(key), kind):
            raise TopoctlError(f"{origin}: field {key!r} must be a {kind.__name__}", hint=hint)
    for position, gpu in enumerate(data["gpus"]):
        if not isinstance(gpu, dict) or not isinstance(gpu.get("index"), int):
            raise TopoctlError(f"{origin}: gpus[{position}] has no integer index", hint=hint)
    for position, pair in enumerate(data["pairs"]):
        if not isinstance(pair, dict) or not isinstance(pair.get("p2p"), dict):
            raise TopoctlError(f"{origin}: pairs[{position}] has no p2p mapping", hint=hint)


def resolve_target(topology: str | None = None, system: str | None = None,
                   fallback_system: str | None = None) -> dict[str, Any]:
    """The snapshot a command works on: --topology FILE, --system NAME, or a live probe of this machine.

    With `fallback_system`, a machine where the probe sees no GPU (exit-3 case) uses that built-in system
    instead, and says so on stderr: the README's first command runs anywhere, and never silently.
    """
    if topology and system:
        raise TopoctlError("give either --topology or --system, not both",
                           hint="--topology reads a snapshot file; --system names a built-in reference system")
    if topology:
        return load_snapshot(topology)
    if system:
        return system_snapshot(system)
    from topoctl.errors import NoGpuError
    from topoctl.probe.collect import probe_live  # imported here: only the live path touches hardware

    if fallback_system is None:
        return probe_live()
    snapshot_of_fallback = system_snapshot(fallback_system)  # a bad name fails before probing
    try:
        return probe_live()
    except NoGpuError as error:
        import sys

        print(f"topoctl: {error.message}; using the built-in reference system {fallback_system!r} instead "
              f"(--fallback-system)", file=sys.stderr)
        return snapshot_of_fallback
