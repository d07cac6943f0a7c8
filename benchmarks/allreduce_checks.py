"""Predicted vs published per-call allreduce latency: the launch model against public single-node measurements.

    .venv/bin/python benchmarks/allreduce_checks.py [DATA.yaml]

Reads the published points (default benchmarks/data/public-allreduce.yaml: each source with its URL, GPU,
GPU count, path, method and [message bytes, us] points), asks the launch model for the same path, message
size and world size on the named built-in system (autoconf/launch_model.py Latencies: the same function
`recommend` uses), and prints the table quoted in docs/launch-model.md. Exit 1 when a ratio falls outside
the data file's band (the check's acceptance), 2 on a data file it cannot use.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from topoctl.autoconf import launch_model
from topoctl.autoconf.data_files import read_yaml
from topoctl.catalogue import system_snapshot
from topoctl.errors import TopoctlError

DEFAULT_DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "public-allreduce.yaml")
REQUIRED = ("id", "url", "gpu", "system", "world", "path", "timing", "method", "points")


@dataclass
class Row:
    source: str
    url: str
    gpu: str
    world: int
    path: str
    timing: str
    method: str
    message_bytes: int
    published_us: float
    predicted_us: float
    level: str

    @property
    def ratio(self) -> float:
        return self.predicted_us / self.published_us


def load(path: str) -> dict[str, Any]:
    """The data file, checked for what every source must state."""
    try:
        data = read_yaml(path)
    except OSError as exc:
        raise TopoctlError(f"cannot read {path}: {exc.strerror}", hint="give the path of a published-points YAML file") from exc
    if not isinstance(data, dict) or not isinstance(data.get("sources"), list) or not data["sources"]:
        raise TopoctlError(f"{path}: no `sources` list", hint="see benchmarks/data/public-allreduce.yaml for the form")
    for index, source in enumerate(data["sources"]):
        missing = [key for key in REQUIRED if not isinstance(source, dict) or key not in source]
        if missing:
            raise TopoctlError(f"{path}: source {index + 1} lacks {', '.join(missing)}",
                               hint="each source states its URL, GPU, system, world size, path, method and points")
        for point in source["points"]:
            if not (isinstance(point, list) and len(point) == 2 and all(isinstance(v, (int, float)) for v in point)
                    and point[1] > 0):
                raise TopoctlError(f"{path}: source {source['id']}: point {point!r} is not [bytes, us]",
                                   hint="write each point as [message bytes, latency in microseconds]")
    return data


def rows(data: dict[str, Any]) -> list[Row]:
    """One row per published point, with the model's latency for the same configuration."""
    out: list[Row] = []
    latencies: dict[str, launch_model.Latencies] = {}
    for source in data["sources"]:
        system = str(source["system"])
        if system not in latencies:
            latencies[system] = launch_model.Latencies(system_snapshot(system))
        world = int(source["world"])
        for size, published in source["points"]:
            predicted, level, _ = latencies[system].latency(str(source["path"]), float(size), world)
            out.append(Row(str(source["id"]), str(source["url"]), " ".join(str(source["gpu"]).split()), world,
                           str(source["path"]), str(source["timing"]), " ".join(str(source["method"]).split()),
                           int(size),
                           float(published), predicted, level))
    return out


def size_text(size: int) -> str:
    if size >= 1024 ** 2 and size % (1024 ** 2) == 0:
        return f"{size // 1024 ** 2} MiB"
    if size >= 1024 and size % 1024 == 0:
        return f"{size // 1024} KiB"
    return f"{size} B"


def outside(table: list[Row], band: float) -> list[Row]:
    return [row for row in table if not 1 / band <= row.ratio <= band]


def render(table: list[Row], band: float) -> str:
    lines = ["| source | GPU | GPUs | path | timed | message | published (us) | predicted (us) | predicted / published |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in table:
        lines.append(f"| [{row.source}]({row.url}) | {row.gpu} | {row.world} | {row.path} | {row.timing} "
                     f"| {size_text(row.message_bytes)} "
                     f"| {row.published_us:.3g} | {row.predicted_us:.3g} ({row.level}) | {row.ratio:.2f} |")
    paths = sorted({row.path for row in table})
    summary = []
    for path in paths:
        ratios = [row.ratio for row in table if row.path == path]
        summary.append(f"{path}: {len(ratios)} points, ratio {min(ratios):.2f}-{max(ratios):.2f}")
    bad = outside(table, band)
    verdict = (f"all {len(table)} points within a factor of {band:g}" if not bad
               else f"{len(bad)} of {len(table)} points outside a factor of {band:g}")
    lines += ["", "; ".join(summary) + f"; {verdict}."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and args[0] in ("-h", "--help")):
        print(__doc__.strip())
        return 0 if args and args[0] in ("-h", "--help") else 2
    path = args[0] if args else DEFAULT_DATA
    try:
        data = load(path)
        table = rows(data)
    except TopoctlError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    band = float(data.get("band", 3.0))
    print(render(table, band))
    return 1 if outside(table, band) else 0


if __name__ == "__main__":
    sys.exit(main())
