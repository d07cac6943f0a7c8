"""The typed view of a snapshot's `network` section (probe/network.py writes it): RDMA NICs,
interfaces, each GPU's PCIe relation to each NIC, the nearest NICs of a GPU, and GPUDirect RDMA
readiness.

Readers (show, the network rules' facts, recommend --nnodes, fleet, export nfd) ask this view, never
the raw dicts. A snapshot without the section (made before NICs were probed) gives `present` False
and None answers, which readers take as "not known", never as "no NIC".

Layer: snapshot (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# nvidia-smi's PCIe relations, nearest first (NCCL's PATH_PIX < PATH_PXB < PATH_PHB < PATH_SYS,
# graph.h).
LINK_ORDER = ("PIX", "PXB", "PHB", "NODE", "SYS")


def link_rank(link: str | None) -> int | None:
    """The position of a relation in LINK_ORDER (0 nearest), None when unknown."""
    return LINK_ORDER.index(link) if link in LINK_ORDER else None


@dataclass(frozen=True)
class RdmaNic:
    name: str
    pci_bus_id: str | None
    numa_node: int | None
    transport: str | None  # ib | roce | mixed | None
    active_ports: tuple[int | str, ...]
    rate_gbps: float | None  # the fastest active port
    netdevs: tuple[str, ...]
    ports: tuple[
        tuple[int | str, str | None], ...
    ] = ()  # every port probed: (number, state), ACTIVE or not

    @property
    def active(self) -> bool:
        return bool(self.active_ports)


@dataclass(frozen=True)
class Interface:
    name: str
    kind: str | None
    operstate: str | None
    physical: bool | None
    speed_mbps: int | None
    pci_bus_id: str | None


@dataclass(frozen=True)
class Nearest:
    """A GPU's nearest active RDMA NICs: every NIC at the closest relation (several share it on some
    boxes)."""

    gpu: int
    nics: tuple[str, ...]
    link: str | None


def _nic(entry: dict[str, Any]) -> RdmaNic:
    ports = [port for port in entry.get("ports") or [] if isinstance(port, dict)]
    active = [port for port in ports if port.get("state") == "ACTIVE"]
    rates = [
        port["rate_gbps"] for port in active if isinstance(port.get("rate_gbps"), (int, float))
    ]
    numbers = tuple(port["port"] for port in active if isinstance(port.get("port"), (int, str)))
    return RdmaNic(
        name=str(entry.get("name")),
        pci_bus_id=entry.get("pci_bus_id"),
        numa_node=entry.get("numa_node"),
        transport=entry.get("transport"),
        active_ports=numbers,
        rate_gbps=max(rates) if rates else None,
        netdevs=tuple(entry.get("netdevs") or ()),
        ports=tuple(
            (port["port"], port.get("state"))
            for port in ports
            if isinstance(port.get("port"), (int, str))
        ),
    )


class NetworkView:
    def __init__(self, section: object) -> None:
        self.section: dict[str, Any] = section if isinstance(section, dict) else {}

    @property
    def present(self) -> bool:
        """The probe looked at the NICs (a snapshot from before it did has no section)."""
        return bool(self.section)

    @property
    def rdma(self) -> list[RdmaNic] | None:
        """Every RDMA device, None when unknown ([] is a known "none")."""
        entries = self.section.get("rdma")
        return (
            [_nic(entry) for entry in entries if isinstance(entry, dict)]
            if isinstance(entries, list)
            else None
        )

    @property
    def active_rdma(self) -> list[RdmaNic] | None:
        nics = self.rdma
        return None if nics is None else [nic for nic in nics if nic.active]

    @property
    def interfaces(self) -> list[Interface] | None:
        entries = self.section.get("interfaces")
        if not isinstance(entries, list):
            return None
        return [
            Interface(
                name=str(e.get("name")),
                kind=e.get("type"),
                operstate=e.get("operstate"),
                physical=e.get("physical"),
                speed_mbps=e.get("speed_mbps"),
                pci_bus_id=e.get("pci_bus_id"),
            )
            for e in entries
            if isinstance(e, dict)
        ]

    @property
    def physical_interfaces(self) -> list[Interface] | None:
        """Interfaces backed by a PCI device that are up: where NCCL's bootstrap and socket
        transport can go."""
        interfaces = self.interfaces
        return (
            None
            if interfaces is None
            else [i for i in interfaces if i.physical and i.operstate == "up"]
        )

    def link(self, gpu: int, nic: str) -> str | None:
        for entry in self.section.get("gpu_nic") or []:
            if isinstance(entry, dict) and entry.get("gpu") == gpu and entry.get("nic") == nic:
                link = entry.get("link")
                return link if isinstance(link, str) else None
        return None

    def nearest(self, gpu: int) -> Nearest | None:
        """The GPU's nearest active RDMA NICs, None when there is no active NIC or any relation is
        unknown."""
        nics = self.active_rdma
        if not nics:
            return None
        links = {nic.name: self.link(gpu, nic.name) for nic in nics}
        ranks = {name: link_rank(link) for name, link in links.items()}
        if any(rank is None for rank in ranks.values()):
            return None
        best = min(rank for rank in ranks.values() if rank is not None)
        return Nearest(
            gpu, tuple(name for name, rank in ranks.items() if rank == best), LINK_ORDER[best]
        )

    @property
    def gpudirect(self) -> dict[str, object]:
        value = self.section.get("gpudirect")
        return value if isinstance(value, dict) else {}

    @property
    def gpudirect_ready(self) -> bool | None:
        ready = self.gpudirect.get("ready")
        return ready if isinstance(ready, bool) else None
