"""A small typed view of a validated snapshot, for readers: one way to ask for the GPU count, the
interconnect, the pairs of a group of GPUs, a software version or the measurements.

    view = SnapshotView(load_snapshot("machine.yaml"))
    view.gpu_count, view.interconnect, view.software("sglang"), view.pairs_of([0, 1])

The snapshot must have passed topoctl.snapshot.validate_snapshot (every loader does that), so the view reads
fields directly and never guesses; what the probe could not read is None.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from topoctl.vocab import SOFTWARE_KEYS


@dataclass(frozen=True)
class Pair:
    src: int
    dst: int
    p2p: dict[str, str]
    link: str | None
    nvlinks: int | None

    @property
    def p2p_ok(self) -> bool | None:
        """Read and write both OK (topoctl/p2p.py): True, False, or None when unknown."""
        from topoctl.p2p import pair_p2p_ok

        return pair_p2p_ok(self.p2p)


class SnapshotView:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    @property
    def gpu_count(self) -> int:
        return len(self.data["gpus"])  # the loader holds summary.gpu_count to it

    @property
    def interconnect(self) -> str | None:
        return self.data["summary"].get("interconnect")

    @property
    def gpu_names(self) -> list[str]:
        names = self.data["summary"].get("gpu_names")
        return list(names) if names else sorted({str(gpu.get("name")) for gpu in self.data["gpus"]})

    @property
    def system_name(self) -> str | None:
        return (self.data.get("source") or {}).get("name")

    def gpu(self, index: int) -> dict[str, Any]:
        return next(gpu for gpu in self.data["gpus"] if gpu["index"] == index)

    def pairs_of(self, group: Iterable[int]) -> list[Pair]:
        """Every ordered pair within `group` (GPU indices), in the snapshot's order."""
        members = set(group)
        return [Pair(p["src"], p["dst"], p["p2p"], p.get("link"), p.get("nvlinks")) for p in self.data["pairs"]
                if p["src"] in members and p["dst"] in members]

    def software(self, key: str) -> str | None:
        """A version from software.*; `key` must be one of topoctl.vocab.SOFTWARE_KEYS."""
        if key not in SOFTWARE_KEYS:
            raise KeyError(f"software key {key!r} is not one of {', '.join(SOFTWARE_KEYS)}")
        return self.data["software"].get(key)

    @property
    def measurements(self) -> dict[str, Any] | None:
        """snapshot.measurements (topoctl bench), or None when nothing was measured."""
        return self.data.get("measurements") or None

    def allreduce_measurements(self, path: str | None = None) -> list[dict[str, Any]]:
        """The allreduce rows with status ok (optionally of one path): the ones readers may rely on."""
        rows = (self.measurements or {}).get("allreduce") or []
        return [row for row in rows if isinstance(row, dict) and row.get("status") == "ok"
                and (path is None or row.get("path") == path)]
