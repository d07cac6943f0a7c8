"""The judge stage of check, drift: what changed on the target machine since the snapshot a launch
was made for (`topoctl check --expect SNAPSHOT`).

Layer: judge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from topoctl.check.outcome import Item
from topoctl.core.errors import one_line
from topoctl.core.vocab import Severity
from topoctl.snapshot.view import SnapshotLike, SnapshotView, view_of


def drift(expected: SnapshotLike, actual: SnapshotLike) -> list[Item]:
    """What changed on the target machine since the snapshot the launch was made for."""
    before, after = view_of(expected), view_of(actual)
    return (
        _gpu_items(before, after)
        + _p2p_items(before, after)
        + _link_items(before, after)
        + _software_items(before, after)
    )


def _gpu_items(before_view: SnapshotView, after_view: SnapshotView) -> list[Item]:
    items: list[Item] = []
    e_count, a_count = before_view.gpu_count, after_view.gpu_count
    if e_count != a_count:
        items.append(
            Item(
                "drift-gpu-count",
                Severity.BLOCK,
                "GPU count changed",
                f"expected {e_count} GPUs, the machine has {a_count}",
                "recommend again for this machine",
            )
        )
    e_names, a_names = before_view.gpu_model_names, after_view.gpu_model_names
    if e_names != a_names and e_count == a_count:
        items.append(
            Item(
                "drift-gpu-model",
                Severity.BLOCK,
                "GPU model changed",
                one_line(
                    f"expected {', '.join(sorted(set(e_names)))}, found "
                    f"{', '.join(sorted(set(a_names)))}"
                ),
                "recommend again for this machine",
            )
        )
    return items


def _pairs_text(pairs: list[tuple[int, int]]) -> str:
    return ", ".join(f"{a}->{b}" for a, b in pairs[:6]) + (" ..." if len(pairs) > 6 else "")


def _p2p_items(before_view: SnapshotView, after_view: SnapshotView) -> list[Item]:
    items: list[Item] = []
    before, after = (
        before_view.pair_p2p_ok,
        after_view.pair_p2p_ok,
    )  # None: "unknown"/NVML's U, not verified
    lost = sorted(pair for pair, ok in before.items() if ok and after.get(pair) is False)
    unverified = sorted(
        pair for pair, ok in before.items() if ok and pair in after and after[pair] is None
    )
    missing = sorted(pair for pair, ok in before.items() if ok and pair not in after)
    if lost:
        items.append(
            Item(
                "drift-p2p-lost",
                Severity.BLOCK,
                "P2P lost",
                f"P2P read/write no longer OK for {len(lost)} pair(s): {_pairs_text(lost)}",
                "check IOMMU/ACS and the driver; recommend again",
            )
        )
    if unverified or (missing and after and not lost):
        what = []
        if unverified:
            what.append(
                f"{len(unverified)} pair(s) that had P2P now have an unknown read/write status: "
                f"{_pairs_text(unverified)}"
            )
        if missing:
            what.append(f"{len(missing)} pair(s) that had P2P are missing from the target snapshot")
        items.append(
            Item(
                "drift-p2p-unknown",
                Severity.WARN,
                "P2P not verifiable",
                "; ".join(what),
                "probe again (topoctl probe); if NVML keeps answering U, check the driver and "
                "IOMMU/ACS",
            )
        )
    return items


def _link_items(before_view: SnapshotView, after_view: SnapshotView) -> list[Item]:
    items: list[Item] = []
    e_gpus = before_view.gpus_by_index
    for gpu in after_view.indexed_gpus:
        before_gpu = e_gpus.get(gpu["index"])
        if not before_gpu:
            continue
        bp, ap = before_gpu.get("pcie") or {}, gpu.get("pcie") or {}
        for field_name, label in (("current_width", "width x"), ("current_gen", "gen ")):
            b, a = bp.get(field_name), ap.get(field_name)
            if isinstance(b, int) and isinstance(a, int) and a < b:
                items.append(
                    Item(
                        "drift-link-downtrained",
                        Severity.WARN,
                        "PCIe link down-trained",
                        f"GPU {gpu.get('index')}: PCIe {label}{a}, was {label}{b}",
                        "reseat the card or check the riser; expect slower allreduce",
                    )
                )
        bn, an = (
            (before_gpu.get("nvlink") or {}).get("active_links"),
            (gpu.get("nvlink") or {}).get("active_links"),
        )
        if isinstance(bn, int) and isinstance(an, int) and an < bn:
            items.append(
                Item(
                    "drift-nvlink-down",
                    Severity.BLOCK,
                    "NVLink links down",
                    f"GPU {gpu.get('index')}: {an} active NVLinks, was {bn}",
                    "check the fabric; recommend again",
                )
            )
    return items


def _software_items(before_view: SnapshotView, after_view: SnapshotView) -> list[Item]:
    items: list[Item] = []
    if before_view.interconnect != after_view.interconnect:
        items.append(
            Item(
                "drift-interconnect",
                Severity.BLOCK,
                "interconnect changed",
                one_line(f"expected {before_view.interconnect}, found {after_view.interconnect}"),
                "recommend again for this machine",
            )
        )
    for key, label in (
        ("driver", "driver"),
        ("cuda_driver", "CUDA (driver)"),
        ("nccl", "NCCL"),
        ("sglang", "SGLang"),
        ("torch", "torch"),
    ):
        b, a = before_view.software(key), after_view.software(key)
        if b != a and b is not None:
            items.append(
                Item(
                    f"drift-{key.replace('_', '-')}-version",
                    Severity.WARN,
                    f"{label} version changed",
                    one_line(f"{label} {b} -> {a}"),
                    "re-run `topoctl recommend` and re-test the launch",
                )
            )
    return items
