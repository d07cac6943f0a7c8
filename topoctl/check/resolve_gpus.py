"""The resolve stage of check, GPUs: which of the target's GPUs one node of a launch runs on (its
group), from CUDA_VISIBLE_DEVICES, the GPUs a runtime gives a container, --base-gpu-id /
--gpu-id-step, and SGLang's own placement of ranks; a launch given only a number of GPUs gets every
set of them it may get.

What it says about the group (which GPUs, a group that cannot be known, ranks past the visible GPUs)
is reported as findings (topoctl/check/outcome.py Item).

Layer: judge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from topoctl.check.outcome import Item
from topoctl.check.parse import raw_int
from topoctl.core.errors import one_line
from topoctl.core.vocab import Severity
from topoctl.deploy.sglang_launch import ParsedLaunch
from topoctl.snapshot.cuda_devices import (
    DEVICE_ORDER,
    VISIBLE_DEVICES,
    VisibleGroup,
    container_devices,
    parse_visible_devices,
    pci_order,
    probe_visible,
)
from topoctl.snapshot.view import SnapshotLike

if TYPE_CHECKING:
    from topoctl.deploy.launchers import GpuSet
    from topoctl.snapshot.cuda_devices import VisibleGroup

# Runtimes that, given a number of GPUs and no ids, give GPUs 0..N-1 (nvidia-smi's indices): Docker
# Engine (moby daemon/nvidia_linux.go, setNvidiaGPUs: NVIDIA_VISIBLE_DEVICES=countToDevices(count),
# "0,1,...,count-1"; Compose's `count:` / `gpus:` reach the engine as the same device request) and
# nerdctl (pkg/cmd/container/run_gpus.go: nvidia.WithDevices(0..count-1)). Podman and Kubernetes:
# not defined here (the kubelet's device manager and the device plugin pick free GPUs), so any N of
# the machine.
RUNTIME_PICKS = (
    "docker run --gpus",
    "nerdctl run --gpus",
    "deploy.resources.reservations.devices",
    "gpus: ",
)


ANY_SET_LIMIT = 500  # sets of N GPUs judged one by one; beyond, every pair of the machine (said)


def runtime_pick(given: GpuSet | None, machine: int) -> list[str] | None:
    """The host GPU ids a runtime gives a launch that asks for a number of GPUs, where that is
    defined."""
    if (
        given is None
        or given.ids is not None
        or given.count is None
        or not 0 < given.count < machine
    ):
        return None
    if not str(getattr(given, "source", "")).startswith(RUNTIME_PICKS):
        return None
    return [str(index) for index in range(given.count)]


def any_gpu_sets(parsed: ParsedLaunch, snapshot: SnapshotLike) -> list[tuple[int, ...]] | None:
    """Every set of GPUs a launch given only a number of them may get (a Kubernetes `nvidia.com/gpu:
    N`, podman `--gpus N`), each in the PCI bus order CUDA inside numbers them; None when the GPUs
    are known (ids, all, a runtime that picks 0..N-1, no container) or there are more than
    ANY_SET_LIMIT sets."""
    given = getattr(parsed, "gpus", None)
    machine = pci_order(snapshot)
    if given is None:
        unknown = _order_unknown(parsed, snapshot)
        if (
            unknown is None
            or not 0 < unknown.count < len(machine)
            or math.comb(len(machine), unknown.count) > ANY_SET_LIMIT
        ):
            return None
        return list(itertools.combinations(machine, unknown.count))
    if given.ids is not None or given.count is None or not 0 < given.count < len(machine):
        return None
    if (
        runtime_pick(given, len(machine)) is not None
        or math.comb(len(machine), given.count) > ANY_SET_LIMIT
    ):
        return None
    return list(itertools.combinations(machine, given.count))


def _order_unknown(parsed: ParsedLaunch, snapshot: SnapshotLike) -> VisibleGroup | None:
    """The launch's CUDA_VISIBLE_DEVICES when it names `count` GPUs that CUDA's default device order
    leaves unknown (integer ids without CUDA_DEVICE_ORDER=PCI_BUS_ID,
    topoctl/snapshot/cuda_devices.py resolve_visible)."""
    value = parsed.env.get(VISIBLE_DEVICES)
    if value is None:
        return None
    group = parse_visible_devices(value, snapshot, parsed.env.get(DEVICE_ORDER))
    return group if group.order_unknown else None


def _machine(snapshot: SnapshotLike) -> list[int]:
    return pci_order(snapshot)


def launch_group(
    parsed: ParsedLaunch,
    snapshot: SnapshotLike,
    tp: int,
    dp: int,
    gpu_count: int,
    given_devices: tuple[int, ...] | None = None,
) -> tuple[tuple[int, ...] | None, list[Item]]:
    """The GPUs the launch runs on (snapshot indices), and what check says about them.

    CUDA_VISIBLE_DEVICES (launch.env, or the environment before the command) names the visible GPUs,
    read as CUDA reads it (topoctl/snapshot/cuda_devices.py); SGLang's ranks take visible devices
    base_gpu_id + dp_rank x tp x gpu_id_step + tp_rank x gpu_id_step (sglang 0.5.12
    srt/entrypoints/engine.py and srt/managers/data_parallel_controller.py; pipeline parallelism not
    modelled). Without it, the first tp x dp GPUs in PCI bus order. When the value cannot be mapped
    onto the snapshot, every GPU (conservatively, with a warning). None: every GPU, by the engine's
    own default.

    `given_devices`: the GPUs a container given only a number of GPUs sees, for one of the sets it
    may get (any_gpu_sets)."""
    base = max(raw_int(parsed, "base_gpu_id", 0), 0)
    step = max(raw_int(parsed, "gpu_id_step", 1), 1)
    ranks = _Ranks(tp, dp, base, step, *_rank_positions(tp, dp, base, step))
    where = parsed.lines.get(VISIBLE_DEVICES, "")
    value = parsed.env.get(VISIBLE_DEVICES)
    items: list[Item] = []
    machine = pci_order(snapshot)
    given = getattr(
        parsed, "gpus", None
    )  # docker --gpus / nvidia.com/gpu: what the launcher gives the launch
    devices, source, decided = _container_devices(parsed, snapshot, machine, given_devices, items)
    if decided:
        return tuple(machine), items
    seen = (
        probe_visible(snapshot)
        if given is None and value is None and given_devices is None
        else None
    )
    if (
        seen is not None
    ):  # CUDA_VISIBLE_DEVICES where the snapshot was taken: CUDA's devices are those GPUs
        devices, source = list(seen.gpus), seen.text
        if max(ranks.positions) >= len(devices):
            if tp > gpu_count:  # more than the machine has: the parallel-size check says so
                return tuple(devices), items
            return _too_few(
                items, tp, dp, ranks.positions, len(devices), seen.text, where, tuple(devices)
            )
    if value is None and devices is not machine:
        return _on_given_devices(parsed, ranks, devices, source, len(machine), where, items)
    if value is None:
        return _on_first_gpus(ranks, machine, gpu_count, where, items)
    return _on_visible_devices(
        parsed, snapshot, ranks, devices, machine, gpu_count, given_devices, items
    )


@dataclass
class _Ranks:
    """Where SGLang puts a launch's ranks: the visible device index of each (positions), and whether
    --base-gpu-id / --gpu-id-step spread them past the first tp x dp (spread)."""

    tp: int
    dp: int
    base: int
    step: int
    positions: list[int]
    spread: bool

    @property
    def needed(self) -> int:
        return self.tp * self.dp


def _container_devices(
    parsed: ParsedLaunch,
    snapshot: SnapshotLike,
    machine: list[int],
    given_devices: tuple[int, ...] | None,
    items: list[Item],
) -> tuple[list[int], str, bool]:
    """(the GPUs the launch's container sees, as snapshot indices; what gives them; whether the
    group is decided already: every GPU of the machine, with what `items` says)."""
    given = getattr(parsed, "gpus", None)
    source = str(getattr(given, "source", ""))
    picked = runtime_pick(given, len(machine))
    if (
        given_devices is not None
    ):  # one possible set of GPUs of a launch given a number of them ("any N")
        return list(given_devices), source, False
    if picked is not None:
        mapped, _ = container_devices(picked, snapshot)
        if mapped is None:
            return machine, source, False
        return (
            mapped,
            source
            + (
                f": the runtime gives GPUs {','.join(picked)} (NVIDIA_VISIBLE_DEVICES=0..N-1, "
                "moby daemon/nvidia_linux.go countToDevices; pin device ids to choose others)"
            ),
            False,
        )
    if given is not None and given.ids is not None:
        mapped, why = container_devices(list(given.ids), snapshot)
        if mapped is None:
            items.append(
                Item(
                    "topoctl-gpu-group-unknown",
                    Severity.WARN,
                    "GPUs of the launch unknown",
                    one_line(f"{why} ({source}); judged on every GPU of the target"),
                    "give GPUs by their index or UUID as `topoctl show` lists them",
                    parsed.where,
                )
            )
            return machine, source, True
        return mapped, source, False
    if given is not None and given.count is not None and given.count < len(machine):
        items.append(
            Item(
                "topoctl-gpu-group",
                Severity.INFO,
                "GPUs the launch runs on",
                one_line(
                    f"the launch is given {given.count} GPUs ({source}); which ones is decided "
                    f"where it runs, and there are more than {ANY_SET_LIMIT} sets of them, so it "
                    "is "
                    "judged on every pair of the target"
                ),
                "",
                parsed.where,
            )
        )
        return machine, source, True
    return machine, source, False


def _on_given_devices(
    parsed: ParsedLaunch,
    ranks: _Ranks,
    devices: list[int],
    source: str,
    machine_size: int,
    where: str,
    items: list[Item],
) -> tuple[tuple[int, ...] | None, list[Item]]:
    """The ranks on the GPUs a container or the snapshot's own CUDA_VISIBLE_DEVICES gives."""
    if ranks.tp > len(devices):  # the launcher check says so (tp-exceeds-given-gpus)
        return tuple(devices), items
    if max(ranks.positions) >= len(devices):
        return _too_few(
            items,
            ranks.tp,
            ranks.dp,
            ranks.positions,
            len(devices),
            f"the launch is given {len(devices)} ({source})",
            where,
            tuple(devices),
        )
    group = tuple(devices[position] for position in ranks.positions)
    items.append(
        Item(
            "topoctl-gpu-group",
            Severity.INFO,
            "GPUs the launch runs on",
            one_line(f"judged on GPUs {_ids(group)} of {machine_size} ({source})"),
            "",
            parsed.where,
        )
    )
    return group, items


