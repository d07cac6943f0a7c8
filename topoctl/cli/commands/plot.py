"""`topoctl plot p2p|allreduce`: a snapshot's measurements as a picture (topoctl/present/plots.py,
matplotlib).

Layer: commands and CLI (docs/architecture.md, "Layers")."""

from __future__ import annotations

import os

import click

from topoctl.cli.commands._options import target_options
from topoctl.core.errors import TopoctlError
from topoctl.present.picture import write_png
from topoctl.present.plots import draw


@click.command("plot")
@click.argument("kind", type=click.Choice(["p2p", "allreduce"]))
@target_options
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    required=True,
    help="The picture to write (atomically); its suffix, .svg or .png, picks the format.",
)
def command(
    kind: str, topology: str | None, system: str | None, fallback_system: str | None, output: str
) -> int:
    """Draw a snapshot's measurements (`topoctl bench`): the P2P bandwidth heatmap (p2p) or
    allreduce latency against message size, one line per path, eager and CUDA graph (allreduce).

    Needs matplotlib: pip install '.[plot]' in a clone of topoctl.

    \b
    Examples:
      topoctl bench -o measured.yaml && topoctl plot p2p --topology measured.yaml -o p2p.svg
      topoctl plot allreduce --system h200-1x-vm -o allreduce.png
    """
    from topoctl.cli.target_machine import resolve_target

    fmt = os.path.splitext(output)[1].lower().lstrip(".")
    if fmt not in ("svg", "png"):
        raise TopoctlError(
            f"-o {output}: the picture's name must end in .svg or .png", hint="e.g. -o p2p.svg"
        )
    snapshot = resolve_target(topology=topology, system=system, fallback_system=fallback_system)
    write_png(output, draw(kind, snapshot, fmt))
    return 0
