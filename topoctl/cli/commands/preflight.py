"""`topoctl preflight`: prove one launch on its own box before SGLang starts. Exit 0 when everything
it ran passed, 1 on a hang, a wrong result, a crash or an init failure (as check's blocking
finding), 2 on bad input, 3 when no GPU is seen.

Reads the launch as check does (a launch.env, a deployment file, or a command after `--`), plans
what to run from it (topoctl/check/judge_preflight.py: its GPUs, its environment, its allreduce path and
message sizes) and runs it through the bench's harness (probe/bench: a watchdog on every item and a
data check on every sum), then one call of each kernel torch offers (probe/bench/kernel_smoke.py).
With -o, the results go into the snapshot's measurements.preflight, where check reads them: a launch
of the same path on the same GPUs that failed here is blocked there.

Layer: commands and CLI (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import importlib.util
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Iterator, cast

import click

from topoctl.autoconf import models
from topoctl.check import judge_preflight as preflight
from topoctl.check import pipeline
from topoctl.check.judge_preflight import PreflightPlan, Result, Verdict, record
from topoctl.check.resolve import VersionChooser
from topoctl.cli.commands._options import LaunchCommand, flag_set_for, requested_version
from topoctl.cli.commands.completion import complete_models
from topoctl.cli.target_machine import resolve_target
from topoctl.core.errors import EXIT_BLOCKED, NoGpuError, TopoctlError, one_line
from topoctl.core.io import write_atomic
from topoctl.core.serialize import dump
from topoctl.deploy.sglang_launch import ParsedLaunch
from topoctl.probe.bench import plan as planning
from topoctl.probe.bench.kernel_smoke import run_kernel_smoke
from topoctl.probe.bench.runner import Progress, run_bench
from topoctl.probe.bench.worker import MULTICAST_OFF

if TYPE_CHECKING:
    from topoctl.snapshot.shape import SnapshotMeasurements

DEFAULT_TIMEOUT_S = 60.0


@click.command("preflight", cls=LaunchCommand)
@click.argument("launch", required=False, metavar="[LAUNCH] [-- COMMAND...]")
@click.option(
    "--topology",
    metavar="FILE",
    help="The box's snapshot (default: probe it now). With -o the results are added to it.",
)
@click.option(
    "--model",
    "model_name",
    metavar="NAME",
    shell_complete=complete_models,
    help="Built-in model profile the launch serves: its bytes a token give the allreduce sizes "
    "(default: the launch.env's TOPOCTL_MODEL, else generic sizes).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=click.FloatRange(min=1.0),
    metavar="SECONDS",
    default=DEFAULT_TIMEOUT_S,
    show_default=True,
    help="Seconds any one step may go without progress before it is called hung.",
)
@click.option(
    "--backend",
    type=click.Choice(["nccl", "gloo"]),
    default="nccl",
    show_default=True,
    help="nccl: the launch's GPUs. gloo: CPU processes (checks the harness without a GPU).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: one line per result, for people; json: the plan and every result, for scripts.",
)
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    help="Write the snapshot with the results (measurements.preflight) to FILE atomically.",
)
@click.pass_context
def command(ctx: click.Context, **given: Any) -> int:
    """Prove LAUNCH on this box before it starts: NCCL init and an allreduce at the launch's own
    message sizes, eager and in a CUDA graph, on its GPUs with its environment, then one call of
    each kernel torch offers. A hang, a wrong sum, a crash or a failed init exits 1 with the fix.

    \b
    Examples:
      topoctl preflight launch.env --topology machine.json -o machine.json
      topoctl preflight -- python -m sglang.launch_server --model-path M --tp 8
      topoctl preflight launch.env --backend gloo      # the harness alone, no GPU
    """
    tokens = ctx.meta.get("topoctl_launch_command") or []
    return run(Options(**given), list(tokens))


def _read_launch(launch: str | None, tokens: list[str]) -> ParsedLaunch:

    if bool(launch) == bool(tokens):
        raise TopoctlError(
            "preflight takes one launch: a file, or a command after `--`",
            hint="e.g. topoctl preflight launch.env, or -- python -m sglang.launch_server ...",
        )
    chooser = VersionChooser(None, "the newest known", None, flag_set_for, requested_version)
    command = pipeline.read_command(tokens) if tokens else None
    entries = pipeline.read(pipeline.find([launch]) if launch else [], chooser, command)
    parsed = [e for e in entries if isinstance(e, ParsedLaunch)]
    if len(parsed) != 1:
        raise TopoctlError(
            f"{launch or 'the command'}: {len(parsed)} launches found, preflight takes one",
            hint="name the file that holds exactly one SGLang launch",
        )
    return parsed[0]


def _bytes_per_token(parsed: ParsedLaunch, model_name: str | None) -> int | None:

    name = model_name or parsed.metadata.get("TOPOCTL_MODEL")
    if not name:
        return None
    try:
        return int(models.profile(name)["allreduce_bytes_per_token"])
    except (KeyError, TopoctlError):
        raise TopoctlError(
            f"unknown model profile {name!r}", hint="topoctl recommend --list-models names them"
        ) from None


@contextmanager
def _launch_environment(plan: PreflightPlan) -> Iterator[None]:
    """The launch's variables (and the multicast guards) for the workers this process spawns."""
    saved = dict(os.environ)
    os.environ.update(plan.env)
    os.environ.update(MULTICAST_OFF)
    if plan.visible is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = plan.visible
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _collectives(
    plan: PreflightPlan, backend: str, timeout_s: float
) -> tuple[list[dict[str, object]], list[str]]:
    bench_plan = planning.build_plan(
        plan.world_size, None, list(plan.sizes), [], timeout_s / 2, timeout_s, backend=backend
    )
    bench_plan.paths = list(plan.bench_paths)
    bench_plan.p2p_pairs = []
    bench_plan.coalescing = {"n": 0, "bytes_each": 0}
    bench_plan.faults = _faults()
    outcome = run_bench(
        bench_plan,
        {},
        list(range(plan.world_size)),
        lambda m: None,
        progress=Progress(1, enabled=False),
    )
    rows = [r for r in outcome.measurements.get("allreduce", []) if r.get("path") != "custom"]
    return rows, list(outcome.problems)


