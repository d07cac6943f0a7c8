"""What `recommend` is asked to launch on: the target machine's GPU count and interconnect, the
parallel sizes SGLang will accept there, and the request the rules judge for each candidate.

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from topoctl.core.errors import TopoctlError
from topoctl.snapshot.view import SnapshotLike, view_of

if (
    TYPE_CHECKING
):  # annotations only: check imports this module at start-up (tests/cli/test_startup_imports.py)
    from topoctl.autoconf.request import Launch, ModelProfile


def target_gpu_count(snapshot: SnapshotLike) -> int:
    """GPUs of the target; a snapshot without any is bad input (exit 2): nothing can be launched on
    it."""
    count = view_of(snapshot).gpu_count or 0
    if count < 1:
        raise TopoctlError(
            "the target snapshot has no GPU: there is nothing to launch SGLang on",
            hint="use a snapshot of the machine that will run SGLang (`topoctl probe` there), or "
            "--system NAME",
        )
    return count


def interconnect(snapshot: SnapshotLike) -> str:
    """The target's interconnect class as the probe summarised it (pcie, nvlink, nvswitch, ...;
    none)."""
    return str(view_of(snapshot).interconnect or "none")


def check_parallel_sizes(tp: int, ep: int, gpu_count: int) -> None:
    """SGLang's own start-up checks on the sizes, made before anything is written (exit 2, with a
    hint)."""
    if tp > gpu_count:
        raise TopoctlError(
            f"--tp-size {tp} is more than the {gpu_count} GPUs of the target",
            hint=f"use --tp-size {gpu_count} or fewer (a single-node launch spans at most every "
            "GPU)",
        )
    if ep > tp:
        raise TopoctlError(
            f"--ep-size {ep} is larger than the tensor parallel size {tp}",
            hint=f"expert parallelism runs inside the TP group: use --ep-size {tp} or a divisor "
            "of it",
        )
    if tp % ep:
        divisors = [d for d in range(1, tp + 1) if tp % d == 0]
        raise TopoctlError(
            f"--ep-size {ep} does not divide the tensor parallel size {tp}",
            hint=f"use one of {', '.join(map(str, divisors))}",
        )


def rules_request(
    model: ModelProfile | None,
    speculative: str | None,
    tp: int,
    ep: int,
    version: str | None,
    launch: Launch,
    gpus: tuple[int, ...] = (),
    dp: int = 1,
) -> dict[str, object]:
    """The request the rules engine judges: the model, what was asked for, and the candidate launch.
    `gpus`: the launch's GPUs in rank order (autoconf/placement.py), `dp` its data-parallel
    replicas; the rules' pair quantifiers visit the pairs inside one replica only."""
    return {
        "model": model,
        "speculative": speculative,
        "tp_size": tp,
        "ep_size": ep,
        "dp_size": dp,
        "sglang_version": version,
        "launch": launch,
        "gpus": list(gpus) if gpus else None,
    }
