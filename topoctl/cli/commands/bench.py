"""`topoctl bench`: how fast is this machine really, and does P2P really work? Measurements into the
snapshot.

Layer: commands and CLI (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, cast

import click

from topoctl import __version__
from topoctl.cli.commands.completion import complete_models
from topoctl.core.errors import NoGpuError, TopoctlError
from topoctl.core.io import check_destination, emit, write_atomic
from topoctl.core.serialize import dump
from topoctl.snapshot.view import SnapshotLike, SnapshotView, view_of

if TYPE_CHECKING:
    from topoctl.autoconf.request import ModelProfile
    from topoctl.probe.bench.decode_ops import Gemm
    from topoctl.probe.bench.decode_step import Request
    from topoctl.snapshot.shape import Snapshot, SnapshotMeasurements

EXIT_INCOMPLETE = (
    1  # the run stopped early (hang, worker failure, NCCL init failure); what was measured is kept
)
EXIT_INTERRUPTED = 130


@click.command("bench")
@click.option(
    "--topology",
    metavar="FILE",
    help="Snapshot of this machine (from `topoctl probe -o FILE`) to add the measurements to; "
    "default: probe this machine now.",
)
@click.option(
    "--model",
    "model_name",
    metavar="NAME",
    shell_complete=complete_models,
    help="Built-in model profile: its per-step allreduce sizes (hidden x tokens x dtype bytes) "
    "join the sweep.",
)
@click.option(
    "--model-path",
    metavar="DIR",
    help="A model folder (or its config.json): same as --model, read from it.",
)
@click.option(
    "--budget-s",
    type=float,
    default=None,
    metavar="S",
    help="Time for the measurements themselves, split 30/60/10 between P2P, allreduce and "
    "coalescing (default 60; process start-up and NCCL init come on top).",
)
@click.option(
    "--timeout",
    "timeout_s",
    type=float,
    default=30.0,
    show_default=True,
    metavar="S",
    help="Watchdog: a copy or collective with no progress for S seconds is recorded as hung and "
    "ended.",
)
@click.option(
    "--sizes",
    metavar="LIST",
    help="Allreduce sizes to sweep, e.g. 4K,42K,2.5M (default 4 KiB..64 MiB by 4x).",
)
@click.option(
    "--tokens",
    metavar="LIST",
    help="Token counts whose per-step message sizes are added for the model (default "
    "1,4,16,64,256); with --decode-step, the token counts each pass is timed for (default "
    "1,4,16).",
)
@click.option(
    "--backend",
    type=click.Choice(["nccl", "gloo"]),
    default="nccl",
    show_default=True,
    help="nccl: one process per GPU. gloo: CPU processes (checks the harness on a machine "
    "without GPUs).",
)
@click.option(
    "--world-size",
    type=int,
    default=None,
    metavar="N",
    help="Processes to start (default: every visible GPU; with --backend gloo: the snapshot's "
    "GPU count).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["yaml", "json"]), default="yaml", show_default=True
)
@click.option(
    "-o",
    "--output",
    metavar="FILE",
    help="Write the snapshot with its measurements to FILE, atomically, after every measurement "
    "(so an interrupted run keeps what it measured).",
)
@click.option("--quiet", is_flag=True, help="No progress bar on stderr.")
@click.option(
    "--decode-step",
    is_flag=True,
    help="Instead of the interconnect: time the model's own decode step on one GPU (its matrices "
    "at its dtype, layer after layer in one CUDA graph, for each --tokens count, MoE layers "
    "reading the experts those tokens are routed to), then each GEMM the launch model prices "
    "for that step alone, in the format it looks it up in (rows that replace the op tables' "
    "reference rows; fp8-block and 4-bit GEMMs keep theirs). Needs --model or --model-path; the "
    "snapshot's other measurements are kept, and recommend uses these rows first.",
)
@click.option(
    "--tp",
    "tp_sizes",
    metavar="LIST",
    default="1",
    show_default=True,
    help="With --decode-step: the TP sizes whose one-GPU share of the model is timed, e.g. 1,8.",
)
@click.option(
    "--dtype",
    "dtype_name",
    type=click.Choice(["bf16", "fp16", "fp8"]),
    default=None,
    help="With --decode-step: the weight format the whole pass is timed at (default: the model's "
    "own; a 4-bit model needs one of these, as torch has no 4-bit product). The per-GEMM rows "
    "keep the formats the launch model looks them up in.",
)
def command(**given: Any) -> int:
    """Measure the interconnect in about a minute and record it in the snapshot under
    `measurements`:

    \b
    - P2P health of every ordered GPU pair: a real copy, checked, under the watchdog;
      a pair the driver calls OK but that hangs, corrupts or crawls is named;
    - P2P bandwidth (one way, both ways) and latency per pair;
    - allreduce latency over a size sweep that includes the model's per-step messages,
      through NCCL eager and in a CUDA graph, and every other path torch offers here
      (symmetric memory one-shot/two-shot, never multicast); paths that cannot run are
      recorded with the reason;
    - the coalescing question: N allreduces of s against 2 of N x s / 2 in one CUDA graph.

    \b
    Examples:
      topoctl bench -o machine.yaml                       # probe, then measure
      topoctl bench --topology machine.yaml --model kimi-k2.5 -o machine.yaml
      topoctl show --topology machine.yaml                # shows the measurements
      topoctl recommend --topology machine.yaml           # ranks by them
      topoctl bench --topology machine.yaml --decode-step --model llama-3.1-70b --tp 4,8 -o machine.yaml

    Needs torch (pip install torch; from a clone of topoctl: pip install '.[bench]'). Exit 0 when
    everything planned was measured (unhealthy pairs are results), 1 when the run stopped early (a
    hang, NCCL init failure, a worker that died), 130 on Ctrl-C; the output file holds what was
    measured either way.
    """
    return run(BenchOptions(**given))


@dataclass(frozen=True)
class BenchOptions:
    """Everything `topoctl bench` was given, one field per option (click's parameter names)."""

    topology: str | None = None
    model_name: str | None = None
    model_path: str | None = None
    budget_s: float | None = None
    timeout_s: float = 30.0
    sizes: str | None = None
    tokens: str | None = None
    backend: str = "nccl"
    world_size: int | None = None
    fmt: str = "yaml"
    output: str | None = None
    quiet: bool = False
    decode_step: bool = False
    tp_sizes: str = "1"
    dtype_name: str | None = None


def run(options: BenchOptions) -> int:
    """bench's stages: the options checked, the snapshot and torch, the plan, the run, the snapshot
    written."""
    from topoctl.probe.bench import plan as planning

    _check_options(options)
    if options.decode_step:
        return _decode_step(options)
    backend, output, fmt, quiet = options.backend, options.output, options.fmt, options.quiet
    model = _model(options.model_name, options.model_path)
    size_list = planning.parse_list(options.sizes, "--sizes", planning.parse_size)
    token_list = planning.parse_list(options.tokens, "--tokens", planning.parse_tokens)

    torch = _import_torch()
    snapshot = _snapshot(options.topology)
    view = SnapshotView(
        snapshot
    )  # one view for every stage; it reads the dict bench writes measurements into
    count = _world_size(torch, backend, options.world_size, view)
    gpus = (
        [gpu["index"] for gpu in view.indexed_gpus][:count]
        if backend == "nccl"
        else list(range(count))
    )
    plan = planning.build_plan(
        count, model, size_list, token_list, options.budget_s, options.timeout_s, backend=backend
    )
    if count == 1 and not quiet:
        click.echo(
            "topoctl bench: one GPU: no P2P pairs to check; measuring the single-GPU paths "
            "(allreduce at world size 1, CUDA graph capture)",
            err=True,
        )

    from topoctl.probe.bench.runner import Progress, expected_items, run_bench

    busy: list[str] = []
    if backend == "nccl":
        from topoctl.probe.bench.busy import busy_gpus

        busy = busy_gpus(gpus)
        for line in busy:
            click.echo(f"topoctl: bench: warning: {line}", err=True)

    def update(measurements: dict[str, Any]) -> None:
        snapshot["measurements"] = cast(
            "SnapshotMeasurements", measurements
        )  # the runner writes the schema's rows
        if output and output != "-":
            write_atomic(output, dump(snapshot, fmt))

    outcome = run_bench(
        plan,
        _versions(torch, view),
        gpus,
        update,
        progress=Progress(expected_items(plan), enabled=not quiet),
        gpu_map=_gpu_map(view) if backend == "nccl" else None,
    )
    outcome.measurements["problems"][:0] = busy  # said first: it colours every figure after it
    snapshot["measurements"] = cast("SnapshotMeasurements", outcome.measurements)
    if busy and output and output != "-":
        write_atomic(output, dump(snapshot, fmt))
    for problem in outcome.problems:
        click.echo(f"topoctl: bench: {problem}", err=True)
    for row in outcome.measurements["p2p"]:
        if not row.get("healthy"):
            click.echo(
                f"topoctl: bench: P2P {row['src']}->{row['dst']} failed the health check: "
                f"{row.get('reason')}",
                err=True,
            )
    if not output or output == "-":
        emit(dump(snapshot, fmt), output)
    if outcome.interrupted:
        return EXIT_INTERRUPTED
    return 0 if outcome.measurements.get("complete") else EXIT_INCOMPLETE


def _check_options(options: BenchOptions) -> None:
    """Refuse option values that cannot work before anything is probed or started (one line each)."""
    from topoctl.cli.commands._options import require_value

    model_name, model_path, output = options.model_name, options.model_path, options.output
    budget_s, timeout_s, world_size = options.budget_s, options.timeout_s, options.world_size

    require_value(
        "--model",
        model_name,
        "name a built-in profile (kimi-k2.5, deepseek-v3, ...) or leave it out",
    )
    require_value(
        "--model-path", model_path, "give the model's folder or config.json, or leave it out"
    )
    if model_name and model_path:
        raise TopoctlError("give either --model or --model-path, not both")
    if output == "":
        raise TopoctlError("-o is empty", hint="give a file name, or leave -o out")
    if output and output != "-":
        check_destination(output)
    if budget_s is not None and budget_s <= 0:
        raise TopoctlError("--budget-s must be more than 0", hint="e.g. --budget-s 60")
    if timeout_s <= 0:
        raise TopoctlError("--timeout must be more than 0", hint="e.g. --timeout 30")
    if world_size is not None and world_size < 1:
        raise TopoctlError(
            "--world-size must be at least 1", hint="leave it out to use every visible GPU"
        )


def _decode_step(options: BenchOptions) -> int:
    """`--decode-step`: the decode-step rows into the snapshot's measurements
    (probe/bench/decode_step.py)."""
    from topoctl.probe.bench import plan as planning
    from topoctl.probe.bench.runner import Progress, expected_decode_rows, run_decode_step

    model_name, model_path, tokens, backend = (
        options.model_name,
        options.model_path,
        options.tokens,
        options.backend,
    )
    timeout_s, fmt, output, quiet = options.timeout_s, options.fmt, options.output, options.quiet

    if not model_name and not model_path:
        raise TopoctlError(
            "--decode-step needs the model to time",
            hint="add --model NAME (a built-in profile) or --model-path DIR",
        )
    token_list = planning.parse_list(tokens, "--tokens", planning.parse_tokens) or [1, 4, 16]
    tps = planning.parse_list(options.tp_sizes, "--tp", _parse_tp) or [1]
    torch = _import_torch()
    snapshot = _snapshot(options.topology)
    view = SnapshotView(snapshot)
    names = view.gpu_names
    requests = _decode_requests(
        model_name,
        model_path,
        token_list,
        tps,
        options.dtype_name,
        on_gpu=backend == "nccl",
        gpu_name=names[0] if names else None,
    )
    if backend == "nccl":
        _world_size(torch, backend, 1, view)
    # the runner appends its rows to this dict in place (probe/bench/decode_step.py), in the
    # schema's shape
    measurements: dict[str, Any] = cast("dict[str, Any]", snapshot.get("measurements")) or {
        "method": f"topoctl bench {__version__}",
        "topoctl_version": __version__,
        "versions": _versions(torch, view),
        "problems": [],
    }
    snapshot["measurements"] = cast("SnapshotMeasurements", measurements)

    def update(current: dict[str, Any]) -> None:
        snapshot["measurements"] = cast(
            "SnapshotMeasurements", current
        )  # the decode-step rows, in the schema's shape
        if output and output != "-":
            write_atomic(output, dump(snapshot, fmt))

    plan = planning.build_plan(1, None, [4096], [], 1.0, timeout_s, backend=backend)
    outcome = run_decode_step(
        plan,
        requests,
        measurements,
        update,
        Progress(expected_decode_rows(requests), enabled=not quiet),
    )
    for problem in outcome.problems:
        click.echo(f"topoctl: bench: {problem}", err=True)
    if not output or output == "-":
        emit(dump(snapshot, fmt), output)
    if outcome.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_INCOMPLETE if outcome.problems else 0


def _parse_tp(text: str) -> int:
    try:
        value = int(text.strip())
    except ValueError:
        raise TopoctlError(f"--tp: {text!r} is not a whole number", hint="e.g. --tp 1,8") from None
    if not 1 <= value <= 64:
        raise TopoctlError(f"--tp: {value} is outside 1..64", hint="e.g. --tp 1,8")
    return value


def _decode_requests(
    model_name: str | None,
    model_path: str | None,
    tokens: list[int],
    tps: list[int],
    dtype_name: str | None,
    on_gpu: bool,
    gpu_name: str | None = None,
) -> list[Request]:
    """One request per TP size: the model's shapes from its config, one GPU's share, at its dtype."""
    from topoctl.autoconf import models
    from topoctl.probe.bench import decode_step

    if model_name:
        profile = models.profile(model_name)
        config = dict(models.builtin_models()[model_name]["config"])
        config = dict(config.get("text_config") or config)
        name = model_name
    else:
        path = str(model_path)
        config_path = os.path.join(path, "config.json") if os.path.isdir(path) else path
        profile = models.from_hf_config(config_path)
        config = decode_step.load_config(config_path)
        name = str(
            profile.get("name") or os.path.basename(os.path.dirname(os.path.abspath(config_path)))
        )
    dtype = dtype_name or _model_dtype(profile, name)
    try:
        shapes = decode_step.shapes_from_config(name, config)
    except (KeyError, TypeError, ValueError) as exc:
        raise TopoctlError(
            f"{name}: its config lacks what the decode step needs ({exc})",
            hint="give a config.json with hidden_size, num_attention_heads, num_hidden_layers",
        ) from None
    return [
        decode_step.Request(
            decode_step.sharded(shapes, tp),
            dtype,
            tuple(tokens),
            on_gpu=on_gpu,
            gemms=_step_gemms(profile, tp, gpu_name),
        )
        for tp in tps
    ]


def _step_gemms(profile: ModelProfile, tp: int, gpu_name: str | None) -> tuple[Gemm, ...]:
    """The GEMMs the launch model prices for one GPU's share at TP `tp` (their rows replace the op
    tables' reference rows) in the dtypes torch has a product of; none where the model's step
    cannot be composed."""
    from topoctl.autoconf import step_model
    from topoctl.probe.bench.decode_ops import TORCH_DTYPES, Gemm

    return tuple(
        Gemm(name, n, k, dtype)
        for name, n, k, dtype in step_model.gemm_shapes(profile, tp, gpu_name)
        if dtype in TORCH_DTYPES
    )


def _model_dtype(profile: dict[str, Any], name: str) -> str:
    """The decode-step dtype of a model's weights: bf16/fp16, fp8, or a clear refusal for 4-bit
    formats."""
    quant = profile.get("quantization") or {}
    bits = quant.get("bits")
    if bits == 8 and "fp8" in str(quant.get("scheme") or quant.get("method") or ""):
        return "fp8"
    if bits in (None, 16):
        return "fp16" if str(quant.get("dtype")) == "float16" else "bf16"
    raise TopoctlError(
        f"{name} is {quant.get('label') or f'{bits}-bit'}: torch has no product of that format "
        "to time",
        hint="give --dtype fp8 (or bf16) to time the same matrices at that width",
    )


def _model(name: str | None, path: str | None) -> dict[str, Any] | None:
    from topoctl.autoconf import models

    if name:
        return models.profile(name)
    if path:
        return models.from_hf_config(
            os.path.join(path, "config.json") if os.path.isdir(path) else path
        )
    return None


def _import_torch() -> Any:
    try:
        import torch
    except ImportError:
        raise TopoctlError(
            "topoctl bench needs torch, which is not installed",
            hint="pip install torch (the build for your CUDA); "
            "from a clone of topoctl: pip install '.[bench]'",
        ) from None
    return torch


def _snapshot(topology: str | None) -> Snapshot:
    from topoctl.cli.target_machine import resolve_target

    return resolve_target(topology=topology)


def _world_size(torch: Any, backend: str, requested: int | None, snapshot: SnapshotLike) -> int:
    if backend == "gloo":
        return requested or view_of(snapshot).gpu_count or 0

    if not torch.cuda.is_available():
        raise NoGpuError(
            "torch sees no CUDA GPU, so there is nothing to benchmark",
            hint="check `nvidia-smi` and that torch is a CUDA build; --backend gloo checks the "
            "harness on CPU",
        )
    visible = torch.cuda.device_count()
    if requested is not None and requested > visible:
        raise TopoctlError(
            f"--world-size {requested} is more than the {visible} GPU(s) torch sees",
            hint=f"use --world-size {visible} or fewer",
        )
    return requested or visible


def _versions(torch: Any, snapshot: SnapshotLike) -> dict[str, str | None]:
    view = view_of(snapshot)
    nccl = None
    try:
        version = torch.cuda.nccl.version()
        nccl = (
            ".".join(str(part) for part in version) if isinstance(version, tuple) else str(version)
        )
    except Exception:  # a CPU build of torch has no NCCL
        nccl = None
    return {
        "torch": str(torch.__version__),
        "nccl": nccl,
        "cuda_runtime": str(torch.version.cuda) if torch.version.cuda else None,
        "driver": view.software("driver"),
        "sglang": view.software("sglang"),
    }


def _gpu_map(snapshot: SnapshotLike) -> Callable[[list[str | None]], list[int]]:
    """torch device order -> snapshot (NVML) indices, by PCI bus id; torch's order where a bus id is
    unknown."""
    from topoctl.probe.topology import bus_key

    by_bus = {bus_key(bus): index for bus, index in view_of(snapshot).pci_bus_ids.items()}

    def mapping(bus_ids: list[str | None]) -> list[int]:
        return [by_bus.get(bus_key(bus), position) for position, bus in enumerate(bus_ids)]

    return mapping
