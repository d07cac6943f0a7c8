"""Which GPUs CUDA will see under CUDA_VISIBLE_DEVICES, and as which CUDA device ids, recorded by
the probe.

NVML ignores CUDA_VISIBLE_DEVICES: the probe sees (and the snapshot lists) every GPU of the machine.
A launch started with the variable set sees only the GPUs it names, renumbered cuda:0, cuda:1, ...
in the order named. How the value is read (integer ids in CUDA's device order as CUDA_DEVICE_ORDER
sets it, UUID prefixes, MIG instances, the list ending at an invalid entry) is decided in one place,
topoctl/snapshot/cuda_devices.py resolve_visible, which cites its sources; check and recommend read
the record through the same function. The record's shape is the snapshot schema's
`cuda_visible_devices` (topoctl/snapshot/schema/snapshot.schema.json); readers, the probe's own note
included, read it as SnapshotView.cuda_visible_devices (topoctl/snapshot/visible_view.py).

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topoctl.snapshot.cuda_devices import resolve_visible

if TYPE_CHECKING:
    from topoctl.snapshot.shape import CudaDeviceEntry, SnapshotCudaVisibleDevices
    from topoctl.snapshot.visible_view import CudaVisibleDevices

ENV_NAMES = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")


def cuda_visible(
    value: str, gpus: list[dict[str, Any]], device_order: str | None = None
) -> SnapshotCudaVisibleDevices:
    """{"value", "device_order", "cuda_devices": [{"cuda": k, "gpu": index|None, "id": entry}],
    "hidden": [indices] (None when unknown), "ended_at": entry|None, "why": str|None, "unknown":
    str|None}."""
    group = resolve_visible(value, device_order, gpus)
    indices = sorted(gpu["index"] for gpu in gpus)
    entries = [] if value.strip() == "" else [entry.strip() for entry in value.split(",")]
    devices: list[CudaDeviceEntry]
    if group.gpus is not None:
        devices = [{"cuda": k, "gpu": gpu, "id": entries[k]} for k, gpu in enumerate(group.gpus)]
        hidden: list[int] | None = sorted(set(indices) - set(group.gpus))
    else:
        count = group.count if group.order_unknown else 0
        devices = [{"cuda": k, "gpu": None, "id": entries[k]} for k in range(count)]
        hidden = None
    return {
        "value": value,
        "device_order": device_order,
        "cuda_devices": devices,
        "hidden": hidden,
        "ended_at": group.ended_at,
        "why": group.why,
        "unknown": group.reason or None,
    }


def describe(visible: CudaVisibleDevices, gpu_count: int) -> str:
    """One line for people: what NVML saw and what CUDA will see."""
    if visible.unknown:
        return (
            f"CUDA_VISIBLE_DEVICES={visible.value!r}: the probe saw all {gpu_count} GPUs through "
            "NVML (the snapshot lists them all); which of them a CUDA program sees is unknown: "
            f"{visible.unknown}"
        )
    mapped = (
        ", ".join(
            f"GPU{d.gpu} as cuda:{d.cuda}" if d.gpu is not None else f"{d.id} as cuda:{d.cuda}"
            for d in visible.cuda_devices
        )
        or "no GPU"
    )
    hidden = ", ".join(f"GPU{i}" for i in visible.hidden or ()) or "none"
    line = (
        f"CUDA_VISIBLE_DEVICES={visible.value!r}: the probe saw all {gpu_count} GPUs through "
        f"NVML (the snapshot lists them all); a CUDA program sees {mapped}; hidden from CUDA: "
        f"{hidden}"
    )
    if visible.ended_at is not None:
        line += f"; the list ends at {visible.ended_at!r} ({visible.why})"
    return line
