"""Measurements as pictures: the P2P bandwidth heatmap and allreduce latency against message size
per path, from a snapshot's `measurements` (topoctl bench). Drawn with matplotlib, the optional
`plot` extra (`pip install '.[plot]'` from a clone of topoctl); nothing else in topoctl imports this
module, so show, recommend, check and rules never load matplotlib.

Why matplotlib: log-scaled axes, colour bars and SVG/PNG output are what it does well and is
maintained for; drawing them by hand would be more code to keep right than the extra costs a user
who wants pictures.

Layer: judge (docs/architecture.md, "Layers")."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from topoctl.core.errors import TopoctlError
from topoctl.snapshot.view import SnapshotLike, view_of

KINDS = ("p2p", "allreduce")
EXTRA_HINT = "pip install '.[plot]' in a clone of topoctl (or pip install matplotlib)"


@dataclass(frozen=True)
class Series:
    """One allreduce line: a path (and variant), eager or CUDA graph, its (bytes, median, p10, p90)
    points."""

    label: str
    points: tuple[tuple[int, float, float, float], ...]


def _pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend, or a one-line error naming the extra."""
    try:
        # Lazy: matplotlib is an optional extra and costs ~0.3 s to import; only `plot` and `report`
        # need it.
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TopoctlError(
            "plots need matplotlib, which is not installed", hint=EXTRA_HINT
        ) from None
    return plt


def have_matplotlib() -> bool:
    try:
        _pyplot()
    except TopoctlError:
        return False
    return True


def p2p_matrix(snapshot: SnapshotLike) -> tuple[list[int], list[list[float | None]]]:
    """The measured GPUs and, per ordered pair, one-way P2P bandwidth in GB/s (None: not measured or
    failed)."""
    rows = [row for row in view_of(snapshot).measurement_rows("p2p") if isinstance(row, dict)]
    gpus = sorted(
        {int(row[key]) for row in rows for key in ("src", "dst") if isinstance(row.get(key), int)}
    )
    where = {gpu: at for at, gpu in enumerate(gpus)}
    matrix: list[list[float | None]] = [[None] * len(gpus) for _ in gpus]
    for row in rows:
        value = (row.get("bandwidth_gbps") or {}).get("one_way")
        if (
            row.get("healthy")
            and isinstance(value, (int, float))
            and row.get("src") in where
            and row.get("dst") in where
        ):
            matrix[where[row["src"]]][where[row["dst"]]] = float(value)
    return gpus, matrix


def allreduce_series(snapshot: SnapshotLike) -> list[Series]:
    """The ok allreduce rows grouped by path (and variant) and CUDA graph, each sorted by message
    size."""
    grouped: dict[str, list[tuple[int, float, float, float]]] = {}
    for row in view_of(snapshot).allreduce_measurements():
        latency = row.get("latency_us") or {}
        if not isinstance(row.get("bytes"), int) or not isinstance(
            latency.get("median"), (int, float)
        ):
            continue
        label = str(row.get("path")) + (f"/{row['variant']}" if row.get("variant") else "")
        label += " (CUDA graph)" if row.get("cuda_graph") else " (eager)"
        median = float(latency["median"])
        grouped.setdefault(label, []).append(
            (
                row["bytes"],
                median,
                float(latency.get("p10", median)),
                float(latency.get("p90", median)),
            )
        )
    return [Series(label, tuple(sorted(points))) for label, points in grouped.items()]


def _title(snapshot: SnapshotLike, what: str) -> str:
    view = view_of(snapshot)
    measured = view.measurements or {}
    where = view.system_name or view.hostname or "machine"
    return (
        f"{where}: {what} ({measured.get('method') or 'topoctl bench'}, "
        f"{measured.get('measured_at') or '?'})"
    )


def _figure_bytes(figure: Any, fmt: str) -> bytes:
    buffer = io.BytesIO()
    # A fixed hash salt and no date keep the SVG the same for the same data (a picture can be
    # committed).
    figure.savefig(
        buffer, format=fmt, bbox_inches="tight", metadata={"Date": None} if fmt == "svg" else None
    )
    return buffer.getvalue()


def draw_p2p(snapshot: SnapshotLike, fmt: str = "svg") -> bytes:
    gpus, matrix = p2p_matrix(snapshot)
    if not any(value is not None for row in matrix for value in row):
        raise TopoctlError(
            "no measured P2P bandwidth in this snapshot (one GPU, or every pair failed)",
            hint="run `topoctl bench` on a machine with two or more GPUs, then plot its snapshot",
        )
    plt = _pyplot()
    plt.rcParams["svg.hashsalt"] = "topoctl"
    figure, axes = plt.subplots(figsize=(1.2 + 0.7 * len(gpus), 0.8 + 0.6 * len(gpus)))
    values = [[float("nan") if value is None else value for value in row] for row in matrix]
    image = axes.imshow(values, cmap="viridis")
    figure.colorbar(image, ax=axes, label="one-way GB/s")
    labels = [f"GPU{gpu}" for gpu in gpus]
    axes.set_xticks(range(len(gpus)), labels)
    axes.set_yticks(range(len(gpus)), labels)
    axes.set_xlabel("destination")
    axes.set_ylabel("source")
    for i, row in enumerate(matrix):
        for j, value in enumerate(row):
            text = "" if i == j else ("-" if value is None else f"{value:.0f}")
            axes.text(j, i, text, ha="center", va="center", color="white", fontsize=8)
    axes.set_title(_title(snapshot, "P2P bandwidth"), fontsize=9)
    data = _figure_bytes(figure, fmt)
    plt.close(figure)
    return data


def draw_allreduce(snapshot: SnapshotLike, fmt: str = "svg") -> bytes:
    series = allreduce_series(snapshot)
    if not series:
        raise TopoctlError(
            "no allreduce latency measured in this snapshot",
            hint="run `topoctl bench` on the GPUs, then plot its snapshot",
        )
    plt = _pyplot()
    plt.rcParams["svg.hashsalt"] = "topoctl"
    figure, axes = plt.subplots(figsize=(6.4, 4.0))
    for line in series:
        sizes = [point[0] for point in line.points]
        medians = [point[1] for point in line.points]
        spread = [
            [point[1] - point[2] for point in line.points],
            [point[3] - point[1] for point in line.points],
        ]
        axes.errorbar(
            sizes, medians, yerr=spread, marker="o", markersize=3, capsize=2, label=line.label
        )
    axes.set_xscale("log", base=2)
    axes.set_yscale("log")
    axes.set_xlabel("message size, bytes")
    axes.set_ylabel("latency per call, us (median, p10-p90)")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8)
    world = sorted(
        {
            size
            for row in view_of(snapshot).allreduce_measurements()
            if isinstance(size := row.get("world_size"), int)
        }
    )
    axes.set_title(
        _title(snapshot, f"allreduce, world size {'/'.join(map(str, world)) or '?'}"), fontsize=9
    )
    data = _figure_bytes(figure, fmt)
    plt.close(figure)
    return data


def draw(kind: str, snapshot: SnapshotLike, fmt: str) -> bytes:
    return draw_p2p(snapshot, fmt) if kind == "p2p" else draw_allreduce(snapshot, fmt)
