"""Synthetic snapshots of N GPUs for the scaling benchmarks: copies of a reference system, side by side.

SYNTHETIC. No host holds 64 or 128 GPUs in one snapshot; these exist to measure how show, check and
recommend grow with the GPU count. A snapshot of N GPUs (N a multiple of the base system's GPU
count) is N / 8 copies of a reference system's snapshot (default fixtures/rtx-pro-6000-8x-pcie,
whose facts and sources its README lists): inside a copy every GPU and pair is the reference
system's, with its own PCI bus ids, UUIDs, root complexes and NUMA nodes (copy k owns nodes 2k and
2k+1); between copies a pair is SYS (across NUMA nodes) with P2P as the reference system's
cross-socket pairs report it. The snapshot passes topoctl's own validation (validate_snapshot), so
every command reads it as it would a probed one.

Usage: python benchmarks/large_snapshots.py N [-o FILE] [--base SYSTEM]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _base(name: str) -> dict[str, Any]:
    with open(os.path.join(ROOT, "fixtures", name, "snapshot.json"), encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def _cross_pair(base: dict[str, Any]) -> dict[str, Any]:
    """The reference system's pair with the slowest link: what a pair between two copies looks like."""
    order = {"NV": 0, "PIX": 1, "PXB": 2, "PHB": 3, "NODE": 4, "SYS": 5}
    return max(
        base["pairs"], key=lambda pair: order.get(str(pair.get("link"))[:4].rstrip("0123456789"), 6)
    )


def _gpu_copy(
    gpu: dict[str, Any], number: int, per_copy: int, numa_per_copy: int
) -> dict[str, Any]:
    out = copy.deepcopy(gpu)
    out["index"] = gpu["index"] + number * per_copy
    out["uuid"] = gpu["uuid"][:-4] + f"{number:04x}"
    domain = f"{number:04x}"
    out["pci_bus_id"] = "0000" + domain + gpu["pci_bus_id"][8:]
    if isinstance(gpu.get("numa_node"), int):
        out["numa_node"] = gpu["numa_node"] + number * numa_per_copy
    if isinstance(gpu.get("root_complex"), str):
        out["root_complex"] = gpu["root_complex"] + f"-{number}"
    return out


def synthetic_snapshot(gpu_count: int, base_name: str = "rtx-pro-6000-8x-pcie") -> dict[str, Any]:
    """An N-GPU snapshot built from copies of `base_name` (see the module text)."""
    base = _base(base_name)
    per_copy = len(base["gpus"])
    if gpu_count % per_copy or gpu_count < per_copy:
        raise SystemExit(
            f"{gpu_count} GPUs: use a multiple of {per_copy} ({base_name} has {per_copy})"
        )
    copies = gpu_count // per_copy
    numa_per_copy = max(1, int(base["host"].get("numa_nodes") or 1))
    data = copy.deepcopy(base)
    data["source"] = {
        "kind": "file",
        "name": f"synthetic-{gpu_count}x-{base_name}",
        "captured_at": base["source"].get("captured_at"),
        "synthetic": True,
    }
    data["host"]["numa_nodes"] = numa_per_copy * copies
    data["gpus"] = [
        _gpu_copy(gpu, number, per_copy, numa_per_copy)
        for number in range(copies)
        for gpu in base["gpus"]
    ]
    cross = _cross_pair(base)
    pairs = []
    for src in range(gpu_count):
        for dst in range(gpu_count):
            if src == dst:
                continue
            if src // per_copy == dst // per_copy:
                inner = next(
                    p
                    for p in base["pairs"]
                    if p["src"] == src % per_copy and p["dst"] == dst % per_copy
                )
                pairs.append(dict(inner, src=src, dst=dst))
            else:
                pairs.append(dict(copy.deepcopy(cross), src=src, dst=dst))
    data["pairs"] = pairs
    data["pcie"]["root_complexes"] = [
        dict(
            entry,
            id=entry["id"] + f"-{number}",
            numa_node=entry["numa_node"] + number * numa_per_copy,
            gpus=[index + number * per_copy for index in entry["gpus"]],
        )
        for number in range(copies)
        for entry in base["pcie"]["root_complexes"]
    ]
    summary = data["summary"]
    summary["gpu_count"] = gpu_count
    summary["root_complex_groups"] = [entry["gpus"] for entry in data["pcie"]["root_complexes"]]
    summary["numa_nodes_spanned"] = numa_per_copy * copies
    summary["p2p_pairs_total"] = len(pairs)
    summary["p2p_pairs_ok"] = (
        len(pairs) if summary.get("all_pairs_p2p") else summary.get("p2p_pairs_ok")
    )
    if (
        isinstance(data["nvlink"].get("switch_links_per_gpu"), dict)
        and data["nvlink"]["switch_links_per_gpu"]
    ):
        links = data["nvlink"]["switch_links_per_gpu"]
        data["nvlink"]["switch_links_per_gpu"] = {
            str(gpu["index"]): links[str(gpu["index"] % per_copy)] for gpu in data["gpus"]
        }
    data["unknown"] = {}
    return data


def write_snapshot(gpu_count: int, path: str, base_name: str = "rtx-pro-6000-8x-pcie") -> str:
    """Write the N-GPU snapshot to `path` (compact JSON: the 16 MiB snapshot limit holds more GPUs)."""
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(synthetic_snapshot(gpu_count, base_name), handle, separators=(",", ":"))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gpus", type=int)
    parser.add_argument("-o", "--output", default="-")
    parser.add_argument("--base", default="rtx-pro-6000-8x-pcie")
    args = parser.parse_args(argv)
    if args.output == "-":
        json.dump(synthetic_snapshot(args.gpus, args.base), sys.stdout, separators=(",", ":"))
    else:
        write_snapshot(args.gpus, args.output, args.base)
    return 0


if __name__ == "__main__":
    sys.exit(main())