def _on_first_gpus(
    ranks: _Ranks, machine: list[int], gpu_count: int, where: str, items: list[Item]
) -> tuple[tuple[int, ...] | None, list[Item]]:
    """No CUDA_VISIBLE_DEVICES and no container: the first tp x dp GPUs in PCI bus order (or as the
    base and step place them)."""
    if ranks.tp > gpu_count:  # the parallel-size check says so
        return None, items
    if ranks.needed == len(machine) and not ranks.spread:
        return None, items
    if max(ranks.positions) >= len(machine):
        return _too_few(
            items,
            ranks.tp,
            ranks.dp,
            ranks.positions,
            len(machine),
            f"the target has {len(machine)} GPUs",
            where,
        )
    group = tuple(machine[position] for position in ranks.positions)
    items.append(
        Item(
            "topoctl-gpu-group",
            Severity.INFO,
            "GPUs the launch runs on",
            one_line(
                f"judged on GPUs {_ids(group)} of {len(machine)}: "
                + (
                    f"from --base-gpu-id {ranks.base} / --gpu-id-step {ranks.step}"
                    if ranks.spread
                    else f"the first {ranks.needed}"
                )
                + f" ({VISIBLE_DEVICES} is not set); pairs with the other GPUs do not count"
            ),
            f"set {VISIBLE_DEVICES} (with {DEVICE_ORDER}=PCI_BUS_ID) to choose the GPUs; "
            "`topoctl recommend --tp-size N` picks the best group",
        )
    )
    return group, items


