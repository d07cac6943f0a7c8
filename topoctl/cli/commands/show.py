"""`topoctl show`: the link and P2P matrix of a machine, for people.

Layer: commands and CLI (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import os
import sys

import click

from topoctl.cli.commands._options import target_options
from topoctl.core.errors import TopoctlError
from topoctl.core.io import emit
from topoctl.snapshot.view import SnapshotView


def _picture(snapshot: SnapshotView, fmt: str, output: str | None) -> int:
    """The Graphviz picture (topoctl/present/picture.py): dot text, or svg/png drawn by Graphviz."""
    from topoctl.present.picture import render_image, to_dot, write_png

    dot = to_dot(snapshot)
    if fmt == "dot":
        emit(dot, output)
    elif fmt == "svg":
        emit(render_image(dot, "svg").decode("utf-8"), output)
    else:
        write_png(str(output), render_image(dot, "png"))
    return 0


@click.command("show")
@target_options
@click.option(
    "--color/--no-color",
    default=None,
    help="Force colour on or off (default: on a terminal, unless NO_COLOR is set).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "dot", "svg", "png"]),
    default="text",
    show_default=True,
    help="text: the matrix; dot: a Graphviz picture (GPUs, NVSwitch, PCIe bridges, root "
    "complexes, NUMA nodes, NICs); svg, png: that picture drawn by Graphviz's dot, when "
    "installed.",
)
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    help="Write to FILE atomically instead of stdout (needed for png).",
)
def command(
    topology: str | None,
    system: str | None,
    fallback_system: str | None,
    color: bool | None,
    fmt: str,
    output: str | None,
) -> int:
    """Print an nvidia-smi-like matrix: link type and P2P verdict per GPU pair, NUMA node and root
    complex per GPU, PCIe link state, and a summary.

    \b
    Examples:
      topoctl show --system rtx-pro-6000-8x-pcie
      topoctl show --topology machine.yaml
      topoctl show                       # probes this machine
      topoctl show --fallback-system rtx-pro-6000-8x-pcie   # ...or shows that system where no GPU is seen
      topoctl show --system h100-8x-8nic-ib --format dot
    """
    from topoctl.cli.target_machine import resolve_target
    from topoctl.probe.render_matrix import render

    if fmt == "png" and (not output or output == "-"):
        raise TopoctlError(
            "--format png writes a binary image: give -o FILE",
            hint="e.g. -o machine.png, or --format svg",
        )
    snapshot = SnapshotView(
        resolve_target(topology=topology, system=system, fallback_system=fallback_system)
    )
    if fmt != "text":
        return _picture(snapshot, fmt, output)
    if output:
        emit(render(snapshot, color=bool(color)), output)
        return 0
    if color is None:  # an explicit --color/--no-color wins over NO_COLOR (https://no-color.org)
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    click.echo(render(snapshot, color=color), nl=False, color=color)
    return 0
