"""`topoctl probe`: what is this machine, exactly?

Layer: commands and CLI (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from typing import Any

import click

from topoctl.cli.commands.completion import complete_captures
from topoctl.core.io import check_destination, emit, write_atomic
from topoctl.core.serialize import dump, to_json
from topoctl.snapshot.view import SnapshotView


@click.command("probe")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["yaml", "json"]),
    default="yaml",
    show_default=True,
    help="Output format of the snapshot.",
)
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    help="Write the snapshot to FILE (atomically) instead of stdout; %N in FILE is this node's "
    "name (SLURMD_NODENAME, else the short hostname), for `srun topoctl probe -o "
    "nodes/%N.yaml`.",
)
@click.option(
    "--record",
    metavar="PATH",
    help="Also save every raw answer (NVML calls, sysfs reads) to PATH, for replay with "
    "--from-capture.",
)
@click.option(
    "--from-capture",
    "from_capture",
    metavar="PATH",
    shell_complete=complete_captures,
    help="Replay a capture (a file, a folder holding capture.json, or the name of a built-in one: "
    "a --list-systems name or no-gpu) instead of asking the hardware.",
)
@click.option(
    "--with-torch",
    is_flag=True,
    help="Also import torch to cross-check P2P (torch.cuda.can_device_access_peer), CUDA runtime "
    "and NCCL.",
)
@click.option(
    "--description", default="", metavar="TEXT", help="A note stored in the --record capture."
)
@click.option(
    "--timings",
    is_flag=True,
    help="Print how long each probe phase took to stderr (slow VMs, slow drivers).",
)
@click.option(
    "--timeout",
    "timeout",
    type=click.FloatRange(min=0.1, max=3600),
    default=120.0,
    show_default=True,
    metavar="S",
    help="Give up after S seconds (a hung GPU or driver): calls not made are unknown "
    "(Timeout); a call that never returns ends the probe with exit 3, naming it.",
)
def command(
    fmt: str,
    output: str | None,
    record: str | None,
    from_capture: str | None,
    with_torch: bool,
    description: str,
    timings: bool,
    timeout: float,
) -> int:
    """Probe GPUs, every ordered pair's P2P status and link, NVLink/NVSwitch, the PCIe tree, NUMA
    placement, host and software versions, and print a Snapshot that `show`, `recommend` and `check`
    read.

    \b
    Examples:
      topoctl probe                         # YAML to stdout
      topoctl probe --format json -o machine.json
      topoctl probe --record capture.json   # keep the raw answers (to reproduce or file a bug)
      topoctl probe --from-capture capture.json

    Fields that a driver or VM cannot answer are null, with the reason under `unknown`.
    Exit code 3 when no GPU is visible (no driver, no NVML, no device).
    """
    from topoctl.core.errors import TopoctlError
    from topoctl.probe.capture import Session, load_capture
    from topoctl.probe.collect import probe_capture, probe_live

    if from_capture and record:
        raise TopoctlError(
            "--record and --from-capture cannot be combined",
            hint="--record saves a live probe; --from-capture replays a saved one",
        )
    # Where the results go is checked before probing: a typo in a folder name must not cost a probe,
    # nor hide its outcome (exit 3 on a machine without a GPU).
    record, output = _node_named(record), _node_named(output)
    for option, path in (("--record", record), ("-o", output)):
        if path == "":
            raise TopoctlError(
                f"{option} is empty", hint=f"give a file name, or leave {option} out"
            )
        if path and path != "-":
            check_destination(path)
    if from_capture:
        capture = load_capture(from_capture)
        snapshot = probe_capture(capture, name=from_capture)
    else:
        session = Session(record=bool(record))
        if timings:
            session.call_times = {}
        phases: list[tuple[str, float]] = []
        try:
            snapshot = probe_live(
                with_torch=with_torch, session=session, timings=phases, timeout=timeout
            )
        except Exception:
            if (
                record
            ):  # the raw answers of a failed probe are what a bug report needs: keep them if we can
                try:
                    write_atomic(record, to_json(session.capture_document(description)))
                except TopoctlError as failed:
                    from topoctl.core.errors import one_line

                    click.echo(
                        f"topoctl: warning: the record was not saved: {one_line(failed.message)}",
                        err=True,
                    )
            raise
        finally:
            if timings:
                for phase, seconds in phases:
                    click.echo(
                        f"topoctl: probe timing: {seconds * 1000:8.1f} ms  {phase}", err=True
                    )
                slowest = sorted((session.call_times or {}).items(), key=lambda item: -item[1][1])[
                    :8
                ]
                for kind, (count, seconds) in slowest:
                    click.echo(
                        f"topoctl: probe calls:  {seconds * 1000:8.1f} ms  {int(count):4d} x "
                        f"{kind} "
                        "(summed over threads)",
                        err=True,
                    )
        if record:
            write_atomic(record, to_json(session.capture_document(description)))
    _notes(snapshot)
    emit(dump(snapshot, fmt), output)
    return 0


def _node_named(path: str | None) -> str | None:
    """`%N` in a file name is this node's name (Slurm's SLURMD_NODENAME, else the short hostname),
    `%%` a `%`: the filename pattern of Slurm, which srun expands in its own --output but not in a
    program's arguments, so `srun --ntasks-per-node=1 topoctl probe -o nodes/%N.yaml` writes one
    file per node."""
    if not path or "%" not in path:
        return path
    import os
    import socket

    name = os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
    return path.replace("%%", "\0").replace("%N", name).replace("\0", "%")


def _notes(snapshot: dict[str, Any]) -> None:
    """What people must know about what was (not) seen: CUDA_VISIBLE_DEVICES, calls cut by
    --timeout."""
    from topoctl.core.errors import one_line

    view = SnapshotView(snapshot)
    visible = view.cuda_visible_devices
    if visible is not None:
        from topoctl.probe.visible import describe

        click.echo(f"topoctl: note: {one_line(describe(visible, view.gpu_count or 0))}", err=True)
    timed_out = sum(1 for reason in (snapshot.get("unknown") or {}).values() if reason == "Timeout")
    if timed_out:
        click.echo(
            f"topoctl: warning: the probe reached --timeout: {timed_out} fields were not read "
            "(unknown, "
            "reason Timeout)",
            err=True,
        )
