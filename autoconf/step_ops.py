"""The pieces of a composed decode step (step_model.py): an op, the step, where each figure came
from, how far it may be off, and the GEMM lookup in a weight format the tables may not hold (a
substitute of the same or the closest width).

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from topoctl.autoconf import op_tables
from topoctl.autoconf.step_shapes import TABLE_BYTES, wanted_formats

MEASURED = "measured on this machine"
REFERENCE = "reference"
EXTRAPOLATED = "extrapolated"
BANDWIDTH = "bandwidth-model"
ASSUMED = "assumed"
FITTED = "fitted on the public corpus"
ORIGINS = (MEASURED, REFERENCE, EXTRAPOLATED, BANDWIDTH, ASSUMED, FITTED)

# AISimulate's published accuracy, 24% TPOT error over 1,135 points (issue 41), as the band of a
# step every op of which is a reference row; chosen before the held-out file was scored with this
# model.
BASE_BAND = 1.24
MAX_WIDEN = 4.0  # an op extrapolated further than 4x widens the band as if by 4x
SUBSTITUTE_WIDEN = (
    1.25  # another kernel of the same width (fp8 per-tensor rows for fp8 block weights)
)
MODEL_WIDEN = 2.0  # an op from the bandwidth model or an assumed latency: its time may be off by 2x


@dataclass(frozen=True)
class StepOp:
    """One op of the step: `count` calls of `each_us`, where the figure came from and how far it may
    be off."""

    name: str
    count: int
    each_us: float
    origin: str
    source: str
    widen: float = (
        1.0  # 1: a reference or measured row; >1: extrapolated or modelled by this factor
    )
    gemm: tuple[str, int, int] | None = None  # a GEMM's (name, N, K): what the bench times alone

    @property
    def total_us(self) -> float:
        return self.count * self.each_us

    def to_dict(self) -> dict[str, object]:
        return {
            "op": self.name,
            "count": self.count,
            "us_each": round(self.each_us, 3),
            "us": round(self.total_us, 3),
            "origin": self.origin,
            "source": self.source,
            "widen": round(self.widen, 3),
        }


@dataclass(frozen=True)
class Step:
    system: str
    tokens: int
    ops: tuple[StepOp, ...]

    @property
    def total_us(self) -> float:
        return sum(op.total_us for op in self.ops)

    def share(self, origin: str) -> float:
        total = self.total_us
        return sum(op.total_us for op in self.ops if op.origin == origin) / total if total else 0.0

    @property
    def band(self) -> float:
        """BASE_BAND plus, for each op, its share of the step times how far it may be off (widen -
        1)."""
        total = self.total_us or 1.0
        return BASE_BAND + sum(op.total_us / total * (op.widen - 1.0) for op in self.ops)

    def band_source(self) -> str:
        parts = ", ".join(
            f"{origin} {self.share(origin):.0%}" for origin in ORIGINS if self.share(origin)
        )
        return (
            f"AISimulate's published 24% TPOT error (x/{BASE_BAND}), widened by each "
            f"extrapolated or modelled op's share of the step ({parts})"
        )


def priced(
    name: str,
    count: int,
    answer: op_tables.Answer,
    note: str = "",
    widen: float = 1.0,
    scale: float = 1.0,
) -> StepOp:
    cite = answer.sources[0].cite() + (
        f" (+{len(answer.sources) - 1} more files)" if len(answer.sources) > 1 else ""
    )
    far = max((min(e.factor, MAX_WIDEN) for e in answer.extrapolations), default=1.0)
    where = "; ".join(
        f"{e.axis} {e.asked:g} outside the grid (edge {e.edge:g})" for e in answer.extrapolations
    )
    origin = EXTRAPOLATED if answer.extrapolations or widen > 1.0 else REFERENCE
    text = (
        f"{answer.system}/{answer.table}: {cite}"
        + (f"; {where}" if where else "")
        + (f"; {note}" if note else "")
    )
    return StepOp(name, count, answer.latency_us * scale, origin, text, max(far, widen))


@dataclass(frozen=True)
class Format:
    """The table dtype an op is read in, why, how far that may be off, and the bytes ratio applied."""

    dtype: str
    note: str = ""
    widen: float = 1.0
    scale: float = 1.0


def substitute(available: tuple[object, ...], wanted: tuple[str, ...], per_param: float) -> Format:
    """The first wanted dtype the table has, else the closest in bytes per weight scaled by the
    bytes ratio (a decode GEMM streams its weights: time in proportion to their bytes)."""
    for name in wanted:
        if name in available:
            widen = (
                1.0
                if name == wanted[0] or TABLE_BYTES.get(name) != TABLE_BYTES.get(wanted[0])
                else SUBSTITUTE_WIDEN
            )
            note = (
                ""
                if name == wanted[0]
                else f"{wanted[0]} rows absent; {name} rows of the same width used"
            )
            return Format(name, note, widen)
    names = [str(a) for a in available if str(a) in TABLE_BYTES]
    closest = min(names, key=lambda n: abs(TABLE_BYTES[n] - per_param))
    ratio = per_param / TABLE_BYTES[closest]
    note = (
        f"no {'/'.join(wanted)} rows; {closest} rows, bytes scaling x{ratio:.3f} "
        f"({per_param:.3f} / {TABLE_BYTES[closest]:g} bytes a weight)"
    )
    return Format(closest, note, max(ratio, 1.0 / ratio, SUBSTITUTE_WIDEN), ratio)


def gemm(
    tables: op_tables.SystemTables, name: str, count: int, m: int, n: int, k: int, per_param: float
) -> StepOp:
    table = tables.table("gemm")
    fmt = substitute(table.key_values("gemm_dtype"), wanted_formats(per_param, False), per_param)
    label = f"{name} GEMM [{m}x{k}]x[{k}x{n}] {fmt.dtype}"
    found = tables.measured.gemm(fmt.dtype, m, n, k) if tables.measured and fmt.scale == 1 else None
    if found is not None:  # this box's own row of the same kernel width outranks a reference row
        return StepOp(label, count, found.us, MEASURED, found.source, fmt.widen, (name, n, k))
    answer = table.query(gemm_dtype=fmt.dtype, m=m, n=n, k=k)
    op = priced(label, count, answer, fmt.note, fmt.widen, fmt.scale)
    return replace(op, gemm=(name, n, k))
