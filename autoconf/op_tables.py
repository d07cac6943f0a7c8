"""Per-operation latency tables measured on real GPUs, and interpolation inside their grids.

The tables under ``autoconf/generated/op-tables/<system>.json.gz`` are extracted by
``scripts/extract_op_tables.py`` from NVIDIA's aiconfigurator-core / AISimulate wheels (Apache-2.0);
docs/op-tables.md describes them.  Each table has exact-match key columns, numeric axes and a latency
in microseconds; every row names its source file inside a wheel.

A query matches the keys exactly and interpolates over the axes one at a time: linearly in size between
the two neighbouring grid values (latency is close to affine in size between neighbours, where linear is
exact).  Outside the measured range it holds the edge value below the grid and continues the last
segment's slope (never downward) above it, and the answer says "extrapolated", on which axis, and how far.

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from topoctl.autoconf.measured_ops import MeasuredOps

FORMAT = "topoctl-op-tables/1"
DEFAULT_DIR = Path(__file__).resolve().parent / "generated" / "op-tables"
Value = str | int | float
Origin = Literal["reference", "extrapolated"]


class OpTableError(LookupError):
    """A query the tables cannot answer: unknown system or table, or no row with the asked keys."""


@dataclass(frozen=True)
class Source:
    """Where a row came from: one parquet file inside one wheel."""

    wheel: str
    wheel_version: str
    path: str
    framework: str
    framework_version: str
    collected_at: tuple[str, ...]
    collector_refs: tuple[str, ...]
    meta_provenance: str | None
    also_in: tuple[str, ...]

    @staticmethod
    def from_json(raw: Mapping[str, Any]) -> Source:
        return Source(
            wheel=str(raw["wheel"]),
            wheel_version=str(raw["wheel_version"]),
            path=str(raw["path"]),
            framework=str(raw["framework"]),
            framework_version=str(raw["framework_version"]),
            collected_at=tuple(str(d) for d in raw.get("collected_at") or ()),
            collector_refs=tuple(str(r) for r in raw.get("collector_refs") or ()),
            meta_provenance=raw.get("meta_provenance"),
            also_in=tuple(
                f"{a['wheel']}=={a['wheel_version']}:{a['path']}" for a in raw.get("also_in") or ()
            ),
        )

    def cite(self) -> str:
        dates = ",".join(self.collected_at) or "date not recorded"
        return (
            f"{self.wheel}=={self.wheel_version}:{self.path} ({self.framework} "
            f"{self.framework_version}, {dates})"
        )


@dataclass(frozen=True)
class Extrapolation:
    """One axis asked outside its measured range, and how far: factor 2.0 is twice the largest
    measured value, or half the smallest."""

    axis: str
    asked: float
    edge: float

    @property
    def factor(self) -> float:
        if self.asked <= 0 or self.edge <= 0:
            return float("inf")
        return max(self.asked / self.edge, self.edge / self.asked)


@dataclass(frozen=True)
class Answer:
    latency_us: float
    origin: Origin
    system: str
    table: str
    sources: tuple[Source, ...]
    extrapolations: tuple[Extrapolation, ...] = ()
    grid_rows: int = 0  # measured rows that carried weight in the answer


@dataclass(frozen=True)
class _Partial:
    value: float
    srcs: frozenset[int]
    extrapolations: tuple[Extrapolation, ...]
    rows: int


@dataclass(frozen=True)
class OpTable:
    system: str
    name: str
    keys: tuple[str, ...]
    axes: tuple[str, ...]
    columns: tuple[str, ...]
    sources: tuple[Source, ...]
    rows: tuple[tuple[Value, ...], ...]
    _by_key: Mapping[tuple[Value, ...], tuple[tuple[Value, ...], ...]] = field(
        repr=False, compare=False, default_factory=dict
    )
    # answers by query: a search asks the same shapes for every candidate, and an answer is immutable
    _answers: dict[tuple[tuple[str, Value], ...], Answer] = field(
        repr=False, compare=False, default_factory=dict
    )

    @staticmethod
    def from_json(system: str, name: str, raw: Mapping[str, Any]) -> OpTable:
        columns = tuple(str(c) for c in raw["columns"])
        keys, axes = tuple(raw["keys"]), tuple(raw["axes"])
        rows = tuple(tuple(r) for r in raw["rows"])
        key_pos = [columns.index(k) for k in keys]
        by_key: dict[tuple[Value, ...], list[tuple[Value, ...]]] = {}
        for row in rows:
            by_key.setdefault(tuple(row[i] for i in key_pos), []).append(row)
        sources = tuple(Source.from_json(s) for s in raw["sources"])
        return OpTable(
            system,
            name,
            keys,
            axes,
            columns,
            sources,
            rows,
            {k: tuple(v) for k, v in by_key.items()},
        )

    def key_values(self, key: str) -> tuple[Value, ...]:
        """The distinct values a key column takes, sorted; for error messages and callers choosing a
        key."""
        i = self.keys.index(key)
        return tuple(sorted({k[i] for k in self._by_key}, key=lambda v: (isinstance(v, str), v)))

    def row_source(self, row: Sequence[Value]) -> Source:
        return self.sources[int(row[self.columns.index("src")])]

    def _resolve_keys(self, params: Mapping[str, Value]) -> tuple[Value, ...]:
        # Keys left out are filled in where the given ones leave a single choice (one kernel, one
        # dtype).
        given = [(i, params[k]) for i, k in enumerate(self.keys) if k in params]
        matches = [key for key in self._by_key if all(key[i] == v for i, v in given)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            asked = {self.keys[i]: v for i, v in given}
            choices = {k: list(self.key_values(k)) for k in self.keys}
            raise OpTableError(
                f"{self.system}/{self.name}: no rows for {asked}; keys take {choices}"
            )
        open_keys = {
            k: sorted({m[i] for m in matches}, key=lambda v: (isinstance(v, str), v))
            for i, k in enumerate(self.keys)
            if k not in params
        }
        wanted = ", ".join(f"{k} (one of {v})" for k, v in open_keys.items() if len(v) > 1)
        raise OpTableError(f"{self.system}/{self.name}: give {wanted}")

    def query(self, **params: Value) -> Answer:
        asked_as = tuple(sorted(params.items()))
        answer = self._answers.get(asked_as)
        if answer is None:
            answer = self._answers[asked_as] = self._answer(params)
        return answer

    def _answer(self, params: Mapping[str, Value]) -> Answer:
        unknown = sorted(set(params) - set(self.keys) - set(self.axes))
        if unknown:
            raise OpTableError(
                f"{self.system}/{self.name}: unknown parameters {unknown}; keys {self.keys}, "
                f"axes {self.axes}"
            )
        missing = [a for a in self.axes if a not in params]
        if missing:
            raise OpTableError(f"{self.system}/{self.name}: give the axes {missing}")
        rows = self._by_key[self._resolve_keys(params)]
        asked = tuple(float(params[a]) for a in self.axes)
        part = self._interpolate(rows, 0, asked)
        return Answer(
            latency_us=part.value,
            origin="extrapolated" if part.extrapolations else "reference",
            system=self.system,
            table=self.name,
            sources=tuple(self.sources[i] for i in sorted(part.srcs)),
            extrapolations=_merge_extrapolations(part.extrapolations),
            grid_rows=part.rows,
        )

    def _interpolate(
        self, rows: Sequence[tuple[Value, ...]], depth: int, asked: tuple[float, ...]
    ) -> _Partial:
        if depth == len(self.axes):
            return self._leaf(rows)
        axis = self.axes[depth]
        col = self.columns.index(axis)
        grid = sorted({float(r[col]) for r in rows})
        x = asked[depth]

        def at(g: float) -> _Partial:
            return self._interpolate([r for r in rows if float(r[col]) == g], depth + 1, asked)

        if x in grid:
            return at(x)
        if x < grid[0]:
            return _flagged(at(grid[0]), Extrapolation(axis, x, grid[0]))
        if x > grid[-1]:
            return _extend(axis, grid, x, at)
        hi = next(g for g in grid if g > x)
        lo = grid[grid.index(hi) - 1]
        return _blend(at(lo), at(hi), (x - lo) / (hi - lo))

    def _leaf(self, rows: Sequence[tuple[Value, ...]]) -> _Partial:
        lat = self.columns.index("latency_us")
        src = self.columns.index("src")
        if len(rows) != 1:
            raise OpTableError(
                f"{self.system}/{self.name}: {len(rows)} rows share one grid point; the table is "
                "malformed"
            )
        return _Partial(float(rows[0][lat]), frozenset({int(rows[0][src])}), (), 1)


def _blend(lo: _Partial, hi: _Partial, w: float) -> _Partial:
    return _Partial(
        lo.value + w * (hi.value - lo.value),
        lo.srcs | hi.srcs,
        lo.extrapolations + hi.extrapolations,
        lo.rows + hi.rows,
    )


def _flagged(part: _Partial, extra: Extrapolation) -> _Partial:
    return _Partial(part.value, part.srcs, part.extrapolations + (extra,), part.rows)


def _extend(axis: str, grid: list[float], x: float, at: Callable[[float], _Partial]) -> _Partial:
    """Above the grid: continue the last segment's slope, never downward (more work never runs
    faster)."""
    last = at(grid[-1])
    extra = Extrapolation(axis, x, grid[-1])
    if len(grid) < 2:
        return _flagged(last, extra)
    prev = at(grid[-2])
    slope = max(0.0, (last.value - prev.value) / (grid[-1] - grid[-2]))
    return _Partial(
        last.value + slope * (x - grid[-1]),
        prev.srcs | last.srcs,
        prev.extrapolations + last.extrapolations + (extra,),
        prev.rows + last.rows,
    )


def _merge_extrapolations(items: tuple[Extrapolation, ...]) -> tuple[Extrapolation, ...]:
    """One entry per axis: the one furthest from the measured range."""
    worst: dict[str, Extrapolation] = {}
    for e in items:
        if e.axis not in worst or e.factor > worst[e.axis].factor:
            worst[e.axis] = e
    return tuple(worst[a] for a in sorted(worst))


@dataclass(frozen=True)
class SystemTables:
    system: str
    tables: Mapping[str, OpTable]
    wheels: tuple[str, ...]
    max_tokens: int
    # rows `topoctl bench --decode-step` measured on the box, read before these tables (step_ops.gemm)
    measured: MeasuredOps | None = None

    def table(self, name: str) -> OpTable:
        if name not in self.tables:
            raise OpTableError(f"{self.system}: no table {name!r}; it has {sorted(self.tables)}")
        return self.tables[name]

    def query(self, table: str, **params: Value) -> Answer:
        return self.table(table).query(**params)


def known_systems(directory: Path | None = None) -> tuple[str, ...]:
    folder = directory or DEFAULT_DIR
    return tuple(sorted(p.name.removesuffix(".json.gz") for p in folder.glob("*.json.gz")))


def load_system(system: str, directory: Path | None = None) -> SystemTables:
    """The tables of one system (e.g. "h200_sxm"); OpTableError names the known systems when it is
    absent."""
    return _load(system, str((directory or DEFAULT_DIR).resolve()))


@lru_cache(maxsize=16)
def _load(system: str, directory: str) -> SystemTables:
    path = Path(directory) / f"{system}.json.gz"
    if not path.is_file():
        raise OpTableError(
            f"no op tables for system {system!r}; known: {list(known_systems(Path(directory)))}"
        )
    doc = json.loads(gzip.decompress(path.read_bytes()))
    if (
        doc.get("format") != FORMAT
        or doc.get("system") != system
        or doc.get("latency_unit") != "us"
    ):
        raise OpTableError(f"{path}: not a {FORMAT} file for {system} in us")
    tables = {
        name: OpTable.from_json(system, name, raw) for name, raw in sorted(doc["tables"].items())
    }
    wheels = tuple(f"{w['wheel']}=={w['version']} sha256:{w['sha256']}" for w in doc["wheels"])
    return SystemTables(system, tables, wheels, int(doc["scope"]["max_tokens"]))