def _on_visible_devices(
    parsed: ParsedLaunch,
    snapshot: SnapshotLike,
    ranks: _Ranks,
    devices: list[int],
    machine: list[int],
    gpu_count: int,
    given_devices: tuple[int, ...] | None,
    items: list[Item],
) -> tuple[tuple[int, ...] | None, list[Item]]:
    """The ranks on the GPUs the launch's CUDA_VISIBLE_DEVICES leaves visible, read as CUDA reads
    it."""
    where = parsed.lines.get(VISIBLE_DEVICES, "")
    value = parsed.env[VISIBLE_DEVICES]
    visible = parse_visible_devices(value, snapshot, parsed.env.get(DEVICE_ORDER), devices)
    if (
        getattr(parsed, "gpus", None) is None and given_devices is not None
    ):  # a set integer ids may name
        whole = parse_visible_devices(value, snapshot, parsed.env.get(DEVICE_ORDER))
        if whole.order_unknown and len(given_devices) == whole.count:
            visible = VisibleGroup(tuple(given_devices), notes=whole.notes)
    if visible.gpus is None:
        items.append(
            Item(
                "topoctl-gpu-group-unknown",
                Severity.WARN,
                "GPUs of the launch unknown",
                one_line(f"{visible.reason}; judged on every GPU of the target"),
                f"write {VISIBLE_DEVICES} as integer ids with {DEVICE_ORDER}=PCI_BUS_ID, or as "
                "GPU UUIDs",
                where,
            )
        )
        return tuple(machine), items  # unknown: judged on every pair, conservatively
    for note in visible.notes:
        items.append(
            Item(
                "topoctl-gpu-group",
                Severity.INFO,
                "GPUs the launch runs on",
                one_line(note),
                "",
                where,
            )
        )
    if max(ranks.positions) >= len(visible.gpus):
        if ranks.tp > gpu_count:  # more than the machine has: the parallel-size check says so
            return visible.gpus, items
        return _too_few(
            items,
            ranks.tp,
            ranks.dp,
            ranks.positions,
            len(visible.gpus),
            f"{VISIBLE_DEVICES}={value} leaves {len(visible.gpus)} visible",
            where,
            visible.gpus,
        )
    group = tuple(visible.gpus[position] for position in ranks.positions)
    items.append(
        Item(
            "topoctl-gpu-group",
            Severity.INFO,
            "GPUs the launch runs on",
            one_line(
                f"judged on GPUs {_ids(group)} of {len(machine)} ({VISIBLE_DEVICES}={value}"
                + (
                    f", devices {_ids(tuple(ranks.positions))} of it (--base-gpu-id / "
                    "--gpu-id-step)"
                    if ranks.spread
                    else f", the first {ranks.needed} of them"
                    if ranks.needed < len(visible.gpus)
                    else ""
                )
                + ")"
            ),
            "",
            where,
        )
    )
    return group, items


