"""`topoctl report -o report.html`: the machine, its measurements, the recommended launch and
check's findings on one self-contained HTML page (topoctl/present/html_report.py builds it; this
command gathers the parts).

Layer: commands and CLI (docs/architecture.md, "Layers")."""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile

import click

from topoctl import __version__
from topoctl.cli.commands._options import target_options
from topoctl.cli.commands.completion import complete_models
from topoctl.core.errors import EXIT_BLOCKED, EXIT_USAGE, TopoctlError
from topoctl.core.io import emit
from topoctl.present import plots
from topoctl.present.html_report import Parts, inline_svg, page
from topoctl.present.picture import render_image, to_dot
from topoctl.snapshot.view import SnapshotView


def _topology(snapshot: SnapshotView, parts: Parts) -> None:

    try:
        parts.topology_svg = inline_svg(render_image(to_dot(snapshot), "svg").decode("utf-8"))
    except TopoctlError as error:
        parts.topology_note = f"no picture: {error.message} ({error.hint})"


def _measurements(snapshot: SnapshotView, parts: Parts) -> None:
    from topoctl.probe.bench.bench_lines import render_measurements

    parts.measurements_text = render_measurements(snapshot)
    if not parts.measurements_text:
        return

    if not plots.have_matplotlib():
        parts.plots_note = f"plots left out: matplotlib is not installed ({plots.EXTRA_HINT})"
        return
    for kind, caption in (
        ("p2p", "P2P bandwidth, one way"),
        ("allreduce", "allreduce latency against message size"),
    ):
        try:
            parts.plots.append(
                (caption, inline_svg(plots.draw(kind, snapshot, "svg").decode("utf-8")))
            )
        except TopoctlError as error:
            parts.plots_note = (
                (parts.plots_note + "; ") if parts.plots_note else ""
            ) + f"{kind}: {error.message}"


def _launch(snapshot: SnapshotView, model_name: str | None, parts: Parts) -> None:
    from topoctl.autoconf import models
    from topoctl.autoconf.launch_text import explain, render
    from topoctl.autoconf.search import search
    from topoctl.cli.commands._options import flag_set_for, target_version
    from topoctl.rules.engine import load_rules

    try:
        model = models.profile(model_name) if model_name else None
        version = target_version(snapshot, None)
        result = search(snapshot, model, flag_set_for(version), version, ruleset=load_rules())
    except TopoctlError as error:
        parts.launch_note = f"no launch recommended: {error.message}" + (
            f" ({error.hint})" if error.hint else ""
        )
        return
    parts.launch_text = render(result, "env")
    parts.launch_explain = explain(result)
    if not model_name:
        parts.launch_note = (
            "no --model given: the launch is judged without a model's sizes (give --model NAME)"
        )


def _check(snapshot: SnapshotView, launch: str, model_name: str | None, parts: Parts) -> None:
    """check's JSON report on `launch` against this snapshot, run through the CLI itself (one
    pipeline). A launch check cannot read (exit 2: missing, unreadable, not a launch) ends the
    report with check's own message and exit code, before any page is written: a page that only says
    "could not judge" would pass a CI step. A launch it judged passes check's notes and warnings on
    to stderr."""
    from topoctl.cli.app import main as cli_main

    with tempfile.TemporaryDirectory(prefix="topoctl-report-") as folder:
        target = os.path.join(folder, "target.json")
        output = os.path.join(folder, "check.json")
        with open(target, "w", encoding="utf-8") as handle:
            json.dump(snapshot.data, handle)
        argv = ["check", launch, "--topology", target, "--format", "json", "-o", output]
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr):
            code = cli_main(argv + (["--model", model_name] if model_name else []))
        if code not in (0, EXIT_BLOCKED) or not os.path.isfile(output):
            raise _check_failure(launch, code, stderr.getvalue())
        # a judged launch: check's notes and warnings (the SGLang version it read, a launch made for
        # another system) go to the user as `topoctl check` prints them; only a failed check's
        # message is rewritten
        click.echo(stderr.getvalue(), err=True, nl=False)
        with open(output, encoding="utf-8") as handle:
            parts.check = json.load(handle)
    parts.check_origin = launch


def _check_failure(launch: str, code: int, stderr: str) -> TopoctlError:
    """check's first error line and its hint, as report's own error (check's exit code, 2 where it
    had none)."""
    lines = [line.strip() for line in stderr.strip().splitlines()]
    errors = [
        line.removeprefix("topoctl: error: ")
        for line in lines
        if line.startswith("topoctl: error: ")
    ]
    hints = [line.removeprefix("hint: ") for line in lines if line.startswith("hint: ")]
    message = errors[0] if errors else f"topoctl check could not judge {launch} (exit {code})"
    return TopoctlError(
        f"--launch: {message}",
        hint=hints[0] if hints else f"run `topoctl check {launch}` to see why",
        exit_code=code if code not in (0, EXIT_BLOCKED) else EXIT_USAGE,
    )


@click.command("report")
@target_options
@click.option(
    "--model",
    "model_name",
    metavar="NAME",
    shell_complete=complete_models,
    help="The model to recommend a launch for (a built-in profile; default: none, the launch "
    "without sizes).",
)
@click.option(
    "--launch",
    metavar="FILE",
    help="A launch file (launch.env, a compose file, a manifest...) to check and "
    "show the findings of.",
)
@click.option(
    "-o", "--output", metavar="FILE", required=True, help="The HTML page to write (atomically)."
)
def command(
    topology: str | None,
    system: str | None,
    fallback_system: str | None,
    model_name: str | None,
    launch: str | None,
    output: str,
) -> int:
    """Write one self-contained HTML page about the machine: topology picture, GPU matrix
    with P2P and NICs, measurements (plots with the `plot` extra), the recommended launch
    with its reasons and band, and check's findings on --launch FILE. The page loads
    nothing from anywhere: keep it as a CI artifact.

    \b
    Examples:
      topoctl report -o report.html                      # this machine
      topoctl report --system h200-1x-vm --model llama-3.1-8b -o report.html
      topoctl report --topology machine.yaml --launch launch.env -o report.html

    \b
    Exit codes: 0 written (check's findings are in the page, not the exit code); 2 bad usage or
    input, a --launch FILE that is missing or that check cannot read included (no page written).
    """
    from topoctl.cli.target_machine import resolve_target

    if (
        launch and launch != "-" and not os.path.exists(launch)
    ):  # before the work, as check itself would say it
        raise TopoctlError(
            f"--launch: no such file or folder: {launch}",
            hint="give a launch.env, a Kubernetes manifest, a compose file, a shell script or a "
            "folder",
        )
    # one view of the target for every part of the page (the check of --launch runs as a command of
    # its own)
    snapshot = SnapshotView(
        resolve_target(topology=topology, system=system, fallback_system=fallback_system)
    )
    parts = Parts(
        title=f"topoctl report: {snapshot.system_name or snapshot.hostname or 'machine'}",
        topology_svg=None,
        topology_note=None,
        measurements_text=[],
    )
    _topology(snapshot, parts)
    _measurements(snapshot, parts)
    _launch(snapshot, model_name, parts)
    if launch:
        _check(snapshot, launch, model_name, parts)
    emit(page(snapshot, parts, __version__), output)
    return 0
