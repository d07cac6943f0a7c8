"""Which GPUs (SM numbers) a compiled target runs on, by CUDA's compatibility rules.

A cubin for sm_XY runs on X.Z with Z >= Y (same major); sm_XYa only on X.Y; sm_XYf on the X family
at or above Y. PTX for compute_XY is JIT-compiled by the driver on any later SM; compute_XYa only on
X.Y.
"""

from __future__ import annotations

import re

KNOWN_SMS: tuple[int, ...] = (80, 86, 89, 90, 100, 103, 120, 121)
_TARGET = re.compile(r"^(sm|compute)_(\d+)([af]?)$")


def runs_on(target: str) -> list[int]:
    """The known SMs a target such as sm_90a, sm_100f or compute_80 executes on."""
    m = _TARGET.match(target)
    if m is None:
        return []
    kind, sm, suffix = m.group(1), int(m.group(2)), m.group(3)
    major = sm // 10
    if suffix == "a":
        return [sm] if sm in KNOWN_SMS else []
    if kind == "compute":
        return [s for s in KNOWN_SMS if s >= sm and (suffix == "" or s // 10 == major)]
    return [s for s in KNOWN_SMS if s // 10 == major and s >= sm]


def majors_to_sms(majors: list[int]) -> list[int]:
    """The known SMs of the given compute-capability majors (FlashInfer's JIT
    `supported_major_versions`)."""
    return [s for s in KNOWN_SMS if s // 10 in set(majors)]


def arch_token_allows(token_sm: int, gpu_sm: int) -> bool:
    """Whether a kernel written for `SmNN` (CUTLASS's class names) can execute on gpu_sm.

    SM90's wgmma and SM100's tcgen05 exist only on their own major; SM80-style mma.sync code runs on
    later SMs.
    """
    if token_sm < 90:
        return gpu_sm >= token_sm
    return gpu_sm // 10 == token_sm // 10