def _rank_positions(tp: int, dp: int, base: int, step: int) -> tuple[list[int], bool]:
    """(the visible device index of each rank, whether they are other than the first tp x dp), built
    only when they could fit a snapshot: past MAX_GPUS ranks (`--tp-size 1000000000`) the highest
    index alone stands for them, which is all the checks below read of a group that cannot fit."""
    from topoctl.snapshot.document import MAX_GPUS

    needed = tp * dp
    if needed > MAX_GPUS:
        return [base + (needed - 1) * step], True
    positions = [
        base + dp_rank * tp * step + tp_rank * step
        for dp_rank in range(dp)
        for tp_rank in range(tp)
    ]
    return positions, positions != list(range(needed))


def _too_few(
    items: list[Item],
    tp: int,
    dp: int,
    positions: list[int],
    available: int,
    what: str,
    where: str,
    fallback: tuple[int, ...] | None = None,
) -> tuple[tuple[int, ...] | None, list[Item]]:
    """A launch whose ranks need a device id past the visible ones: CUDA has no such device, SGLang
    cannot start."""
    items.append(
        Item(
            "topoctl-tp-exceeds-visible-gpus",
            Severity.BLOCK,
            "tensor parallel size exceeds the visible GPUs",
            one_line(
                f"tp {tp} x dp {dp} uses device ids up to {max(positions)}; {what}: the server "
                "will "
                "not start"
            ),
            f"make {max(positions) + 1} GPUs visible, or lower --tp-size / --base-gpu-id",
            where,
        )
    )
    return fallback, items


def _visible_count(parsed: ParsedLaunch, snapshot: SnapshotLike, gpu_count: int) -> int:
    """How many GPUs the launch's CUDA_VISIBLE_DEVICES leaves visible (every GPU without one, or
    when unknown)."""
    given = parsed.gpus
    devices = (
        container_devices(list(given.ids), snapshot)[0]
        if given is not None and given.ids is not None
        else None
    )
    if given is not None and given.ids is None and given.count is not None:
        return min(given.count, gpu_count)
    value = parsed.env.get(VISIBLE_DEVICES)
    seen = probe_visible(snapshot) if given is None and value is None else None
    if seen is not None:
        return len(seen.gpus)
    if value is None:
        return gpu_count if devices is None else len(devices)
    visible = parse_visible_devices(value, snapshot, parsed.env.get(DEVICE_ORDER), devices)
    if visible.order_unknown:
        return visible.count  # how many is known, which ones is not
    return (
        (gpu_count if devices is None else len(devices))
        if visible.gpus is None
        else len(visible.gpus)
    )


def _ids(group: tuple[int, ...]) -> str:
    return ",".join(str(index) for index in group)
