"""GPU facts the launch model needs beyond the snapshot: memory bandwidth (bytes/s) per GPU model.

Memory size comes from the snapshot (`gpus[].memory_total_bytes`, what NVML reports). Bandwidth is a
datasheet number, kept in data/costs.yaml `gpu_bandwidth` with its source, behind this one function so that
a shared GPU table can replace it in one place.
"""
from __future__ import annotations

from typing import Any

from topoctl.autoconf.data_files import load


def gpu_bandwidth(name: str | None) -> tuple[float, str] | None:
    """(memory bandwidth in bytes/s, source) for an NVML GPU name; None when the table has no entry."""
    if not name:
        return None
    table = load("costs.yaml").get("gpu_bandwidth") or {}
    lowered = str(name).lower()
    best: tuple[int, dict[str, Any]] | None = None
    for entry in table.values():
        for match in entry.get("match") or ():
            if str(match).lower() in lowered and (best is None or len(match) > best[0]):
                best = (len(match), entry)
    if best is None:
        return None
    entry = best[1]
    return float(entry["bytes_per_s"]), str(entry.get("source"))


def target_gpu(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The first GPU's name, memory and bandwidth (a launch runs on GPUs of one model)."""
    gpus = snapshot.get("gpus") or [{}]
    first = gpus[0] if isinstance(gpus[0], dict) else {}
    name = first.get("name")
    memory = first.get("memory_total_bytes")
    bandwidth = gpu_bandwidth(name)
    return {"name": name, "memory_bytes": int(memory) if isinstance(memory, (int, float)) and memory > 0 else None,
            "bandwidth": bandwidth[0] if bandwidth else None,
            "bandwidth_source": bandwidth[1] if bandwidth else "no bandwidth known for this GPU"}
