"""A probe Session whose non-NVML questions (sysfs, /proc, host, packages, torch) answer from a
spec.

NVML questions go through the real door (probe/nvml.py), so with the fake binding installed as
`sys.modules["pynvml"]` the whole live code path runs. Everything else answers from `world`:

    {"files": {"read:/proc/cpuinfo": "...", "realpath:/sys/bus/pci/devices/0000:03:00.0": "/sys/devices/..."},
     "host": {"platform": {...}, "cpu": {...}, "counts": {...}, "psutil": {...}},
     "software": {"packages": {...}},
     "torch": {"facts": {...}} | {}}

A key the world does not hold fails the way the OS would: files with FileNotFoundError, torch with
"torch not installed", host/software with a ProbeFailure naming the key.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Callable, Iterator

from topoctl.probe.capture import Answer, ProbeFailure, Session

# Questions whose missing answer would read as a fact ("no IOMMU"): a spec must state them to get
# one.
UNSTATED = (
    "listdir:/sys/class/iommu",
    "listdir:/sys/kernel/iommu_groups",
    "listdir:/sys/class/infiniband",
    "listdir:/sys/class/net",
)


class SpecSession(Session):
    def __init__(self, world: dict[str, Any], record: bool = False) -> None:
        super().__init__(record=record)
        self.world = world

    def ask(self, section: str, key: str, live: Callable[[], Any]) -> Answer:
        if section == "nvml":
            return super().ask(section, key, live)
        return super().ask(section, key, lambda: self._answer(section, key))

    def _answer(self, section: str, key: str) -> Any:
        answers = self.world.get(section) or {}
        if key in answers:
            value = answers[key]
            if isinstance(value, BaseException):
                raise value
            return value
        if section == "files" and key.startswith(UNSTATED):
            raise ProbeFailure(
                "NotInSpec"
            )  # a spec that says nothing of the IOMMU leaves it unknown, not "off"
        if section == "files":
            raise ProbeFailure("FileNotFoundError")
        if section == "torch":
            raise ProbeFailure(
                "torch not installed (pip install torch; from a clone of topoctl: pip install "
                "'.[torch]')"
            )
        raise ProbeFailure(f"no answer for {section}:{key}")


@contextlib.contextmanager
def installed(module: Any) -> Iterator[Any]:
    """Install `module` as `pynvml` (None: make `import pynvml` fail) and restore what was there."""
    missing = object()
    previous = sys.modules.get("pynvml", missing)
    sys.modules["pynvml"] = module  # a None entry makes `import pynvml` raise ImportError
    try:
        yield module
    finally:
        if previous is missing:
            sys.modules.pop("pynvml", None)
        else:
            sys.modules["pynvml"] = previous
