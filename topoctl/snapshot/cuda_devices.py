"""Which snapshot GPUs a CUDA_VISIBLE_DEVICES value names, and how to write one for a group of GPUs.

A snapshot numbers its GPUs by NVML's index (`gpus[].index`). CUDA numbers devices its own way, and
NVIDIA documents that the two need not agree ("The NVML index may not correlate with other APIs,
such as the CUDA device index", NVML nvmlDeviceGetHandleByIndex_v2). CUDA's own order is set by
CUDA_DEVICE_ORDER: `FASTEST_FIRST` (the default: fastest device first, by a heuristic) or
`PCI_BUS_ID` (ascending PCI bus id). So topoctl writes and reads integer ids as positions in
ascending PCI bus id order, and writes CUDA_DEVICE_ORDER=PCI_BUS_ID next to every
CUDA_VISIBLE_DEVICES it writes; that makes the ids mean the same GPUs to the CUDA runtime whatever
NVML's index order is. docs/recommend-and-check.md says the same for users.

CUDA_VISIBLE_DEVICES itself (CUDA Programming Guide, "CUDA Environment Variables"): a
comma-separated list of integer indices, GPU UUIDs (`GPU-...`, any unique prefix) or MIG instances
(`MIG-...`); devices are enumerated in the list's order; an invalid entry hides itself and every
entry after it; an empty value hides every GPU.

Plain data in, plain data out: the rules (the default launch group) and autoconf (placement, check)
use it.

Layer: snapshot (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from topoctl.snapshot.view import SnapshotLike, view_of

if TYPE_CHECKING:
    from topoctl.snapshot.shape import GpuEntry

PCI_BUS_ID_ORDER = "PCI_BUS_ID"
VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES"
DEVICE_ORDER = "CUDA_DEVICE_ORDER"


def _bus_key(bus_id: object) -> tuple[int, ...] | None:
    """(domain, bus, device, function) of a PCI bus id such as `00000000:18:00.0` (NVML) or
    `0000:18:00.0`."""
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


def pci_order(snapshot: SnapshotLike) -> list[int]:
    """The snapshot's GPU indices in ascending PCI bus id order: CUDA's device order under
    CUDA_DEVICE_ORDER=PCI_BUS_ID. GPUs whose bus id is unknown come last, by index. A snapshot
    without a GPU list but with a GPU count gives 0..count-1. Takes the snapshot or the view a
    caller already holds."""
    view = view_of(snapshot)
    gpus = view.indexed_gpus
    if not gpus:
        count = view.summary_gpu_count
        return list(range(count)) if count is not None and count > 0 else []

    def key(gpu: GpuEntry) -> tuple[int, tuple[int, ...], int]:
        bus = _bus_key(gpu.get("pci_bus_id"))
        return (0, bus, gpu["index"]) if bus is not None else (1, (), gpu["index"])

    return [gpu["index"] for gpu in sorted(gpus, key=key)]


def indices_match_pci_order(snapshot: SnapshotLike) -> bool:
    """Whether NVML's indices already are the PCI bus order (then the ids topoctl writes equal
    them)."""
    order = pci_order(snapshot)
    return order == sorted(order)


def visible_devices_value(gpus: "tuple[int, ...] | list[int]", snapshot: SnapshotLike) -> str:
    """The CUDA_VISIBLE_DEVICES value (meant with CUDA_DEVICE_ORDER=PCI_BUS_ID) naming these
    snapshot GPUs in the order given: CUDA enumerates the list in its order, and SGLang gives ranks
    out in that order (replica d of a data-parallel launch takes devices d*tp ... d*tp+tp-1)."""
    order = pci_order(snapshot)
    position = {index: place for place, index in enumerate(order)}
    missing = [index for index in gpus if index not in position]
    if missing:
        raise ValueError(f"GPU(s) {missing} are not in the snapshot")
    return ",".join(str(position[index]) for index in gpus)


@dataclass
class VisibleGroup:
    """What a CUDA_VISIBLE_DEVICES value leaves visible, as snapshot GPU indices in CUDA's order.

    `gpus` is None when the value cannot be mapped onto the snapshot (MIG instances, an ambiguous
    UUID prefix, a GPU named twice, integer ids under CUDA's default order); `reason` says why,
    `notes` what was dropped. `ended_at`/`why`: the entry at which CUDA ends the list (an invalid
    id), and why it is invalid. `order_unknown`: the ids are integers whose GPUs CUDA's default
    order does not define; `count` of them are valid (any `count` of the visible devices, in an
    unknown order)."""

    gpus: tuple[int, ...] | None
    reason: str = ""
    notes: list[str] = field(default_factory=list)
    ended_at: str | None = None
    why: str | None = None
    order_unknown: bool = False
    count: int = 0


FASTEST_FIRST_SOURCE = (
    "CUDA_DEVICE_ORDER=FASTEST_FIRST (the default) puts the fastest device first by a "
    "heuristic and leaves the order of the others unspecified (CUDA C Programming Guide, "
    '"CUDA Environment Variables"); nothing documents how it orders GPUs of one model'
)


def _bus_sorted(gpus: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    def key(gpu: Mapping[str, Any]) -> tuple[int, tuple[int, ...], int]:
        bus = _bus_key(gpu.get("pci_bus_id"))
        return (0, bus, gpu["index"]) if bus is not None else (1, (), gpu["index"])

    return sorted(gpus, key=key)


def resolve_visible(
    value: str,
    device_order: str | None,
    gpus: Sequence[Mapping[str, Any]],
    devices: list[int] | None = None,
) -> VisibleGroup:
    """The machine GPUs (snapshot indices, in CUDA's device order) a CUDA_VISIBLE_DEVICES value
    makes visible, or why that cannot be known. The one place topoctl reads the variable: the
    probe's record (probe/visible.py), check's launch group and recommend's placement all come here.

    `gpus`: the machine's GPUs as the snapshot lists them (`index`, `pci_bus_id`, `uuid`);
    `devices`: the GPUs CUDA can see at all before the variable applies (a container given some of
    them), in PCI bus order; default every GPU. Sources:

    - CUDA C Programming Guide, "CUDA Environment Variables"
      (docs.nvidia.com/cuda/cuda-programming-guide/ 05-appendices/environment-variables.html):
      unset, every device; empty, none; a comma-separated list of integer indices or GPU UUIDs
      (`GPU-...`, any prefix naming one GPU uniquely) or MIG instances (`MIG-...`), enumerated in
      the list's order; at an invalid index only the devices before it are visible (`0,2,-1,1` gives
      0 and 2).
    - Integer indices count in CUDA's own device order, which CUDA_DEVICE_ORDER sets: PCI_BUS_ID,
      ascending PCI bus id, the order nvidia-smi lists GPUs in; FASTEST_FIRST (the default), fastest
      first and the rest unspecified. The guide's "as determined by nvidia-smi" holds under
      PCI_BUS_ID: under the default, users and NVIDIA staff report `CUDA_VISIBLE_DEVICES=0`
      selecting the fastest GPU, not nvidia-smi's GPU 0 (github.com/NVIDIA/DIGITS/issues/1358,
      NVIDIA/nvidia-docker/issues/262, tensorflow/tensorflow/issues/152,
      gpustack/gpustack/issues/1633). NVML's index is not CUDA's ("The NVML index may not correlate
      with other APIs, such as the CUDA device index", nvmlDeviceGetIndex), so integer ids are never
      read as NVML indices.
    - A tie-break of FASTEST_FIRST among GPUs of one model (by PCI bus id) is claimed in third-party
      text (microsoft/onnxruntime pull 28066) but not in NVIDIA's documentation: integer ids under
      FASTEST_FIRST on more than one device are `order_unknown` (gpus None), never guessed.
    - A GPU named twice: the guide does not say what CUDA does; unknown (gpus None). Measured on a
      1x H200 (driver 580.159.04, CUDA 13.0 runtime;
      docs/real-hardware/h200-1x-vm-visible/visible-devices.json): `0,0` hid every GPU, while the
      GPU's UUID followed by `0` showed it once; one driver's answer, so it stays unknown here and
      the reason quotes it. A UUID no GPU of the snapshot has: unknown too (CUDA would end the list
      there, as it did on that machine, but the snapshot may be a built-in system whose UUIDs are
      not the target's).
    - Every answer this function gives was held against the CUDA runtime on that machine
      (scripts/real_visible_devices_check.py): 22 of 30 values named the GPUs CUDA enumerated, in
      its order, and the other 8 were unknown; none was wrong."""
    by_index = {gpu["index"]: gpu for gpu in gpus if isinstance(gpu.get("index"), int)}
    if devices is None:
        order = [gpu["index"] for gpu in _bus_sorted(list(by_index.values()))]
    else:
        order = [index for index in devices if index in by_index]
    by_bus = str(device_order or "").strip().upper() == PCI_BUS_ID_ORDER
    chosen: list[int] = []
    integers = 0
    ended_at: str | None = None
    why: str | None = None
    entries = [] if str(value).strip() == "" else str(value).split(",")
    for raw in entries:
        entry = raw.strip()
        if entry.upper().startswith("MIG-"):
            return VisibleGroup(
                None,
                f"{VISIBLE_DEVICES} names a MIG instance ({entry}): topoctl cannot map MIG "
                "instances onto the snapshot's GPUs",
            )
        if entry.upper().startswith("GPU-"):
            found = _uuid_entry(entry, order, by_index)
            if isinstance(found, VisibleGroup):
                return found
            index = found
        else:
            placed, why = _integer_entry(entry, order, by_bus)
            if placed is None:
                ended_at = entry
                break
            index = placed
            integers += index < 0
        if index in chosen:
            return VisibleGroup(
                None,
                f"{VISIBLE_DEVICES}={value} names a device twice ({entry}): CUDA's "
                "documentation does not say what a repeat does (on a 1x H200, driver "
                "580.159.04, `0,0` hid every GPU)",
            )
        chosen.append(index)
    notes = (
        [
            f"{VISIBLE_DEVICES} entry {ended_at!r} is invalid ({why}): CUDA hides it and every "
            "entry after it"
        ]
        if ended_at is not None
        else []
    )
    if integers:
        return VisibleGroup(
            None,
            f"{VISIBLE_DEVICES}={value} uses integer ids without {DEVICE_ORDER}="
            f"{PCI_BUS_ID_ORDER}: {FASTEST_FIRST_SOURCE}, so which GPUs they name is unknown",
            notes,
            ended_at,
            why,
            order_unknown=True,
            count=len(chosen),
        )
    return VisibleGroup(tuple(chosen), notes=notes, ended_at=ended_at, why=why)


def _uuid_entry(
    entry: str, order: list[int], by_index: Mapping[int, Mapping[str, Any]]
) -> int | VisibleGroup:
    """The GPU a `GPU-...` entry names by UUID prefix, or why it cannot be said (a VisibleGroup to
    return)."""
    matches = [
        i for i in order if str(by_index[i].get("uuid") or "").lower().startswith(entry.lower())
    ]
    if len(matches) > 1:
        return VisibleGroup(
            None,
            f"{VISIBLE_DEVICES} entry {entry!r} is a UUID prefix of several GPUs: "
            "CUDA's documentation asks for a prefix naming one GPU",
        )
    if (
        not matches
    ):  # invalid to CUDA on this machine, but a built-in system's UUIDs are not the target's
        return VisibleGroup(
            None, f"{VISIBLE_DEVICES} entry {entry!r} matches no GPU of the snapshot by UUID"
        )
    return matches[0]


def _integer_entry(entry: str, order: list[int], by_bus: bool) -> tuple[int | None, str | None]:
    """(the GPU an integer entry names, None) or (None, why CUDA ends the list here). Under
    FASTEST_FIRST with several devices the GPU is unknown: a negative placeholder, -1 - the device
    id, stands for it."""
    try:
        position = int(entry)
    except ValueError:
        return None, "not an index or a GPU UUID"
    if not 0 <= position < len(order):
        return None, f"no device {position} (CUDA has {len(order)})"
    if not by_bus and len(order) > 1:
        return -1 - position, None
    return order[position], None


def parse_visible_devices(
    value: str, snapshot: SnapshotLike, device_order: str | None, devices: list[int] | None = None
) -> VisibleGroup:
    """resolve_visible on a snapshot's GPUs (a snapshot without a GPU list: GPUs 0..count-1, no
    UUIDs)."""
    gpus = view_of(snapshot).indexed_gpus or [{"index": index} for index in pci_order(snapshot)]
    return resolve_visible(value, device_order, gpus, devices)


def first_gpus(snapshot: SnapshotLike, count: int) -> tuple[int, ...]:
    """The GPUs a launch without CUDA_VISIBLE_DEVICES runs on: CUDA devices 0..count-1 (PCI bus
    order)."""
    return tuple(pci_order(snapshot)[: max(count, 0)])


def container_devices(ids: list[str], snapshot: SnapshotLike) -> tuple[list[int] | None, str]:
    """The snapshot GPUs a container is given by `docker run --gpus device=...` /
    NVIDIA_VISIBLE_DEVICES (host GPU indices as nvidia-smi numbers them, i.e. NVML's, or UUIDs;
    NVIDIA Container Toolkit, "Specialized Configurations with Docker"), in the order CUDA inside
    sees them (PCI bus order); (None, why) when an id names no GPU of the snapshot."""
    gpus = view_of(snapshot).indexed_gpus
    by_index = {gpu["index"] for gpu in gpus}
    uuids = {str(gpu.get("uuid")).lower(): gpu["index"] for gpu in gpus if gpu.get("uuid")}
    chosen: set[int] = set()
    for raw in ids:
        entry = str(raw).strip()
        if entry.isdigit() and int(entry) in by_index:
            chosen.add(int(entry))
            continue
        matches = [
            index
            for uuid, index in uuids.items()
            if entry.lower().startswith("gpu-") and uuid.startswith(entry.lower())
        ]
        if len(matches) != 1:
            return (
                None,
                f"the launch is given GPU {entry!r}, which names no single GPU of the snapshot",
            )
        chosen.add(matches[0])
    return [index for index in pci_order(snapshot) if index in chosen], ""


@dataclass
class ProbeVisible:
    """What CUDA could see where the snapshot was taken (the probe records `cuda_visible_devices`
    when CUDA_VISIBLE_DEVICES was set): the snapshot GPUs in CUDA's order, and one line saying so.
    """

    gpus: tuple[int, ...]
    text: str
    known: bool = (
        True  # False: which GPUs CUDA sees is unknown (gpus is then every GPU, and text says why)
    )


def probe_visible(snapshot: SnapshotLike) -> ProbeVisible | None:
    """The GPUs CUDA sees on the target, when the snapshot says CUDA sees fewer (or others) than
    NVML; None when it does not say (CUDA_VISIBLE_DEVICES was not set at probe time).

    The recorded value is read by resolve_visible, with the recorded CUDA_DEVICE_ORDER, as check
    reads a launch's own CUDA_VISIBLE_DEVICES, so the probe, check and recommend count the same
    GPUs. When which GPUs it names is unknown (integer ids under CUDA's default order, MIG
    instances), every GPU is kept and the text says why."""
    snapshot = view_of(snapshot)
    recorded = snapshot.cuda_visible_devices
    if recorded is None:
        return None
    value = recorded.value
    group = parse_visible_devices(value, snapshot, recorded.device_order)
    order = pci_order(snapshot)
    if group.gpus is None:
        return ProbeVisible(
            tuple(order),
            one_line_text(
                f"{VISIBLE_DEVICES}={value!r} was set when the snapshot was taken, but which "
                "GPUs CUDA sees is unknown "
                f"({group.reason}); every GPU is considered: probe again with "
                f"{DEVICE_ORDER}={PCI_BUS_ID_ORDER} or "
                "with GPU UUIDs"
            ),
            known=False,
        )
    gpus = tuple(index for index in group.gpus if index in order)
    shown = ",".join(str(index) for index in gpus) or "none"
    text = (
        f"CUDA sees {len(gpus)} of the {len(order)} GPUs ({VISIBLE_DEVICES}={value!r} when the "
        f"snapshot was taken): GPUs {shown}"
    )
    return ProbeVisible(gpus, text)


def one_line_text(text: str) -> str:
    return " ".join(text.split())
