"""What a machine answers to SGLang's hardware queries, read from a topoctl snapshot.

SGLang asks torch and NVML for the GPU count, compute capability, name and memory, and asks whether
each pair of GPUs can reach each other over P2P and whether they are all joined by NVLink. The
oracle answers those questions from a snapshot (fixtures/<system>/snapshot.json), so a release's own
code decides as it would on that machine. Plain data: it crosses from the generator to the
per-release process as JSON.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Hardware:
    system: str
    gpu_count: int
    sm: int  # major * 10 + minor, e.g. 90
    name: str
    memory_mib: int
    p2p: bool  # every pair of GPUs can read and write each other over P2P
    nvlink_all: bool  # every pair is joined by NVLink (directly or through NVSwitch)
    nvswitch: bool
    flashinfer: str | None  # the installed FlashInfer release, None when not installed

    @property
    def sm_major(self) -> int:
        return self.sm // 10

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Hardware":
        return cls(**data)


def _pairs_ok(snapshot: dict[str, Any]) -> bool:
    pairs = snapshot.get("pairs") or []
    return bool(pairs) and all(
        (p.get("p2p") or {}).get("read") == "OK" and (p.get("p2p") or {}).get("write") == "OK"
        for p in pairs
    )


def from_snapshot(snapshot: dict[str, Any], flashinfer: str | None) -> Hardware:
    """The answers a snapshot gives; `flashinfer`: the FlashInfer release installed with SGLang (its
    pin)."""
    gpus = snapshot.get("gpus") or []
    summary = snapshot.get("summary") or {}
    nvlink = snapshot.get("nvlink") or {}
    first = gpus[0] if gpus else {}
    count = len(gpus)
    return Hardware(
        system=str((snapshot.get("source") or {}).get("name") or "snapshot"),
        gpu_count=count,
        sm=int(first.get("sm") or 0),
        name=str(first.get("name") or ""),
        memory_mib=int((first.get("memory_total_bytes") or 0) // (1 << 20)),
        p2p=count <= 1 or _pairs_ok(snapshot),
        nvlink_all=count > 1 and bool(summary.get("nvlink_all_pairs")),
        nvswitch=bool(nvlink.get("nvswitch")),
        flashinfer=flashinfer,
    )


def load_system(fixtures: Path, name: str, flashinfer: str | None) -> Hardware:
    with open(fixtures / name / "snapshot.json", encoding="utf-8") as handle:
        return from_snapshot(json.load(handle), flashinfer)
