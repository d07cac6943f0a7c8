"""Statistics of timing samples: median and the 10th/90th percentiles (linear interpolation between
ranks).

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from typing import Sequence


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) of `samples`, interpolating linearly between the two nearest
    ranks."""
    if not samples:
        raise ValueError("no samples")
    if not 0 <= q <= 100:
        raise ValueError("q must be within 0..100")
    ordered = sorted(samples)
    position = (len(ordered) - 1) * q / 100.0
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def spread(samples: Sequence[float], scale: float = 1.0, digits: int = 3) -> dict[str, float]:
    """{"median", "p10", "p90"} of samples times `scale`, rounded to `digits` decimals."""
    return {
        name: round(percentile(samples, q) * scale, digits)
        for name, q in (("median", 50), ("p10", 10), ("p90", 90))
    }
