"""The network facts rules may name (`network.*`, `request.nnodes`): what the probed NICs mean for
NCCL between nodes, read through SnapshotView.network. A snapshot made before NICs were probed gives
UNKNOWN for every one.

The NCCL behaviour each fact stands for is cited in rules/knowledge/network.yaml (NCCL v2.30.7
source and docs).

Layer: knowledge (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Callable, Protocol, TypeVar, cast

if TYPE_CHECKING:
    from topoctl.snapshot.network_view import NetworkView
    from topoctl.snapshot.view import SnapshotView

# A network fact's value before register swaps UNKNOWN_VALUE for UNKNOWN: an int, str, bool or
# UNKNOWN_VALUE.
_Raw = object


class Context(Protocol):
    """What these facts read of rules.facts.Context (not imported: rules.facts imports this module)."""

    @property
    def view(self) -> SnapshotView: ...

    @property
    def request(self) -> Mapping[str, object]: ...


FactContext = TypeVar("FactContext", bound=Context)
FactValue = TypeVar("FactValue")

UNKNOWN_VALUE = object()  # replaced by rules.facts.UNKNOWN when registered (no import cycle)
NCCL_DEFAULT_GDR_LEVEL = "PXB"  # src/graph/paths.cc:511 (v2.30.7): netGdrLevel = ... PATH_PXB


def _network(context: Context) -> NetworkView | None:
    view = context.view.network
    return view if view.present else None


def _nearest_links(context: Context) -> list[str] | None:
    """Each GPU's nearest active NIC relation; None when not probed, no active NIC, or any relation
    unknown."""
    network = _network(context)
    if network is None or not network.active_rdma:
        return None
    nearest = [network.nearest(gpu["index"]) for gpu in context.view.indexed_gpus]
    if not nearest or any(entry is None for entry in nearest):
        return None
    return [entry.link for entry in nearest if entry is not None and entry.link is not None]


def _rdma_count(context: Context) -> _Raw:
    network = _network(context)
    nics = network.active_rdma if network is not None else None
    return UNKNOWN_VALUE if nics is None else len(nics)


def _count_nearest(links: tuple[str, ...]) -> Callable[[Context], _Raw]:
    def resolve(context: Context) -> _Raw:
        nearest = _nearest_links(context)
        return UNKNOWN_VALUE if nearest is None else sum(1 for link in nearest if link in links)

    return resolve


def _worst_nearest(context: Context) -> _Raw:
    from topoctl.snapshot.network_view import (
        LINK_ORDER,
    )  # a network fact read: context.view.network imported it

    nearest = _nearest_links(context)
    return UNKNOWN_VALUE if not nearest else max(nearest, key=LINK_ORDER.index)


def _peermem(context: Context) -> _Raw:
    network = _network(context)
    if network is None:
        return UNKNOWN_VALUE
    loaded = [network.gpudirect.get(key) for key in ("nvidia_peermem", "nv_peer_mem")]
    if True in loaded:
        return True
    return False if all(value is False for value in loaded) else UNKNOWN_VALUE


def _virtual_up(context: Context) -> _Raw:
    """Interfaces that are up and not a PCI device, other than lo and docker*: NCCL's default socket
    interface choice skips only those two (env.rst:53), so a Kubernetes node's cali*/flannel*/veth*
    are candidates."""
    network = _network(context)
    interfaces = network.interfaces if network is not None else None
    if interfaces is None:
        return UNKNOWN_VALUE
    return sum(
        1
        for i in interfaces
        if i.operstate == "up"
        and i.physical is False
        and i.kind != "loopback"
        and not i.name.startswith("docker")
    )


def _nnodes(context: Context) -> _Raw:
    value = (context.request or {}).get("nnodes")
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else 1


NETWORK_FACTS: dict[str, tuple[str, str, Callable[[Context], _Raw]]] = {
    "network.rdma_nics": (
        "int",
        "RDMA NICs with an active port (/sys/class/infiniband)",
        _rdma_count,
    ),
    "network.gpus_nearest_nic_sys": (
        "int",
        "GPUs whose nearest active RDMA NIC is SYS away (across NUMA nodes)",
        _count_nearest(("SYS",)),
    ),
    "network.gpus_beyond_gdr_level": (
        "int",
        "GPUs whose nearest active RDMA NIC is PHB or NODE away: beyond NCCL's "
        "default GPUDirect RDMA level PXB, not across NUMA nodes",
        _count_nearest(("PHB", "NODE")),
    ),
    "network.nearest_nic_worst": (
        "str",
        "the farthest of the GPUs' nearest-NIC relations: PIX | PXB | PHB | NODE | SYS",
        _worst_nearest,
    ),
    "network.peermem": (
        "bool",
        "a GPU peer-memory module is loaded (nvidia_peermem or nv_peer_mem)",
        _peermem,
    ),
    "network.virtual_interfaces_up": (
        "int",
        "interfaces up that are neither PCI devices nor lo/docker*",
        _virtual_up,
    ),
    "request.nnodes": ("int", "nodes the launch spans (request.nnodes; 1 when not given)", _nnodes),
}


def register(
    facts: dict[str, tuple[str, str, Callable[[FactContext], FactValue]]], unknown: FactValue
) -> None:
    """Add the network facts to rules.facts.FACTS, with that module's UNKNOWN."""
    for name, (kind, text, resolve) in NETWORK_FACTS.items():
        facts[name] = (kind, text, _with_unknown(resolve, unknown))


def _with_unknown(
    resolve: Callable[[Context], _Raw], unknown: FactValue
) -> Callable[[Context], FactValue]:
    def wrapped(context: Context) -> FactValue:
        value = resolve(context)
        return unknown if value is UNKNOWN_VALUE else cast(FactValue, value)

    return wrapped
