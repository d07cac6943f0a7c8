"""GPU facts the launch model needs: memory size (the snapshot's `gpus[].memory_total_bytes`, what NVML
reports; else the datasheet's) and memory bandwidth (the datasheet's, from topoctl/data/gpus.yaml through
topoctl.gpus.lookup, with its sources)."""
from __future__ import annotations

from typing import Any


def gpu_bandwidth(name: str | None) -> tuple[float, str] | None:
    """(memory bandwidth in bytes/s, source) for an NVML GPU name; None when the GPU table has no number."""
    from topoctl import gpus

    model = gpus.lookup(name) if name else None
    if model is None or not model.memory_bandwidth_gb_s:
        return None
    return float(model.memory_bandwidth_gb_s) * 1e9, f"topoctl/data/gpus.yaml {model.key}: {model.sources[0]}"


def target_gpu(snapshot: dict[str, Any]) -> dict[str, Any]:
    """The first GPU's name, memory and bandwidth (a launch runs on GPUs of one model)."""
    from topoctl import gpus
    from topoctl.snapshot_view import SnapshotView

    first = SnapshotView(snapshot).first_gpu
    name = first.get("name")
    memory = first.get("memory_total_bytes")
    memory_source = "snapshot gpus[0].memory_total_bytes"
    if not isinstance(memory, (int, float)) or isinstance(memory, bool) or memory <= 0:
        model = gpus.lookup(name) if name else None
        memory = model.memory_bytes if model else None
        memory_source = f"topoctl/data/gpus.yaml {model.key}" if model and memory else "unknown"
    bandwidth = gpu_bandwidth(name)
    return {"name": name, "memory_bytes": int(memory) if memory else None, "memory_source": memory_source,
            "bandwidth": bandwidth[0] if bandwidth else None,
            "bandwidth_source": bandwidth[1] if bandwidth else "no bandwidth known for this GPU"}
