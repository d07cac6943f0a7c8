"""Predicted vs published per-call allreduce latency: the launch model against public single-node measurements.

    .venv/bin/python benchmarks/allreduce_checks.py [DATA.yaml]

Reads the published points (default benchmarks/data/public-allreduce.yaml: each source with its URL, GPU,
GPU count, path, method and [message bytes, us] points), asks the launch model for the same path, message
size and world size on the named built-in system (autoconf/launch_model.py Latencies: the same function
`recommend` uses), and prints the table quoted in docs/launch-model.md. Exit 1 when a ratio falls outside
the data file's band and its source does not list it under `known_outside`, or when a listed point comes back
inside the band (the check's acceptance); 2 on a data file it cannot use.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from topoctl.autoconf import launch_model
from topoctl.autoconf.data_files import read_yaml
from topoctl.core.errors import TopoctlError
from topoctl.snapshot.catalogue import system_snapshot

DEFAULT_DATA = os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "data", "public-allreduce.yaml"
)
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
    known_outside: bool = (
        False  # the source lists this point as a known miss (known_outside_reason says why)
    )
    input: bool = False  # the source set a costs.yaml row (`input_of`): not an independent check

    @property
    def ratio(self) -> float:
        return self.predicted_us / self.published_us


def load(path: str) -> dict[str, Any]:
    """The data file, checked for what every source must state."""
    try:
        data = read_yaml(path)
    except OSError as exc:
        raise TopoctlError(
            f"cannot read {path}: {exc.strerror}",
            hint="give the path of a published-points YAML file",
        ) from exc
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("sources"), list)
        or not data["sources"]
    ):
        raise TopoctlError(
            f"{path}: no `sources` list",
            hint="see benchmarks/data/public-allreduce.yaml for the form",
        )
    for index, source in enumerate(data["sources"]):
        missing = [key for key in REQUIRED if not isinstance(source, dict) or key not in source]
        if missing:
            raise TopoctlError(
                f"{path}: source {index + 1} lacks {', '.join(missing)}",
                hint="each source states its URL, GPU, system, world size, path, method and points",
            )
        for point in source["points"]:
            if not (
                isinstance(point, list)
                and len(point) == 2
                and all(isinstance(v, (int, float)) for v in point)
                and point[1] > 0
            ):
                raise TopoctlError(
                    f"{path}: source {source['id']}: point {point!r} is not [bytes, us]",
                    hint="write each point as [message bytes, latency in microseconds]",
                )
        _check_known_outside(path, source)
    return data


def _check_known_outside(path: str, source: dict[str, Any]) -> None:
    """A source's `known_outside` names sizes among its own points and says why
    (`known_outside_reason`)."""
    known = source.get("known_outside")
    if known is None:
        return
    sizes = {point[0] for point in source["points"]}
    if not isinstance(known, list) or not known or any(size not in sizes for size in known):
        raise TopoctlError(
            f"{path}: source {source['id']}: known_outside {known!r} is not a list of its point "
            "sizes",
            hint="list the message bytes of the points expected outside the band",
        )
    if not str(source.get("known_outside_reason") or "").strip():
        raise TopoctlError(
            f"{path}: source {source['id']}: known_outside without known_outside_reason",
            hint="say why those points are expected outside the band",
        )


def rows(data: dict[str, Any]) -> list[Row]:
    """One row per published point, with the model's latency for the same configuration."""
    out: list[Row] = []
    latencies: dict[str, launch_model.Latencies] = {}
    for source in data["sources"]:
        system = str(source["system"])
        if system not in latencies:
            latencies[system] = launch_model.Latencies(system_snapshot(system))
        world = int(source["world"])
        known = set(source.get("known_outside") or ())
        for size, published in source["points"]:
            predicted, level, _ = latencies[system].latency(str(source["path"]), float(size), world)
            out.append(
                Row(
                    str(source["id"]),
                    str(source["url"]),
                    " ".join(str(source["gpu"]).split()),
                    world,
                    str(source["path"]),
                    str(source["timing"]),
                    " ".join(str(source["method"]).split()),
                    int(size),
                    float(published),
                    predicted,
                    level,
                    size in known,
                    bool(source.get("input_of")),
                )
            )
    return out


def size_text(size: int) -> str:
    if size >= 1024**2 and size % (1024**2) == 0:
        return f"{size // 1024**2} MiB"
    if size >= 1024 and size % 1024 == 0:
        return f"{size // 1024} KiB"
    return f"{size} B"


def outside(table: list[Row], band: float) -> list[Row]:
    return [row for row in table if not 1 / band <= row.ratio <= band]


def failures(table: list[Row], band: float) -> list[Row]:
    """The rows that fail the acceptance: outside the band and not listed as known, or listed and
    inside."""
    out = set(map(id, outside(table, band)))
    return [row for row in table if (id(row) in out) != row.known_outside]


def render(table: list[Row], band: float) -> str:
    lines = [
        "| source | GPU | GPUs | path | timed | message | published (us) | predicted (us) | "
        "predicted / published |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    out = set(map(id, outside(table, band)))
    for row in table:
        mark = " (input)" if row.input else ""
        miss = " (known miss)" if row.known_outside and id(row) in out else ""
        lines.append(
            f"| [{row.source}]({row.url}){mark} | {row.gpu} | {row.world} | {row.path} | "
            f"{row.timing} | {size_text(row.message_bytes)} | {row.published_us:.3g} | "
            f"{row.predicted_us:.3g} ({row.level}) | {row.ratio:.2f}{miss} |"
        )
    paths = sorted({row.path for row in table})
    summary = []
    for path in paths:
        ratios = [row.ratio for row in table if row.path == path]
        summary.append(f"{path}: {len(ratios)} points, ratio {min(ratios):.2f}-{max(ratios):.2f}")
    lines += ["", "; ".join(summary) + f"; {_verdict(table, band)}."]
    return "\n".join(lines)


def _verdict(table: list[Row], band: float) -> str:
    bad = outside(table, band)
    if not bad:
        verdict = f"all {len(table)} points within a factor of {band:g}"
    else:
        known = sum(1 for row in bad if row.known_outside)
        verdict = f"{len(bad)} of {len(table)} points outside a factor of {band:g}"
        if known:
            verdict += f", {known} of them known misses listed in the data file"
    stale = [row for row in table if row.known_outside and row not in bad]
    if stale:
        verdict += f"; {len(stale)} listed as known misses lie inside it"
    return verdict


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
    return 1 if failures(table, band) else 0


if __name__ == "__main__":
    sys.exit(main())
