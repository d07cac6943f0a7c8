"""The typed reading of a snapshot's `cuda_visible_devices` record: which GPUs a CUDA program saw
where the snapshot was taken, and as which CUDA device id. probe/visible.py writes the record when
CUDA_VISIBLE_DEVICES is set for the probe; topoctl/snapshot/schema/snapshot.schema.json declares it;
readers ask SnapshotView.cuda_visible_devices, which gives this module's CudaVisibleDevices, never
the raw dict.

A validated snapshot's record has the schema's types. A partial snapshot (a rule's test case) may
hold anything there: a record without a string `value` reads as no record (None), a field of the
wrong type as not known (None, or no device), never a crash.

Imported only when a snapshot holds the record (two dataclasses: off the start-up path of a snapshot
without one, such as every built-in system's; tests/data/function_imports.txt).

Layer: snapshot (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeGuard


@dataclass(frozen=True)
class CudaDevice:
    """One device a CUDA program sees: `cuda:<cuda>`, the snapshot GPU index it is (None: unknown)
    and the entry of the list that names it."""

    cuda: int
    gpu: int | None
    id: str


@dataclass(frozen=True)
class CudaVisibleDevices:
    """snapshot.cuda_visible_devices, field for field (the schema's descriptions say what each
    means).

    `value` and `device_order`: the variables as they were set; `cuda_devices`: cuda:0 first;
    `hidden`: the GPUs CUDA does not see (None when which it sees is unknown); `ended_at`/`why`: the
    entry at which CUDA stops reading the list and why; `unknown`: why which GPUs CUDA sees cannot
    be said (None when it can, and in records written before the probe said it)."""

    value: str
    device_order: str | None
    cuda_devices: tuple[CudaDevice, ...]
    hidden: tuple[int, ...] | None
    ended_at: str | None
    why: str | None
    unknown: str | None


def _is_index(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _device(entry: object) -> CudaDevice | None:
    if (
        not isinstance(entry, dict)
        or not _is_index(entry.get("cuda"))
        or not isinstance(entry.get("id"), str)
    ):
        return None
    gpu = entry.get("gpu")
    return CudaDevice(entry["cuda"], gpu if _is_index(gpu) else None, entry["id"])


def read_record(record: object) -> CudaVisibleDevices | None:
    """The record as a CudaVisibleDevices; None when there is none (or it has no string `value`)."""
    if not isinstance(record, dict) or not isinstance(record.get("value"), str):
        return None
    entries = record.get("cuda_devices")
    devices = [_device(entry) for entry in entries] if isinstance(entries, list) else []
    hidden = record.get("hidden")
    return CudaVisibleDevices(
        value=record["value"],
        device_order=_text(record.get("device_order")),
        cuda_devices=tuple(device for device in devices if device is not None),
        hidden=tuple(hidden)
        if isinstance(hidden, list) and all(_is_index(index) for index in hidden)
        else None,
        ended_at=_text(record.get("ended_at")),
        why=_text(record.get("why")),
        unknown=_text(record.get("unknown")),
    )
