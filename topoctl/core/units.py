"""Unit aliases for the numbers that carry units (gpustat's `Megabytes`/`Watts` are the model).

An alias says the unit where a bare float would not; mypy treats it as the float or int it names.
probe/bench/records.py keeps its own copies of Bytes, Microseconds and Seconds (the probe's bench
rows).

Layer: core types and data (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from typing import TypeAlias

Bytes: TypeAlias = int
FloatBytes: TypeAlias = (
    float  # bytes computed from fractions (weights x shares): not rounded until the end
)
Mebibytes: TypeAlias = float  # 2**20 bytes
Microseconds: TypeAlias = float
TokPerS: TypeAlias = float  # output tokens per second
