"""GPU architecture from CUDA compute capability: one table for the probe and the rules.

The probe names a GPU's architecture from nvmlDeviceGetArchitecture when the driver answers it, and from the
compute capability otherwise (older drivers); the rules derive `gpu.architectures` from `gpu.sm` when a
snapshot lacks the names. Both read this table, so SM 8.9 is Ada (RTX 4090, L40S) and SM 10.x, 11.x and
12.x are Blackwell (B200/GB200, Thor, RTX PRO 6000 / RTX 50) everywhere.

Plain data, no imports: safe on the start-up path of every command.
"""
from __future__ import annotations

from typing import Any

# (major, minor) wins over (major,); a capability in neither is not guessed.
ARCH_BY_CC = {(3,): "kepler", (5,): "maxwell", (6,): "pascal", (7, 0): "volta", (7, 2): "volta", (7, 5): "turing",
              (8, 0): "ampere", (8, 6): "ampere", (8, 7): "ampere", (8, 9): "ada", (9,): "hopper",
              (10,): "blackwell", (11,): "blackwell", (12,): "blackwell"}


def architecture_for_cc(major: int, minor: int) -> str | None:
    """Architecture name of compute capability major.minor (8, 9 -> "ada"), or None when not in the table."""
    return ARCH_BY_CC.get((major, minor)) or ARCH_BY_CC.get((major,))


def architecture_for_sm(sm: Any) -> str | None:
    """Architecture name of an SM number as the snapshot writes it (major*10+minor: 89 -> "ada", 120 ->
    "blackwell"), or None for anything else."""
    if not isinstance(sm, int) or isinstance(sm, bool) or sm < 0:
        return None
    return architecture_for_cc(sm // 10, sm % 10)
