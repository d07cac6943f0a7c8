"""Collectives of a TP group that spans nodes (recommend --nnodes N, issue 41 item 4), priced over
the NICs.

SGLang runs such a group's allreduce on NCCL: its custom allreduce turns itself off when the group spans nodes
(custom_all_reduce_utils.py:459-464 in 0.5.23, :435 in 0.5.14; custom allreduce v2 only inside one NVLink clique,
custom_all_reduce_v2.py:589-590 in 0.5.23), FlashInfer's allreduce fusion refuses multi-node except Blackwell's
multi-node NVLink (flashinfer_comm_fusion.py:61-76 in 0.5.23, :55-71 in 0.5.14), and the PCIe IPC allreduce is built
on CUDA IPC within one host (pcie_ipc_ar.py:2) for 2, 4 or 8 GPUs (:77). So a cross-node step pays:
  in-node NCCL allreduce of the node's GPUs (the op tables) + (nodes - 1) x a measured 2-rank cross-host
  allreduce (costs.yaml `inter_node`) + the bytes over the node's NICs (2 (N - 1) / N of the message)
The NICs are the snapshot's active RDMA NICs (rate x count, topoctl/snapshot/network_view.py).

Layer: launch model and search (docs/architecture.md, "Layers").
"""

from __future__ import annotations

from dataclasses import dataclass

from topoctl.autoconf.data_files import load
from topoctl.snapshot.view import SnapshotLike, view_of


@dataclass(frozen=True)
class Fabric:
    """The nodes of a launch and what joins them: the bytes/s all of one node's NICs carry, and
    where that is from."""

    nodes: int
    node_bytes_per_s: float
    source: str


@dataclass(frozen=True)
class CrossNode:
    """What crossing the nodes adds to one in-node collective call, and the citation."""

    us: float
    source: str


def node_nics(snapshot: SnapshotLike) -> tuple[float, str] | None:
    """(bytes/s all of one node's active RDMA NICs carry, where from), None where the snapshot knows
    no NIC rate."""
    view = view_of(snapshot)
    if not view.data.get(
        "network"
    ):  # no NIC section: the network view is not even imported (start-up budget)
        return None
    nics = view.network.active_rdma or []
    rates = [nic.rate_gbps for nic in nics if nic.rate_gbps]
    if not rates:
        return None
    kinds = ", ".join(sorted({nic.transport or "?" for nic in nics}))
    return (
        sum(rates) * 1e9 / 8,
        f"{len(rates)} active RDMA NICs of the snapshot, {sum(rates):g} Gb/s in all ({kinds})",
    )


def fabric(nodes: int, nics: tuple[float, str] | None) -> Fabric | None:
    """`nodes` nodes joined by NICs like `nics` (node_nics); None for one node or no NIC known."""
    return Fabric(nodes, nics[0], nics[1]) if nodes > 1 and nics else None


def inter_node_latency() -> tuple[float, str]:
    row = load("costs.yaml")["inter_node"]
    return float(row["latency_us"]), str(row["source"])


def cross_node(size: float, net: Fabric, kind: str = "allreduce") -> CrossNode:
    """The added time of one `kind` call of `size` bytes a GPU across `net.nodes` nodes (kind
    allgather moves the message once, an allreduce twice: reduce-scatter then all-gather between the
    nodes)."""
    hop, hop_source = inter_node_latency()
    passes = 2.0 if kind == "allreduce" else 1.0
    moved = size * passes * (net.nodes - 1) / net.nodes
    wire = moved / net.node_bytes_per_s * 1e6
    return CrossNode(
        (net.nodes - 1) * hop + wire,
        f"{net.nodes - 1} cross-node hop(s) x {hop:g} us ({hop_source.split(';')[0]}) + "
        f"{moved / 1024:.1f} KiB over {net.source} ({wire:.2f} us)",
    )
