"""The shapes `topoctl bench` passes around: a measurement row, a worker's queue message, and unit aliases.

A row is the JSON object the snapshot's measurements section stores (topoctl/snapshot/schema, "measurements"):
its keys differ by section, so it stays a dict of JSON values until the snapshot's reader types it.

Layer: probe (docs/architecture.md, "Layers").
"""
from __future__ import annotations

from typing import Protocol, TypeAlias

Bytes: TypeAlias = int
Microseconds: TypeAlias = float
Seconds: TypeAlias = float
GBps: TypeAlias = float  # 1e9 bytes per second

# One measurement row (a JSON object of the snapshot's measurements section).
Row: TypeAlias = "dict[str, object]"
# One message a worker puts on its queue: {"kind": "start" | "row" | "fatal" | "done" | "devices", ...}.
Message: TypeAlias = "dict[str, object]"


class MessageQueue(Protocol):
    """The side of a multiprocessing queue a worker writes to."""

    def put(self, obj: Message, block: bool = ..., timeout: float | None = ...) -> None: ...
