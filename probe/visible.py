"""Which GPUs CUDA will see under CUDA_VISIBLE_DEVICES, and as which CUDA device ids.

NVML ignores CUDA_VISIBLE_DEVICES: the probe sees (and the snapshot lists) every GPU of the machine. A launch
started with the variable set sees only the GPUs it names, renumbered cuda:0, cuda:1, ... in the order named.
The rules, as the CUDA Programming Guide states them (13.x, appendix "CUDA Environment Variables",
docs.nvidia.com/cuda/cuda-programming-guide/05-appendices/environment-variables.html):

- unset: every GPU is visible; set to an empty string: none is;
- a comma-separated sequence of integer indices (nvidia-smi's, which are NVML's) or GPU UUIDs (`GPU-...`, any
  prefix that names one GPU uniquely), enumerated in the order given;
- at the first invalid entry the list ends: only the GPUs named before it are visible;
- `MIG-...` names a MIG instance (not resolved to a GPU here: the probe does not enumerate MIG instances).

A GPU named twice is not covered by that text; topoctl treats the repeat like an invalid entry (the list ends)
and says so, rather than guess. This is a pure function of the variable and the GPUs' indices and UUIDs.
"""
from __future__ import annotations

from typing import Any

ENV_NAMES = ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER")


def cuda_visible(value: str, gpus: list[dict[str, Any]]) -> dict[str, Any]:
    """{"value", "cuda_devices": [{"cuda": k, "gpu": index|None, "id": entry}], "hidden": [indices],
    "ended_at": entry|None, "why": str|None}."""
    indices = {gpu["index"] for gpu in gpus}
    devices: list[dict[str, Any]] = []
    seen: set[int] = set()
    ended_at = why = None
    entries = [] if value.strip() == "" else value.split(",")
    for entry in entries:
        text = entry.strip()
        gpu: int | None = None
        if text.startswith("MIG-"):
            devices.append({"cuda": len(devices), "gpu": None, "id": text})
            continue
        if text.startswith("GPU-"):
            matches = [g["index"] for g in gpus if isinstance(g.get("uuid"), str) and g["uuid"].startswith(text)]
            if len(matches) != 1:
                ended_at, why = text, ("no GPU has this UUID" if not matches else "this UUID prefix names several GPUs")
                break
            gpu = matches[0]
        else:
            try:
                number = int(text)
            except ValueError:
                ended_at, why = text, "not an index or a GPU UUID"
                break
            if number not in indices:
                ended_at, why = text, "no GPU has this index"
                break
            gpu = number
        if gpu in seen:
            ended_at, why = text, "this GPU is named twice (CUDA's documentation does not say what a repeat does)"
            break
        seen.add(gpu)
        devices.append({"cuda": len(devices), "gpu": gpu, "id": text})
    return {"value": value, "cuda_devices": devices, "hidden": sorted(indices - seen),
            "ended_at": ended_at, "why": why}


def describe(visible: dict[str, Any], gpu_count: int) -> str:
    """One line for people: what NVML saw and what CUDA will see."""
    mapped = ", ".join(f"GPU{d['gpu']} as cuda:{d['cuda']}" if d["gpu"] is not None else f"{d['id']} as cuda:{d['cuda']}"
                       for d in visible["cuda_devices"]) or "no GPU"
    hidden = ", ".join(f"GPU{i}" for i in visible["hidden"]) or "none"
    line = (f"CUDA_VISIBLE_DEVICES={visible['value']!r}: the probe saw all {gpu_count} GPUs through NVML (the snapshot "
            f"lists them all); a CUDA program sees {mapped}; hidden from CUDA: {hidden}")
    if visible["ended_at"] is not None:
        line += f"; the list ends at {visible['ended_at']!r} ({visible['why']})"
    return line
