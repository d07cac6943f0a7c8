"""The per-op rows `topoctl bench --decode-step` measured on this box (snapshot
measurements.decode_ops, probe/bench/decode_ops.py), as the composed step reads them: a GEMM of the
same dtype, N and K with M inside the measured token counts is answered from them before any
reference row (step_ops.gemm); outside that range the reference row stays, so a measured row is never
stretched.

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

GemmKey = tuple[str, int, int]  # (table dtype, N, K)


@dataclass(frozen=True)
class MeasuredAnswer:
    us: float
    source: str


@dataclass(frozen=True)
class MeasuredOps:
    """GEMM times by (dtype, N, K): the token counts measured and the median time at each."""

    gemms: Mapping[GemmKey, tuple[tuple[int, float], ...]]
    device: str

    def gemm(self, dtype: str, m: int, n: int, k: int) -> MeasuredAnswer | None:
        points = self.gemms.get((dtype, n, k))
        if not points or not points[0][0] <= m <= points[-1][0]:
            return None
        ms = [p[0] for p in points]
        at = next(i for i, measured in enumerate(ms) if measured >= m)  # inside the rows: found
        where = f"[{n}x{k}] {dtype}, M={m}"
        if ms[at] == m:
            return MeasuredAnswer(points[at][1], f"{self._origin()}: {where}")
        (m0, t0), (m1, t1) = points[at - 1], points[at]
        us = t0 + (t1 - t0) * (m - m0) / (m1 - m0)
        return MeasuredAnswer(
            us, f"{self._origin()}: {where} (between the rows of M={m0} and M={m1})"
        )

    def _origin(self) -> str:
        return f"topoctl bench --decode-step on {self.device}"


def _median(values: list[float]) -> float:
    """statistics.median without importing statistics (recommend's start-up budget)."""
    ordered, half = sorted(values), len(values) // 2
    return ordered[half] if len(values) % 2 else (ordered[half - 1] + ordered[half]) / 2


def _parsed(row: object) -> tuple[GemmKey, int, float, str] | None:
    """(key, M, us, device) of a usable row: a GEMM timed in a CUDA graph, status ok."""
    if not isinstance(row, dict) or row.get("status", "ok") != "ok" or row.get("kind") != "gemm":
        return None
    m, n, k, us = row.get("m"), row.get("n"), row.get("k"), row.get("us")
    numbers = (int, float)
    if not row.get("cuda_graph") or not (
        isinstance(m, numbers)
        and isinstance(n, numbers)
        and isinstance(k, numbers)
        and isinstance(us, numbers)
    ):
        return None
    key = (str(row.get("gemm_dtype")), int(n), int(k))
    return key, int(m), float(us), str(row.get("device") or "this machine")


def from_rows(rows: Iterable[object]) -> MeasuredOps | None:
    """The measured GEMMs of the snapshot's decode_ops rows (rows of the same shape from two models
    give their median); None when there are none."""
    times: dict[GemmKey, dict[int, list[float]]] = {}
    devices: set[str] = set()
    for row in rows:
        parsed = _parsed(row)
        if parsed is None:
            continue
        key, m, us, device = parsed
        times.setdefault(key, {}).setdefault(m, []).append(us)
        devices.add(device)
    if not times:
        return None
    gemms = {
        key: tuple((m, _median(ts)) for m, ts in sorted(by_m.items()))
        for key, by_m in times.items()
    }
    return MeasuredOps(gemms, ", ".join(sorted(devices)))
