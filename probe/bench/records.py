"""The shapes `topoctl bench` passes around: a measurement row, a worker's queue message, and unit
aliases.

A row is the JSON object the snapshot's measurements section stores (topoctl/snapshot/schema,
"measurements"): its keys differ by section, so it stays a dict of JSON values until the snapshot's
reader types it.

Layer: probe (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from typing import Literal, Protocol, Required, TypeAlias, TypedDict

Bytes: TypeAlias = int
Microseconds: TypeAlias = float
Seconds: TypeAlias = float
GBps: TypeAlias = float  # 1e9 bytes per second

# One measurement row (a JSON object of the snapshot's measurements section).
Row: TypeAlias = "dict[str, object]"


class Message(TypedDict, total=False):
    """One message a worker puts on its queue (probe/bench/worker.py's docstring tells when each is
    sent)."""

    kind: Required[Literal["start", "row", "devices", "fatal", "done"]]
    item: str  # start: what is measured next (the watchdog names it when it hangs)
    section: str  # start, row: p2p | local_copy | allreduce | coalescing | decode_step
    #                 | decode_ops
    pair: list[int]  # start of a P2P pair: [src, dst] in torch's numbering
    row: Row
    bus_ids: list[str | None]  # devices: each torch device's PCI bus id
    reason: str  # fatal
    rank: int  # fatal: the rank that gave up


class MessageQueue(Protocol):
    """The side of a multiprocessing queue a worker writes to."""

    def put(self, obj: Message, block: bool = ..., timeout: float | None = ...) -> None: ...


class MessageSource(Protocol):
    """The side of a multiprocessing queue the runner reads."""

    def get(self, block: bool = ..., timeout: float | None = ...) -> Message: ...

    def empty(self) -> bool: ...
