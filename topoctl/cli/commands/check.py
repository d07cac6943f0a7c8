"""`topoctl check`: is this launch safe on that machine? Exit 0 clean, 1 blocking (or a warning with
--fail-on warn), 2 bad input.

Takes files and folders (launch.env files, Kubernetes manifests, Docker Compose files, shell
scripts; each launch found in them is judged with its file and line) or a full launch command after
`--`, and judges each against a live probe, a snapshot (--topology) or a built-in system (--system),
with the same rules and flag data as `topoctl recommend`.

Layer: commands and CLI (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click

from topoctl.cli.commands._options import LaunchCommand, rules_options, target_options
from topoctl.cli.commands.completion import complete_models
from topoctl.core.errors import EXIT_BLOCKED, TopoctlError, one_line
from topoctl.snapshot.view import SnapshotView


@click.command("check", cls=LaunchCommand)
@click.argument("files", nargs=-1, metavar="[PATH]... [-- COMMAND...]")
@target_options
@click.option(
    "--expect",
    metavar="SNAPSHOT",
    help="The snapshot the launch was made for: report drift of the target from it.",
)
@click.option(
    "--sglang-version",
    metavar="X.Y.Z",
    help="SGLang version to read flags with (default: the image tag's, the newest known for a "
    "moving tag such as :latest, else the one the Dynamo release pins, else the target's "
    "installed one, else the launch.env's, else the newest known; an assumed version is said "
    "on stderr).",
)
@click.option(
    "--dynamo-version",
    metavar="X.Y.Z",
    help="ai-dynamo release that runs `python -m dynamo.sglang` launches "
    "(default: the image tag's, else the newest known).",
)
@click.option(
    "--model",
    "model_name",
    metavar="NAME",
    shell_complete=complete_models,
    help="Built-in model profile the launch serves (optional).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "junit", "github", "sarif"]),
    default="text",
    show_default=True,
    help="text: for people; json: one result per launch with its findings; junit: JUnit XML, one "
    "test case per finding; github: ::error/::warning annotations (file and line) for "
    "GitHub Actions; sarif: SARIF 2.1.0 for code scanning (GitHub, GitLab).",
)
@click.option(
    "--fail-on",
    type=click.Choice(["block", "warn"]),
    default="block",
    show_default=True,
    help="Exit 1 on blocking findings only, or on warnings too.",
)
@rules_options
@click.option(
    "-o", "--output", metavar="FILE", help="Write the report to FILE atomically instead of stdout."
)
@click.pass_context
def command(ctx: click.Context, **given: Any) -> int:
    """Check the launches in files and folders, or a launch command after `--`, against the target
    machine.

    \b
    Examples:
      topoctl check launch.env --topology machine.yaml
      topoctl check deploy/ --system h200-4x-nvswitch-vm --format github
      topoctl check deploy/*/launch.env --system h200-4x-nvswitch-vm --format junit -o check.xml
      topoctl check deploy/ --system h200-4x-nvswitch-vm --format sarif -o topoctl.sarif
      topoctl check --system rtx-pro-6000-8x-pcie -- python -m sglang.launch_server --model-path M --tp 8
      topoctl check --system h200-4x-nvswitch-vm -- sglang serve Qwen/Qwen3-8B --tp-size 4

    \b
    PATH: launch.env files, Kubernetes manifests (Pod, Deployment, StatefulSet,
    Job, LeaderWorkerSet, DynamoGraphDeployment, OME and KServe runtimes...),
    Docker Compose files, shell scripts, Dockerfiles, SkyPilot tasks, Helm
    charts, or folders of them (in folders: *.yaml, *.yml, *.sh, Dockerfile*,
    *launch*.env; a folder with Chart.yaml is a chart). A file named here
    under another name (recommend > launch.out) is a launch.env when it
    starts with recommend's header or its NAME='value' lines assign
    SGLANG_ARGS. Every launch found is reported with its file and line; a
    file with none is said so; a file that cannot be read is reported with
    the others, then exit 2.

    \b
    Launchers: python -m sglang.launch_server, sglang serve [MODEL],
    python -m dynamo.sglang, or the SGLang flags alone; wrapped in NAME=VALUE
    words, env, exec, nohup, numactl, taskset, timeout, stdbuf, srun, mpirun,
    uv run, bash -c '...', docker run / podman run. SGLang's --config FILE.yaml
    is read and merged the way the SGLang version does. A launch over several
    nodes (--nnodes, srun -N, LeaderWorkerSet size) is judged per node.

    \b
    Exit codes:
      0  clean (warnings alone too, unless --fail-on warn)
      1  a blocking finding (or a warning with --fail-on warn)
      2  bad usage or unreadable input (one line on stderr, with a hint)
      3  no target given (--topology, --system) and the probe sees no GPU here
         (--fallback-system NAME uses a built-in system instead)
    """
    return run(CheckOptions(**given), ctx.meta.get("topoctl_launch_command"))


@dataclass(frozen=True)
class CheckOptions:
    """Everything `topoctl check` was given, one field per option (click's parameter names); the
    launch command after `--` comes beside it."""

    files: tuple[str, ...] = ()
    topology: str | None = None
    system: str | None = None
    fallback_system: str | None = None
    expect: str | None = None
    sglang_version: str | None = None
    dynamo_version: str | None = None
    model_name: str | None = None
    fmt: str = "text"
    fail_on: str = "block"
    rules_dirs: tuple[str, ...] = ()
    disabled: tuple[str, ...] = ()
    output: str | None = None


def run(options: CheckOptions, command_tokens: list[str] | None = None) -> int:
    """check's pipeline (topoctl/check/pipeline.py) over the files and the command after `--`, then
    the report."""
    from topoctl.autoconf.target import target_gpu_count
    from topoctl.check import pipeline
    from topoctl.check.formats import FORMATTERS
    from topoctl.check.outcome import failing
    from topoctl.check.resolve import VersionChooser
    from topoctl.cli.commands._options import (
        flag_set_for,
        load_rules_for,
        requested_version,
        require_value,
        target_version,
    )
    from topoctl.cli.target_machine import resolve_target
    from topoctl.core.io import emit
    from topoctl.snapshot.document import load_snapshot

    files, model_name, fmt, fail_on = (
        options.files,
        options.model_name,
        options.fmt,
        options.fail_on,
    )
    if not files and not command_tokens:
        raise TopoctlError(
            "nothing to check", hint="give files or folders, or a launch command after `--`"
        )
    require_value(
        "--model",
        model_name,
        "name a built-in profile (kimi-k2.5, deepseek-v3, ...) or leave it out",
    )
    require_value(
        "--dynamo-version",
        options.dynamo_version,
        "give an ai-dynamo release such as 1.6.1, or leave it out",
    )
    requested = requested_version(
        options.sglang_version
    )  # a bad version fails before the target is probed
    command_launch = pipeline.read_command(list(command_tokens)) if command_tokens else None
    # one view of the target (and one of --expect's snapshot), passed to every stage
    snapshot = SnapshotView(
        resolve_target(
            topology=options.topology,
            system=options.system,
            fallback_system=options.fallback_system,
        )
    )
    found_files = pipeline.find(list(files))
    gpu_count = target_gpu_count(snapshot)
    expected = SnapshotView(load_snapshot(options.expect)) if options.expect else None
    ruleset = load_rules_for(options.rules_dirs, options.disabled)
    model = None
    if model_name:
        from topoctl.autoconf.models import profile

        model = profile(model_name)
    chooser = VersionChooser(
        target_version(snapshot, requested),
        "--sglang-version" if requested else "the target's installed SGLang",
        options.dynamo_version,
        flag_set_for,
        requested_version,
    )
    entries = pipeline.read(found_files, chooser, command_launch)
    outcomes = pipeline.judge_all(entries, snapshot, ruleset, gpu_count, model, expected)
    emit(FORMATTERS[fmt](outcomes, fail_on), options.output)
    for line in chooser.notes:  # after the report is written: a failed write is the only thing said
        click.echo(f"topoctl: note: {one_line(line)}", err=True)
    errors = [o for o in outcomes if o.error]
    if errors:  # every file was reported first; then the run is bad input (exit 2)
        raise TopoctlError(
            f"{len(errors)} of {len(outcomes)} file(s) or launch(es) could not be checked "
            f"(first: {one_line(errors[0].origin)}: {one_line(errors[0].error)})",
            hint="the report names each one; fix or remove them, the others were checked",
        )
    return EXIT_BLOCKED if any(failing(o, fail_on) for o in outcomes) else 0
