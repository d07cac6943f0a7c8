"""The kernel wheels each SGLang release pins, read from its wheel's METADATA Requires-Dist."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

# Distributions that ship (or JIT-build) GPU kernels, normalised as PEP 503 names.
KERNEL_DISTS = (
    "sgl-kernel",
    "sglang-kernel",
    "flashinfer-python",
    "flashinfer-cubin",
    "flashinfer-jit-cache",
    "sgl-deep-gemm",
    "deep-gemm",
    "flash-attn",
    "flash-attn-4",
    "sgl-flash-mla",
)
_REQ = re.compile(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*(.*)$")


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Pin:
    dist: str
    spec: str  # "==0.3.21", ">=4.0.0b4"

    @property
    def version(self) -> str | None:
        return self.spec[2:] if self.spec.startswith("==") and "," not in self.spec else None

    @property
    def key(self) -> str:
        return f"{self.dist}{self.spec}"


def release_pins(wheel: Path) -> list[Pin]:
    """The kernel distributions a SGLang wheel requires unconditionally, with their version
    specifiers."""
    with zipfile.ZipFile(wheel) as zf:
        meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        text = zf.read(meta).decode("utf-8")
    pins = []
    for line in text.splitlines():
        if not line.startswith("Requires-Dist:") or ";" in line:
            continue
        m = _REQ.match(line.split(":", 1)[1].strip())
        if m and normalise(m.group(1)) in KERNEL_DISTS:
            pins.append(Pin(normalise(m.group(1)), m.group(3).replace(" ", "")))
    return sorted(pins, key=lambda p: p.dist)


def find_wheel(folder: Path, dist: str, version: str) -> Path | None:
    """The wheel of dist==version in folder, matched on the normalised file name."""
    for path in sorted(folder.glob("*.whl")):
        parts = path.name.split("-")
        if len(parts) > 2 and normalise(parts[0]) == dist and parts[1] == version:
            return path
    return None


def download(folder: Path, dist: str, version: str) -> Path | None:
    """pip download --no-deps one wheel into folder; None when pip cannot get it."""
    folder.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "-q",
        "--no-deps",
        f"{dist}=={version}",
        "-d",
        str(folder),
    ]
    subprocess.run(cmd, check=False, capture_output=True)
    return find_wheel(folder, dist, version)
