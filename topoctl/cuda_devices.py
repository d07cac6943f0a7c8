"""Which snapshot GPUs a CUDA_VISIBLE_DEVICES value names, and how to write one for a group of GPUs.

A snapshot numbers its GPUs by NVML's index (`gpus[].index`). CUDA numbers devices its own way, and NVIDIA
documents that the two need not agree ("The NVML index may not correlate with other APIs, such as the CUDA
device index", NVML nvmlDeviceGetHandleByIndex_v2). CUDA's own order is set by CUDA_DEVICE_ORDER:
`FASTEST_FIRST` (the default: fastest device first, by a heuristic) or `PCI_BUS_ID` (ascending PCI bus id).
So topoctl writes and reads integer ids as positions in ascending PCI bus id order, and writes
CUDA_DEVICE_ORDER=PCI_BUS_ID next to every CUDA_VISIBLE_DEVICES it writes; that makes the ids mean the same
GPUs to the CUDA runtime whatever NVML's index order is. docs/recommend-and-check.md says the same for users.

CUDA_VISIBLE_DEVICES itself (CUDA Programming Guide, "CUDA Environment Variables"): a comma-separated list
of integer indices, GPU UUIDs (`GPU-...`, any unique prefix) or MIG instances (`MIG-...`); devices are
enumerated in the list's order; an invalid entry hides itself and every entry after it; an empty value
hides every GPU.

Plain data in, plain data out: the rules (the default launch group) and autoconf (placement, check) use it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from topoctl.snapshot_view import SnapshotView

PCI_BUS_ID_ORDER = "PCI_BUS_ID"
VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
DEVICE_ORDER = "CUDA_DEVICE_ORDER"


def _bus_key(bus_id: Any) -> tuple[int, ...] | None:
    """(domain, bus, device, function) of a PCI bus id such as `00000000:18:00.0` (NVML) or `0000:18:00.0`."""
    if not isinstance(bus_id, str):
        return None
    head, _, function = bus_id.strip().rpartition(".")
    parts = head.split(":")
    if len(parts) == 2:
        parts = ["0", *parts]
    try:
        return tuple(int(part, 16) for part in (*parts, function)) if len(parts) == 3 else None
    except ValueError:
        return None


def pci_order(snapshot: dict[str, Any]) -> list[int]:
    """The snapshot's GPU indices in ascending PCI bus id order: CUDA's device order under
    CUDA_DEVICE_ORDER=PCI_BUS_ID. GPUs whose bus id is unknown come last, by index. A snapshot without a GPU
    list but with a GPU count gives 0..count-1."""
    view = SnapshotView(snapshot)
    gpus = view.indexed_gpus
    if not gpus:
        count = view.summary_gpu_count
        return list(range(count)) if count is not None and count > 0 else []

    def key(gpu: dict[str, Any]) -> tuple[int, tuple[int, ...], int]:
        bus = _bus_key(gpu.get("pci_bus_id"))
        return (0, bus, gpu["index"]) if bus is not None else (1, (), gpu["index"])
    return [gpu["index"] for gpu in sorted(gpus, key=key)]


def indices_match_pci_order(snapshot: dict[str, Any]) -> bool:
    """Whether NVML's indices already are the PCI bus order (then the ids topoctl writes equal them)."""
    order = pci_order(snapshot)
    return order == sorted(order)


def visible_devices_value(gpus: "tuple[int, ...] | list[int]", snapshot: dict[str, Any]) -> str:
    """The CUDA_VISIBLE_DEVICES value (meant with CUDA_DEVICE_ORDER=PCI_BUS_ID) naming these snapshot GPUs in the
    order given: CUDA enumerates the list in its order, and SGLang gives ranks out in that order (replica d of
    a data-parallel launch takes devices d*tp ... d*tp+tp-1)."""
    order = pci_order(snapshot)
    position = {index: place for place, index in enumerate(order)}
    missing = [index for index in gpus if index not in position]
    if missing:
        raise ValueError(f"GPU(s) {missing} are not in the snapshot")
    return ",".join(str(position[index]) for index in gpus)


@dataclass
class VisibleGroup:
    """What a CUDA_VISIBLE_DEVICES value leaves visible, as snapshot GPU indices in CUDA's order.

    `gpus` is None when the value cannot be mapped onto the snapshot (MIG instances, a UUID the snapshot
    does not know, integer ids under an order topoctl cannot reproduce); `reason` says why, `notes` what was
    assumed or dropped."""

    gpus: tuple[int, ...] | None
    reason: str = ""
    notes: list[str] = field(default_factory=list)


def _same_gpus(snapshot: dict[str, Any]) -> bool:
    kinds = {(gpu.get("name"), gpu.get("compute_capability")) for gpu in SnapshotView(snapshot).indexed_gpus}
    return len(kinds) <= 1 and None not in {name for name, _ in kinds}


