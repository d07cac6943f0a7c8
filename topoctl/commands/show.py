"""`topoctl show`: the link and P2P matrix of a machine, for people.

Layer: commands and CLI (docs/architecture.md, "Layers").
"""
from __future__ import annotations

import os
import sys

import click

from topoctl.commands._options import target_options


@click.command("show")
@target_options
@click.option("--color/--no-color", default=None, help="Force colour on or off (default: on a terminal, unless NO_COLOR is set).")
def command(topology: str | None, system: str | None, fallback_system: str | None, color: bool | None) -> int:
    """Print an nvidia-smi-like matrix: link type and P2P verdict per GPU pair, NUMA node and root complex
    per GPU, PCIe link state, and a summary.

    \b
    Examples:
      topoctl show --system rtx-pro-6000-8x-pcie
      topoctl show --topology machine.yaml
      topoctl show                       # probes this machine
      topoctl show --fallback-system rtx-pro-6000-8x-pcie   # ...or shows that system where no GPU is seen
    """
    from topoctl.probe.render_matrix import render
    from topoctl.target import resolve_target

    snapshot = resolve_target(topology=topology, system=system, fallback_system=fallback_system)
    if color is None:  # an explicit --color/--no-color wins over NO_COLOR (https://no-color.org)
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    click.echo(render(snapshot, color=color), nl=False, color=color)
    return 0