def _faults() -> dict[str, str]:
    """TOPOCTL_PREFLIGHT_FAULT=name=value (gloo only): the tests' fault injection."""
    text = os.environ.get("TOPOCTL_PREFLIGHT_FAULT", "")
    return dict([text.split("=", 1)]) if "=" in text else {}


def _kernels(backend: str, timeout_s: float) -> list[Result]:

    if backend != "nccl":
        return [Result("kernels", "not run", "the gloo back end runs no GPU kernel")]

    results = [
        Result(str(r["kernel"]), str(r["status"]), str(r["reason"]))
        for r in run_kernel_smoke(timeout_s)
    ]
    if importlib.util.find_spec("sglang") is None:
        results.append(Result("SGLang's kernels", "not run", "SGLang not installed"))
    else:
        results.append(
            Result(
                "SGLang's kernels",
                "not run",
                "SGLang is installed; preflight does not call its kernels yet",
            )
        )
    return results


def _check_world(plan: PreflightPlan, backend: str) -> None:
    try:
        import torch
    except ImportError:
        raise TopoctlError(
            "topoctl preflight needs torch, which is not installed",
            hint="pip install torch (the build for your CUDA)",
        ) from None
    if backend == "gloo":
        return

    if not torch.cuda.is_available():
        raise NoGpuError(
            "torch sees no CUDA GPU, so there is nothing to preflight",
            hint="run it on the launch's box; --backend gloo checks the harness on CPU",
        )
    seen = torch.cuda.device_count()
    if plan.world_size > seen:
        raise TopoctlError(
            f"the launch spans {plan.world_size} GPUs of a node; torch sees {seen} here "
            f"(CUDA_VISIBLE_DEVICES={plan.visible!r})",
            hint="run preflight on the box the launch is for, with its GPUs visible",
        )


@dataclass(frozen=True)
class Options:
    """What the user asked, as click parsed it (the command's options, one record)."""

    launch: str | None
    topology: str | None
    model_name: str | None
    timeout_s: float
    backend: str
    fmt: str
    output: str | None


def run(options: Options, tokens: list[str]) -> int:
    parsed = _read_launch(options.launch, tokens)
    plan = preflight.plan_for(parsed, _bytes_per_token(parsed, options.model_name))
    with _launch_environment(plan):
        _check_world(plan, options.backend)
        rows, problems = _collectives(plan, options.backend, options.timeout_s)
        verdict = preflight.Verdict(plan, preflight.collective_results(plan, rows, problems))
        verdict.results.extend(_kernels(options.backend, options.timeout_s))
    _report(verdict, options.fmt)
    if options.output:
        _save(verdict, options.topology, options.output)
    return EXIT_BLOCKED if verdict.blocked else 0


def _report(verdict: Verdict, fmt: str) -> None:
    plan = verdict.plan
    if fmt == "json":
        click.echo(
            json.dumps(
                {
                    "launch": plan.origin,
                    "path": plan.path,
                    "world_size": plan.world_size,
                    "visible": plan.visible,
                    "sizes": list(plan.sizes),
                    "sizes_from": plan.size_source,
                    "blocked": verdict.blocked,
                    "results": [r.__dict__ for r in verdict.results],
                },
                indent=1,
            )
        )
        return
    click.echo(
        f"topoctl preflight: {one_line(plan.origin)}: allreduce {plan.path} over {plan.world_size} "
        f"GPU(s) (CUDA_VISIBLE_DEVICES={plan.visible or 'all'}); sizes: {plan.size_source}"
    )
    for r in verdict.results:
        mark = "BLOCK" if r.blocking else r.status
        line = f"  {mark}: {r.what}" + (f": {one_line(r.reason)}" if r.reason else "")
        click.echo(line)
        if r.blocking and r.fix:
            click.echo(f"    fix: {r.fix}")
    click.echo("blocked" if verdict.blocked else "passed")


def _save(verdict: Verdict, topology: str | None, output: str) -> None:

    snapshot = resolve_target(topology=topology)
    measurements = cast("dict[str, object]", dict(snapshot.get("measurements") or {}))
    when = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    earlier = measurements.get("preflight")
    kept = [
        r
        for r in (earlier if isinstance(earlier, list) else [])
        if isinstance(r, dict) and r.get("launch") != verdict.plan.origin
    ]
    measurements["preflight"] = kept + record(verdict, when)
    snapshot["measurements"] = cast("SnapshotMeasurements", measurements)
    write_atomic(output, dump(snapshot, "yaml" if output.endswith((".yaml", ".yml")) else "json"))
