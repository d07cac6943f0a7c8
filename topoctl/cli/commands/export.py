"""`topoctl export`: the snapshot in forms other tools read (`nfd`: node-feature-discovery labels).

Layer: commands and CLI (docs/architecture.md, "Layers")."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from topoctl import __version__
from topoctl.cli.commands._options import target_options
from topoctl.core.errors import TopoctlError
from topoctl.core.io import emit
from topoctl.present.nfd_labels import DEFAULT_PATH, feature_file

if TYPE_CHECKING:
    from topoctl.snapshot.shape import Snapshot


def _allreduce_path(snapshot: Snapshot) -> str | None:
    """The allreduce path `topoctl recommend` would choose here without a model (None when nothing
    passes)."""
    from topoctl.autoconf.search import search
    from topoctl.cli.commands._options import flag_set_for, target_version
    from topoctl.rules.engine import load_rules

    version = target_version(snapshot, None)
    try:
        return search(
            snapshot, None, flag_set_for(version), version, ruleset=load_rules()
        ).winner.path
    except TopoctlError:
        return None


@click.group("export")
def command() -> None:
    """Write what topoctl knows of a machine in forms other tools read."""


@command.command("nfd")
@target_options
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    default=None,
    help="Where to write the feature file (atomically); - for stdout. [default: "
    "/etc/kubernetes/node-feature-discovery/features.d/topoctl]",
)
def nfd(
    topology: str | None, system: str | None, fallback_system: str | None, output: str | None
) -> int:
    """Write a node-feature-discovery local feature file: labels a scheduler can place work by.

    \b
    Labels (feature.node.kubernetes.io/topoctl-*): gpu.count, gpu.sm, interconnect,
    p2p.all-pairs, nvlink.clique, nic.rdma (active RDMA NICs), nic.nearest (the
    farthest of the GPUs' nearest-NIC relations, PIX..SYS), gpudirect.ready and
    allreduce.path (the one `topoctl recommend` chooses here). A value the probe
    could not read is `unknown`.

    \b
    Examples:
      topoctl export nfd                        # probe this node, write NFD's features.d/topoctl
      topoctl export nfd --system h100-8x-8nic-ib -o -
    """
    from topoctl.cli.target_machine import resolve_target

    snapshot = resolve_target(topology=topology, system=system, fallback_system=fallback_system)
    emit(feature_file(snapshot, _allreduce_path(snapshot), __version__), output or DEFAULT_PATH)
    return 0
