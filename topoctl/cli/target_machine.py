"""The snapshot a command works on: --topology FILE, --system NAME, or a live probe of this machine.

The only module above the probe that reaches into it, and only for the live case (imported there),
so loading a snapshot never depends on the probe.

Layer: commands and CLI (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from topoctl.core.errors import TopoctlError
from topoctl.snapshot.catalogue import system_snapshot
from topoctl.snapshot.document import load_snapshot

if TYPE_CHECKING:
    from topoctl.snapshot.shape import Snapshot


def resolve_target(
    topology: str | None = None, system: str | None = None, fallback_system: str | None = None
) -> Snapshot:
    """The snapshot a command works on: --topology FILE, --system NAME, or a live probe of this
    machine.

    With `fallback_system`, a machine where the probe sees no GPU (exit-3 case) uses that built-in
    system instead, and says so on stderr: the README's first command runs anywhere, and never
    silently.
    """
    for option, value, what in (
        ("--topology", topology, "a snapshot file written by `topoctl probe -o FILE`"),
        ("--system", system, "a built-in system: topoctl recommend --list-systems"),
        (
            "--fallback-system",
            fallback_system,
            "a built-in system: topoctl recommend --list-systems",
        ),
    ):
        if value is not None and not value.strip():
            raise TopoctlError(f"{option} is empty", hint=f"give {what}, or leave {option} out")
    # A bad --fallback-system fails even when it would not be used: a CI line with a typo must not
    # pass.
    snapshot_of_fallback = system_snapshot(fallback_system) if fallback_system is not None else None
    if topology is not None and system is not None:
        raise TopoctlError(
            "give either --topology or --system, not both",
            hint="--topology reads a snapshot file; --system names a built-in reference system",
        )
    if topology is not None:
        return load_snapshot(topology)
    if system is not None:
        return system_snapshot(system)
    from topoctl.core.errors import NoGpuError
    from topoctl.probe.collect import (
        probe_live,
    )  # imported here: only the live path touches hardware

    # The probe writes the schema's shape (the built-in systems' snapshot.json are its replays,
    # validated).
    if snapshot_of_fallback is None:
        return cast("Snapshot", probe_live())
    try:
        return cast("Snapshot", probe_live())
    except NoGpuError as error:
        import sys

        from topoctl.core.errors import one_line

        print(
            f"topoctl: {one_line(error.message)}; using the built-in reference system "
            f"{fallback_system!r} instead (--fallback-system)",
            file=sys.stderr,
        )
        return snapshot_of_fallback
