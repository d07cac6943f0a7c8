"""The door to sysfs and /proc: file reads and symlink resolution, recorded and replayed like NVML
answers.

NCCL reads the PCIe tree from sysfs (realpath of each PCI device, numa_node, class, link
speed/width), so topoctl reads the same places: what NCCL sees is what decides its transport.

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

import os

from topoctl.probe.capture import Answer, ProbeFailure, Session

MAX_READ = 256 * 1024


def _failure(exc: OSError) -> ProbeFailure:
    return ProbeFailure(type(exc).__name__)


class Files:
    """Reads text files and resolves paths through a recording/replaying Session."""

    def __init__(self, session: Session) -> None:
        self.session = session

    def read(self, path: str) -> Answer:
        def live() -> str:
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    return handle.read(MAX_READ)
            except OSError as exc:
                raise _failure(exc) from None

        return self.session.ask("files", f"read:{path}", live)

    def read_stripped(self, path: str) -> str | None:
        answer = self.read(path)
        return answer.value.strip() if answer.ok and isinstance(answer.value, str) else None

    def realpath(self, path: str) -> Answer:
        def live() -> str:
            if not os.path.exists(path):
                raise ProbeFailure("FileNotFoundError")
            return os.path.realpath(path)

        return self.session.ask("files", f"realpath:{path}", live)

    def listdir(self, path: str) -> Answer:
        def live() -> list[str]:
            try:
                return sorted(os.listdir(path))
            except OSError as exc:
                raise _failure(exc) from None

        return self.session.ask("files", f"listdir:{path}", live)
