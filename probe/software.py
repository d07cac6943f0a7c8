"""Software versions, read from installed package metadata without importing the packages.

Importing torch or sglang takes seconds and may need a GPU; reading their metadata takes
milliseconds. Only `--with-torch` imports torch (see torch_check.py), to cross-check what the CUDA
runtime reports.

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import re
from typing import TypedDict

from topoctl.probe.capture import Session


class Installed(TypedDict):
    """One package found installed (the "packages" answer a capture records)."""

    distribution: str
    version: str


# snapshot key -> distribution names to try, first installed wins
PACKAGES: dict[str, tuple[str, ...]] = {
    "torch": ("torch",),
    "sglang": ("sglang",),
    "sgl_kernel": ("sgl-kernel", "sgl_kernel"),
    "flashinfer": ("flashinfer-python", "flashinfer"),
    "vllm": ("vllm",),
    "nvidia_ml_py": ("nvidia-ml-py",),
    "nccl_wheel": ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11"),
    "cuda_runtime_wheel": (
        "nvidia-cuda-runtime",
        "nvidia-cuda-runtime-cu13",
        "nvidia-cuda-runtime-cu12",
    ),
}


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _scan_site_dirs() -> dict[str, str]:
    """name -> version from the `NAME-VERSION.dist-info` / `.egg-info` folder names on sys.path.

    One directory listing per path entry instead of one full metadata search per package: on an
    image with hundreds of packages this is the difference between milliseconds and a tenth of a
    second.
    """
    import os
    import sys

    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for folder in names:
            for suffix in (".dist-info", ".egg-info"):
                if folder.endswith(suffix):
                    stem = folder[: -len(suffix)]
                    name, _, version = stem.partition("-")
                    if version and _normalise(name) not in found:
                        found[_normalise(name)] = version.split("-py")[0]
    return found


def _installed_versions() -> dict[str, Installed | None]:
    """Versions from the dist-info/egg-info folders pip and setuptools write (one scan of sys.path).

    importlib.metadata is not used: each of its lookups scans every path entry again, which cost ~50
    ms per missing package on an image with hundreds of packages.
    """
    scanned = _scan_site_dirs()
    found: dict[str, Installed | None] = {}
    for key, names in PACKAGES.items():
        found[key] = None
        for name in names:
            version = scanned.get(_normalise(name))
            if version is not None:
                found[key] = {"distribution": name, "version": version}
                break
    return found


def cuda_from_torch_local(version: str | None) -> str | None:
    """'2.11.0+cu130' -> '13.0'; None when the build says nothing about CUDA."""
    if not version:
        return None
    match = re.search(r"\+cu(\d+)(\d)$", version)
    return f"{match.group(1)}.{match.group(2)}" if match else None


def nccl_from_wheel(version: str | None) -> str | None:
    """The NCCL wheel's version is NCCL's own ('2.27.5'); drop a post/dev suffix if any."""
    if not version:
        return None
    match = re.match(r"(\d+\.\d+\.\d+)", version)
    return match.group(1) if match else None


def collect_packages(session: Session) -> tuple[dict[str, str | None], dict[str, str]]:
    """Installed package versions (None when absent), and reasons for what could not be read."""
    answer = session.ask("software", "packages", _installed_versions)
    unknown: dict[str, str] = {}
    result: dict[str, str | None] = {}
    raw = answer.value if answer.ok and isinstance(answer.value, dict) else {}
    if not answer.ok:
        unknown["software.packages"] = answer.reason or "unknown"
    for key in PACKAGES:
        entry = raw.get(key)
        result[key] = entry.get("version") if isinstance(entry, dict) else None
    return result, unknown