def parse_visible_devices(value: str, snapshot: dict[str, Any], device_order: str | None,
                          devices: list[int] | None = None) -> VisibleGroup:
    """The snapshot GPUs a CUDA_VISIBLE_DEVICES value makes visible, read as CUDA does (see the module text).

    Integer ids are positions in PCI bus order when CUDA_DEVICE_ORDER=PCI_BUS_ID. Under the default
    FASTEST_FIRST order the same holds only when every GPU is the same model (nothing to order them by);
    with mixed GPUs the mapping is unknown (gpus None). `devices`: the GPUs CUDA can see at all, in its order
    (a container given some of the GPUs); default every GPU of the snapshot."""
    order = list(devices) if devices is not None else pci_order(snapshot)
    uuids = {str(gpu.get("uuid")): gpu["index"] for gpu in SnapshotView(snapshot).indexed_gpus
             if gpu.get("uuid") and gpu["index"] in order}
    ordered_by_bus = str(device_order or "").strip().upper() == PCI_BUS_ID_ORDER
    notes: list[str] = []
    chosen: list[int] = []
    for raw in str(value).split(","):
        entry = raw.strip()
        if entry.upper().startswith("MIG-"):
            return VisibleGroup(None, f"{VISIBLE_DEVICES} names a MIG instance ({entry}): topoctl cannot map MIG "
                                      "instances onto the snapshot's GPUs")
        if entry.upper().startswith("GPU-"):
            matches = [index for uuid, index in uuids.items() if uuid.lower().startswith(entry.lower())]
            if len(matches) != 1:
                return VisibleGroup(None, f"{VISIBLE_DEVICES} entry {entry!r} matches "
                                          f"{'no GPU' if not matches else 'several GPUs'} of the snapshot by UUID")
            index = matches[0]
        else:
            try:
                position = int(entry)
            except ValueError:
                position = -1
            if not 0 <= position < len(order):
                if entry:
                    notes.append(f"{VISIBLE_DEVICES} entry {entry!r} is not a device: CUDA hides it and every "
                                 "entry after it")
                break
            if not ordered_by_bus and not _same_gpus(snapshot):
                return VisibleGroup(None, f"{VISIBLE_DEVICES}={value} uses integer ids without "
                                          f"{DEVICE_ORDER}={PCI_BUS_ID_ORDER} on a machine with different GPU "
                                          "models: CUDA's default order (fastest first) cannot be reproduced")
            index = order[position]
        if index in chosen:
            notes.append(f"{VISIBLE_DEVICES} names GPU {index} twice")
            continue
        chosen.append(index)
    if chosen and not ordered_by_bus and any(entry.strip().isdigit() for entry in str(value).split(",")):
        notes.append(f"integer ids read in PCI bus order ({DEVICE_ORDER} is not {PCI_BUS_ID_ORDER}; every GPU is "
                     "the same model, so CUDA's fastest-first order has nothing to tell them apart by)")
    return VisibleGroup(tuple(chosen), notes=notes)


def first_gpus(snapshot: dict[str, Any], count: int) -> tuple[int, ...]:
    """The GPUs a launch without CUDA_VISIBLE_DEVICES runs on: CUDA devices 0..count-1 (PCI bus order)."""
    return tuple(pci_order(snapshot)[:max(count, 0)])


def container_devices(ids: list[str], snapshot: dict[str, Any]) -> tuple[list[int] | None, str]:
    """The snapshot GPUs a container is given by `docker run --gpus device=...` / NVIDIA_VISIBLE_DEVICES (host
    GPU indices as nvidia-smi numbers them, i.e. NVML's, or UUIDs; NVIDIA Container Toolkit, "Specialized
    Configurations with Docker"), in the order CUDA inside sees them (PCI bus order); (None, why) when an id
    names no GPU of the snapshot."""
    gpus = SnapshotView(snapshot).indexed_gpus
    by_index = {gpu["index"] for gpu in gpus}
    uuids = {str(gpu.get("uuid")).lower(): gpu["index"] for gpu in gpus if gpu.get("uuid")}
    chosen: set[int] = set()
    for raw in ids:
        entry = str(raw).strip()
        if entry.isdigit() and int(entry) in by_index:
            chosen.add(int(entry))
            continue
        matches = [index for uuid, index in uuids.items() if entry.lower().startswith("gpu-") and uuid.startswith(entry.lower())]
        if len(matches) != 1:
            return None, f"the launch is given GPU {entry!r}, which names no single GPU of the snapshot"
        chosen.add(matches[0])
    return [index for index in pci_order(snapshot) if index in chosen], ""


@dataclass
class ProbeVisible:
    """What CUDA could see where the snapshot was taken (the probe records `cuda_visible_devices` when
    CUDA_VISIBLE_DEVICES was set): the snapshot GPUs in CUDA's order, and one line saying so."""

    gpus: tuple[int, ...]
    text: str


def probe_visible(snapshot: dict[str, Any]) -> ProbeVisible | None:
    """The GPUs CUDA sees on the target, when the snapshot says CUDA sees fewer (or others) than NVML; None
    when it does not say (CUDA_VISIBLE_DEVICES was not set at probe time).

    The recorded value is read as check reads a launch's own CUDA_VISIBLE_DEVICES (parse_visible_devices, with
    the recorded CUDA_DEVICE_ORDER), so both commands count the same GPUs; when that cannot map it (MIG
    instances, integer ids on mixed GPUs without PCI_BUS_ID), the probe's own mapping (`cuda_devices[].gpu`) is
    used."""
    recorded = snapshot.get("cuda_visible_devices") if isinstance(snapshot, dict) else None
    if not isinstance(recorded, dict) or not isinstance(recorded.get("value"), str):
        return None
    value = recorded["value"]
    group = parse_visible_devices(value, snapshot, recorded.get("device_order")) if value.strip() else VisibleGroup(())
    gpus = group.gpus
    if gpus is None:
        devices = recorded.get("cuda_devices") or []
        gpus = tuple(d["gpu"] for d in devices if isinstance(d, dict) and isinstance(d.get("gpu"), int)
                     and not isinstance(d.get("gpu"), bool))
    order = pci_order(snapshot)
    gpus = tuple(index for index in gpus if index in order)
    shown = ",".join(str(index) for index in gpus) or "none"
    text = (f"CUDA sees {len(gpus)} of the {len(order)} GPUs ({VISIBLE_DEVICES}={value!r} when the snapshot was "
            f"taken): GPUs {shown}")
    return ProbeVisible(gpus, text)
